"""Review a run's uncertain verdicts and turn a person's judgments into gold.

`uncertain_verdicts(results)` lists every fact verdict marked `uncertain` (calibrated
probability near 0.5) with the units that matter. `review_file(results)` writes them, per
summary, as an editable YAML file (`compaction-eval/review@1`): every fact expected in that
summary is listed, the uncertain ones with `judgment: null` to fill in; the others carry the
scorer's verdict as `judgment` **marked `from: scorer`**, to be checked (a person who changes
one sets `from: human`). `apply_review(review, gold_file)` reads it back and appends the
summaries to a gold file in the `labels/gold` format (`split: tune`: a user's own data is
for fitting), refusing a file with an uncertain fact left unjudged. `refit(gold_dir, out)`
refits the calibration into a file the user names, never the packaged one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.yamlfile import read_yaml_file

REVIEW_SCHEMA = "compaction-eval/review@1"
_WORDS = {"kept": True, "lost": False}


def uncertain_verdicts(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every uncertain fact verdict of a run: sample, fact, units, verdict, probability."""
    labels = _labels(results)
    out = []
    for s in results.get("samples", []):
        for f in s.get("facts", []):
            if f.get("uncertain"):
                out.append({"trace": s["trace"], "point": s["point"], "prompt": s["prompt"], "epoch": s.get("epoch", 1),
                            "fact": f["id"], "category": f["category"], **_fact_text(labels, s["trace"], f["id"]),
                            "verdict": "kept" if f["kept"] else "lost",
                            "probability": f.get("probability"), "units": [u for u in (f.get("evidence"), f.get("note")) if u]})
    return out


def format_uncertain(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no uncertain verdicts in this run"
    lines = [f"{len(rows)} uncertain verdicts (probability near 0.5):"]
    for r in rows:
        p = "-" if r["probability"] is None else f"{r['probability']:.2f}"
        lines.append(f"  {r['trace']}@{r['point']} {r['prompt']}: {r['fact']} ({r['category']}) {r['verdict']} p={p}")
        if r.get("text"):
            lines.append(f"      fact: {r['text'][:200]}")
            lines.append(f"      keys: {', '.join(r['keys'])}")
        for u in r["units"]:
            lines.append(f"      | {u[:160]}")
    return "\n".join(lines)


def _labels(results: dict[str, Any]) -> dict[str, Any]:
    """Each trace id -> its Labels, from the run's recorded labels (selectors included)."""
    from compaction_eval.corpus.load import run_labels

    return run_labels(results, traces={s["trace"] for s in results.get("samples", [])})


def _labels_file(labels: dict[str, Any], trace: str) -> str | None:
    path = getattr(labels.get(trace), "path", None)
    return str(Path(path).resolve()) if path is not None else None


def _fact_text(labels: dict[str, Any], trace: str, fact: str) -> dict[str, Any]:
    """The labelled text and keys of a fact (empty when its labels were not found): a
    reviewer judges a summary against what the fact says, not against its id."""
    lab = labels.get(trace)
    found = next((f for f in lab.facts if f.id == fact), None) if lab is not None else None
    return {"text": found.text, "keys": list(found.keys)} if found is not None else {}


def review_file(results: dict[str, Any]) -> dict[str, Any]:
    """The editable review document: one entry per sample with an uncertain verdict."""
    labels = _labels(results)
    entries = []
    for s in results.get("samples", []):
        if not any(f.get("uncertain") for f in s.get("facts", [])):
            continue
        facts = []
        for f in s["facts"]:
            row = {"id": f["id"], "category": f["category"], **_fact_text(labels, s["trace"], f["id"]),
                   "scorer": "kept" if f["kept"] else "lost",
                   "probability": f.get("probability"), "units": [u for u in (f.get("evidence"), f.get("note")) if u]}
            if f.get("uncertain"):
                row |= {"uncertain": True, "judgment": None, "reason": ""}
            else:
                row |= {"judgment": row["scorer"], "from": "scorer", "reason": "scorer verdict, not uncertain: check it"}
            facts.append(row)
        # A gold summary is judged on every fact expected at its point; the run did not score
        # the facts whose sources all lie in the kept tail (they reach the agent verbatim), so
        # they are asked here, judged on the summary text alone.
        lab = labels.get(s["trace"])
        scored = {f["id"] for f in s["facts"]}
        for fact in lab.expected(s["point"]) if lab is not None else []:
            if fact.id not in scored:
                facts.append({"id": fact.id, "category": fact.category, "text": fact.text, "keys": list(fact.keys),
                              "scorer": "not scored", "probability": None,
                              "units": ["its sources are in the kept tail: the run did not score it; judge the summary text alone"],
                              "uncertain": True, "judgment": None, "reason": ""})
        entries.append({
            "id": f"review-{s['prompt']}-{s['trace']}-{s['point']}-e{s.get('epoch', 1)}",
            "trace": s["trace"], "labels": _labels_file(labels, s["trace"]), "point": s["point"], "prompt": s["prompt"],
            "style": "extractive" if results.get("offline_stand_in") else "thorough",
            "text": s["summary"], "facts": facts,
            "avoid": {a["id"]: ["present" if a["present"] else "absent", "scorer verdict: check it"] for a in s.get("avoid", [])},
        })
    return {"schema": REVIEW_SCHEMA, "run": results.get("run"),
            "how": "fill every `judgment: null` with kept or lost and a one-line reason; change any other judgment you "
                   "disagree with (and set from: human); then run: compaction-eval review RUN --apply THIS_FILE --gold FILE",
            "summaries": entries}


def write_review(results: dict[str, Any], path: Path, *, force: bool = False) -> int:
    import os
    import tempfile

    from compaction_eval.contracts.runfiles import check_overwrite

    check_overwrite(path, force=force, flag="review file")  # it may hold a person's judgments
    doc = review_file(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False, allow_unicode=True, width=120)
    os.replace(tmp, path)
    return len(doc["summaries"])


def _gold_targets(gold: Path, traces: list[str], where: str) -> dict[str, Path]:
    """The gold file of each trace. `gold` is one file (a gold file holds one trace) or a
    folder (labels/gold layout): there each trace goes to the file that already holds it,
    else to `<trace>.yaml`, so a review that spans several traces lands in one step."""
    if gold.suffix in (".yaml", ".yml") and not gold.is_dir():
        existing = read_yaml_file(gold) if gold.is_file() else None
        named = set(traces) | ({existing.get("trace")} if isinstance(existing, dict) else set())
        if len(named) != 1:
            raise ContractError([Problem(where, "summaries", f"a gold file holds one trace; the review and {gold} name {sorted(map(str, named))}: "
                                         f"name a folder (--gold {gold.parent}/) to write one gold file per trace")])
        return {traces[0]: gold}
    held: dict[str, Path] = {}
    for f in sorted(gold.glob("*.yaml")) if gold.is_dir() else []:
        try:
            data = read_yaml_file(f)
        except ContractError:
            continue
        if isinstance(data, dict) and isinstance(data.get("trace"), str):
            held.setdefault(data["trace"], f)
    return {t: held.get(t) or gold / f"{''.join(ch if ch.isalnum() or ch in '-_.' else '_' for ch in t)}.yaml" for t in traces}


def apply_review(review_path: Path, gold_path: Path) -> int:
    """Append the reviewed summaries to the gold files (created if missing) in the gold
    format; returns the number of summaries added. `gold_path` is a file (a review of one
    trace) or a folder (one gold file per trace). Checks everything before writing anything."""
    from compaction_eval.validation.matchers import SCHEMA

    where = str(review_path)
    doc = read_yaml_file(review_path)  # the one YAML reader: no aliases (a 430-byte bomb), tags or duplicate keys
    if not isinstance(doc, dict) or doc.get("schema") != REVIEW_SCHEMA:
        raise ContractError([Problem(where, "schema", f"expected schema: {REVIEW_SCHEMA}")])
    problems: list[Problem] = []
    entries = doc.get("summaries") or []
    if not entries:
        raise ContractError([Problem(where, "summaries", "nothing to apply")])
    traces = list(dict.fromkeys(str(e.get("trace")) for e in entries))
    targets = _gold_targets(gold_path, traces, where)
    by_trace: dict[str, list[dict[str, Any]]] = {t: [] for t in traces}
    first_of: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, e in enumerate(entries):
        facts = {}
        for j, f in enumerate(e.get("facts") or []):
            j_word, reason = f.get("judgment"), str(f.get("reason") or "").strip()
            if j_word not in _WORDS:
                problems.append(Problem(where, f"summaries[{i}].facts[{j}] ({f.get('id')})", f"judgment must be kept or lost, got {j_word!r}"))
                continue
            if f.get("uncertain") and not reason:
                problems.append(Problem(where, f"summaries[{i}].facts[{j}] ({f.get('id')})", "a one-line reason is required"))
            facts[str(f["id"])] = [j_word, reason or "judged in review"]
        trace = str(e.get("trace"))
        first_of.setdefault(trace, (i, e))
        by_trace[trace].append({"id": str(e["id"]), "point": e["point"], "style": e.get("style", "thorough"), "split": "tune",
                                "text": e["text"], "facts": facts, "avoid": e.get("avoid") or {}, "irrelevant": []})
    if problems:
        raise ContractError(problems)
    docs: dict[Path, dict[str, Any]] = {}
    for trace, new in by_trace.items():
        target = targets[trace]
        existing = read_yaml_file(target) if target.is_file() else None
        if existing is None:
            i, first = first_of[trace]
            if not first.get("labels"):
                raise ContractError([Problem(where, f"summaries[{i}].labels", f"the labels file of trace {trace!r} is unknown: fill it in")])
            existing = {"schema": SCHEMA, "trace": trace, "labels": first["labels"], "judged_by": "human (review)",
                        "split": "tune", "summaries": []}
        ids = {s["id"] for s in existing.get("summaries") or []}
        dup = [s["id"] for s in new if s["id"] in ids]
        if dup:
            raise ContractError([Problem(str(target), "summaries", f"already holds {dup}")])
        existing["summaries"] = list(existing.get("summaries") or []) + new
        docs[target] = existing
    _write_gold_files(docs)
    return sum(len(new) for new in by_trace.values())


def _write_gold_files(docs: dict[Path, dict[str, Any]]) -> None:
    """Write each gold file to a temp file beside it and check that it loads as gold, all of
    them, then replace: a review that fails anywhere leaves no gold file changed."""
    import os
    import tempfile

    from compaction_eval.validation.matchers import load_gold_file

    staged: list[tuple[str, Path]] = []
    try:
        for target, doc in docs.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".yaml", dir=target.parent)
            staged.append((tmp, target))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                yaml.safe_dump(doc, fh, sort_keys=False, allow_unicode=True, width=120)
            load_gold_file(Path(tmp))
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise


def refit(gold_dir: Path, out: Path) -> dict[str, Any]:
    """Refit the calibration on `gold_dir`'s tune part into `out` (never the packaged file)."""
    from compaction_eval.recall.matching.calibrated import MODEL_PATH
    from compaction_eval.validation import refit as r
    from compaction_eval.validation.matchers import load_gold

    if out.resolve() == MODEL_PATH.resolve():
        raise ContractError([Problem(str(out), "--refit", "refusing to overwrite the packaged calibration: name another file")])
    cal = r.fit(r.rows(load_gold(gold_dir)))
    out.parent.mkdir(parents=True, exist_ok=True)
    r.write(cal, out)
    return cal.to_json()["trained_on"]
