"""Matcher validity: agreement of the matchers with human judgments (labels/gold/).

The gold set (format in labels/gold/README.md) holds summaries of labelled (trace, point)
samples with a human verdict on every expected fact (kept or not, by the rule of DESIGN.md 4),
on every avoid item in the history (present or not) and on summary units (relevant or not).
`validate(gold_dir)` runs each matcher over it and measures agreement with scikit-learn:

- `literal`: every key of some key set occurs (`literal_match`), for every category;
- `semantic`: the offline meaning matcher (`semantic_match`), for every category;
- `default`: the combined scorer `score_summary` (literal for exact categories, semantic
  for meaning categories): what `compaction-eval score` and the recall suite report;
- `judge`: with `--model`, the judge tier as the scorer gives it (the LLM judge decides every
  category, nothing overrules it); `judge_checked`: the same answers with the quote and
  contradiction checks applied as overrides (the judge@2 scorer before the tiers), so the
  choice not to apply them stays measured;
- `second`: a second reader's judgments, where a gold summary has them (`second:`): the
  ceiling every matcher and judge figure is read against, on the same verdicts.

Part of the gold set is held out (gold files with `split: heldout`): the semantic threshold
per category is tuned on the rest and its agreement reported on both, so a default chosen
from this data is also seen on data it was not chosen on. Control items
(labels/gold/controls.yaml) feed a scripted judge deliberately wrong verdicts and quotes;
each must come out not kept.
"""

from __future__ import annotations

import asyncio
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from compaction_eval.contracts.labels import (
    CATEGORIES,
    EXACT_CATEGORIES,
    Fact,
    Labels,
    load_labels,
)
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import Trace
from compaction_eval.contracts.yamlfile import read_yaml_file
from compaction_eval.recall.matching.literal import SummaryText, literal_match, match_key_sets
from compaction_eval.recall.matching.semantic import (
    CATEGORY_THRESHOLDS,
    KEEP_THRESHOLD,
    SemanticIndex,
    semantic_match,
)
from compaction_eval.recall.scoring import relevant_unit_flags, score_summary

SCHEMA = "compaction-eval/gold@1"
CONTROLS_SCHEMA = "compaction-eval/gold-controls@1"
RESULT_SCHEMA = "compaction-eval/matcher-validation@1"
STYLES = ("thorough", "terse", "drifted", "extractive", "prose")
SPLITS = ("tune", "heldout", "fresh", "round2", "round3", "round4", "round5", "round6", "test")
"""tune: used to choose thresholds and to develop the matchers; heldout, fresh, round2-round5: old
held-out and test parts (measured once out of sample, then used to tune, so part of the tune
part now); test: summaries written after the matcher was frozen, by someone who has not read
the matcher code."""
PARTS = ("tune", "test")


def judgments_by_split(gold: Sequence[GoldFile]) -> dict[str, int]:
    """Fact judgments per split (every split of SPLITS, zero when absent)."""
    return {sp: sum(len(s.facts) for g in gold for s in g.summaries if s.split == sp) for sp in SPLITS}


def part_of(split: str) -> str:
    """The measurement part of a split: only `test` is out of sample."""
    return "test" if split == "test" else "tune"
THRESHOLD_GRID = tuple(round(x, 2) for x in np.arange(0.10, 0.46, 0.02))
_FACT_VERDICTS = {"kept": True, "lost": False}
_AVOID_VERDICTS = {"present": True, "absent": False}


# ---------------------------------------------------------------------------- the gold set


@dataclass
class GoldSummary:
    """One judged summary.

    Args:
        id: unique in its gold file.
        point: the compaction point it summarises (`messages[0:point]`).
        style: thorough | terse | drifted | extractive.
        text: the summary.
        facts: fact id -> (kept, one-line reason), for every fact expected at `point`.
        avoid: avoid id -> (present, reason), for every avoid item whose source is before `point`.
        irrelevant: substrings naming the units judged not relevant (every other unit was
            judged relevant).
        split: tune | heldout | fresh (default: the gold file's split).
        second: a second reader's judgments (fact id -> (kept, reason)) made without seeing
            the first; some or all of the expected facts. None when nobody read it twice.
        second_by: who the second reader was.
    """

    id: str
    point: int
    style: str
    text: str
    facts: dict[str, tuple[bool, str]]
    avoid: dict[str, tuple[bool, str]]
    irrelevant: list[str]
    split: str = "tune"
    second: dict[str, tuple[bool, str]] | None = None
    second_by: str | None = None


@dataclass
class GoldFile:
    """The judgments on one trace's summaries.

    `source` is the trace's source kind (synthetic, mini-swe-agent, claude-code,
    gemini-cli, ...): the gold file's optional `source` field, else `source_kind`'s guess.
    """

    trace: str
    split: str
    labels: Labels
    summaries: list[GoldSummary]
    path: Path
    source: str = "unknown"


def source_kind(trace: str, gold_path: Path) -> str:
    """The source kind of `trace` when its gold file does not say: `synthetic` for the
    generator's `synth-*` traces, else the folder of `fixtures/real/<kind>/` (the shipped real
    corpus, found above the gold file) holding the trace, else `unknown`."""
    if trace.startswith("synth-"):
        return "synthetic"
    for parent in gold_path.resolve().parents:
        real = parent / "fixtures" / "real"
        if real.is_dir():
            for shipped in real.glob(f"*/{trace}.json.gz"):
                return shipped.parent.name
            break
    return "unknown"


def _resolve(base: Path, rel: str) -> Path | None:
    """`rel` relative to `base` or to one of its ancestors (gold files name labels by their
    path in the repository, e.g. labels/real/x.yaml)."""
    for parent in [base, *base.parents]:
        if (parent / rel).is_file():
            return parent / rel
    return None


def load_gold_file(path: Path) -> GoldFile:
    """Read and check one gold file: every expected fact and every applicable avoid item
    judged, nothing else; every `irrelevant` substring names a unit."""
    problems: list[Problem] = []

    def bad(place: str, msg: str) -> None:
        problems.append(Problem(str(path), place, msg))

    data = read_yaml_file(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"expected schema: {SCHEMA}")])
    labels_path = _resolve(path.parent, str(data.get("labels", "")))
    if labels_path is None:
        raise ContractError([Problem(str(path), "labels", f"labels file {data.get('labels')!r} not found")])
    labels = load_labels(labels_path)
    if labels.trace != data.get("trace"):
        bad("trace", f"{data.get('trace')!r} but the labels are for {labels.trace!r}")
    split = data.get("split", "tune")
    if split not in SPLITS:
        bad("split", f"{split!r} is not one of {SPLITS}")
    summaries: list[GoldSummary] = []
    seen: set[str] = set()
    for i, s in enumerate(data.get("summaries") or []):
        place = f"summaries[{i}]"
        sid = str(s.get("id", ""))
        if not sid or sid in seen:
            bad(place, f"missing or duplicate id {sid!r}")
        seen.add(sid)
        point = s.get("point")
        if point not in labels.points:
            bad(place, f"point {point!r} is not a labelled point {labels.points}")
            continue
        if s.get("style") not in STYLES:
            bad(place, f"style {s.get('style')!r} is not one of {STYLES}")
        facts = _verdicts(s.get("facts"), _FACT_VERDICTS, f"{place}.facts", bad)
        avoid = _verdicts(s.get("avoid"), _AVOID_VERDICTS, f"{place}.avoid", bad)
        expected = {f.id for f in labels.expected(point)}
        applicable = {a.id for a in labels.avoid if any(x < point for x in a.source)}
        if set(facts) != expected:
            bad(f"{place}.facts", f"judged {sorted(set(facts) - expected)} not expected; "
                f"expected but not judged {sorted(expected - set(facts))}")
        if set(avoid) != applicable:
            bad(f"{place}.avoid", f"judged {sorted(set(avoid) - applicable)} not applicable; "
                f"applicable but not judged {sorted(applicable - set(avoid))}")
        text = str(s.get("text", ""))
        irrelevant = [str(x) for x in s.get("irrelevant") or []]
        units = SummaryText(text).units
        for sub in irrelevant:
            if sum(sub in u for u in units) != 1:
                bad(f"{place}.irrelevant", f"{sub!r} must name exactly one unit")
        ssplit_s = s.get("split", split)
        if ssplit_s not in SPLITS:
            bad(f"{place}.split", f"{ssplit_s!r} is not one of {SPLITS}")
        second, second_by = _second_reader(s.get("second"), expected, data.get("judged_by"), f"{place}.second", bad)
        summaries.append(GoldSummary(sid, point, s.get("style"), text, facts, avoid, irrelevant, ssplit_s, second, second_by))
    source = data.get("source")
    if source is not None and not (isinstance(source, str) and source.strip()):
        bad("source", f"expected a source kind such as mini-swe-agent, got {source!r}")
    if problems:
        raise ContractError(problems)
    return GoldFile(labels.trace, split, labels, summaries, path,
                    source.strip() if isinstance(source, str) else source_kind(labels.trace, path))


def _second_reader(raw: Any, expected: set[str], first_by: Any, place: str, bad) -> tuple[dict[str, tuple[bool, str]] | None, str | None]:
    """A summary's optional `second:` judgment: `{judged_by: WHO, facts: {id: [kept | lost,
    reason]}}`, by a reader who did not see the first judgments; it may judge some of the
    expected facts, and nothing else."""
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        bad(place, f"expected {{judged_by: ..., facts: {{id: [kept | lost, reason]}}}}, got {raw!r}")
        return None, None
    who = raw.get("judged_by")
    if not (isinstance(who, str) and who.strip()):
        bad(f"{place}.judged_by", f"name the second reader, got {who!r}")
    elif isinstance(first_by, str) and who.strip() == first_by.strip() and first_by.strip() not in ("human", ""):
        bad(f"{place}.judged_by", f"{who!r} is also the first reader: a second reading needs another reader")
    if not isinstance(raw.get("facts"), dict) or not raw["facts"]:
        bad(f"{place}.facts", "expected at least one judged fact")
        return None, None
    facts = _verdicts(raw["facts"], _FACT_VERDICTS, f"{place}.facts", bad)
    if set(facts) - expected:
        bad(f"{place}.facts", f"judged {sorted(set(facts) - expected)} not expected at this point")
    return facts, str(who).strip() if isinstance(who, str) else None


def _verdicts(raw: Any, words: dict[str, bool], place: str, bad) -> dict[str, tuple[bool, str]]:
    out: dict[str, tuple[bool, str]] = {}
    for key, value in (raw or {}).items():
        if not (isinstance(value, list) and len(value) == 2 and value[0] in words and str(value[1]).strip()):
            bad(f"{place}.{key}", f"expected [{' | '.join(words)}, reason], got {value!r}")
            continue
        out[str(key)] = (words[value[0]], str(value[1]))
    return out


def load_gold(gold_dir: Path | str) -> list[GoldFile]:
    """Every `*.yaml` gold file of `gold_dir` (controls.yaml excluded), checked; a
    ContractError lists every problem."""
    files, problems = [], []
    for path in sorted(Path(gold_dir).glob("*.yaml")):
        if path.name == "controls.yaml":
            continue
        try:
            files.append(load_gold_file(path))
        except ContractError as exc:
            problems += exc.problems
    if problems:
        raise ContractError(problems)
    if not files:
        raise ContractError([Problem(str(gold_dir), "", "no gold files found")])
    return files


# ---------------------------------------------------------------------------- running the matchers


@dataclass
class Item:
    """One judged item and what each matcher said about it.

    Args:
        kind: fact | avoid | unit.
        category: the fact's category; the avoid reason; "unit".
        gold: the human verdict (kept / present / relevant).
        predicted: matcher name -> its verdict.
        similarity: for facts, the best semantic similarity seen (for threshold tuning).
    """

    kind: str
    trace: str
    summary: str
    style: str
    split: str
    id: str
    category: str
    gold: bool
    reason: str
    predicted: dict[str, bool] = field(default_factory=dict)
    evidence: dict[str, str | None] = field(default_factory=dict)
    source: str = "unknown"


def _stub_trace(trace_id: str) -> Trace:
    """Verdicts do not read the history (it only feeds distortion reports): a clean clone
    without ../shared/data scores the real traces' gold summaries the same way."""
    return Trace(id=trace_id, messages=[])


def collect_items(gold: Sequence[GoldFile], judged: dict[tuple[str, str], dict] | None = None) -> list[Item]:
    """Run literal, semantic and the default scorer (and the judge verdicts in `judged`,
    keyed by (trace, summary id): `judge` as the judge tier scores them, `judge_checked`
    with the quote checks applied) over every gold summary; a second reader's judgment is
    `second`."""
    items: list[Item] = []
    for gf in gold:
        trace = _stub_trace(gf.trace)
        for s in gf.summaries:
            facts = gf.labels.expected(s.point)
            text = SummaryText(s.text)
            index = SemanticIndex(text, [f.text for f in facts])
            score = score_summary(s.text, gf.labels, trace, s.point)
            verdicts = {v.id: v for v in score.facts}
            jv = (judged or {}).get((gf.trace, s.id))
            jscore = score_summary(s.text, gf.labels, trace, s.point, judged=jv) if jv is not None else None
            jverdicts = {v.id: v for v in jscore.facts} if jscore else {}
            for row, fact in enumerate(facts):
                kept, reason = s.facts[fact.id]
                item = Item("fact", gf.trace, s.id, s.style, s.split, fact.id, fact.category, kept, reason,
                            source=gf.source)
                lit = literal_match(fact, text)
                item.predicted["literal"], item.evidence["literal"] = lit.kept, lit.evidence
                # the key-presence-only reference: all keys of some key set present = kept
                item.predicted["keys"] = match_key_sets(text, fact.key_sets) is not None
                item.predicted["semantic"] = _semantic_at(fact, row, index, None)
                item.predicted["default"] = verdicts[fact.id].kept
                item.evidence["default"] = verdicts[fact.id].note or verdicts[fact.id].evidence
                # the best candidate passing every check but the similarity bar: the fact is
                # kept at threshold t exactly when its similarity is at least t
                best = semantic_match(fact, row, index, threshold=0.0)
                for t in THRESHOLD_GRID:
                    item.predicted[f"semantic@{t:.2f}"] = best.kept and best.similarity >= t
                if jv is not None:
                    item.predicted["judge"] = jverdicts[fact.id].kept
                    item.evidence["judge"] = jverdicts[fact.id].note
                    item.predicted["judge_checked"] = jv[fact.id].checked_kept if fact.id in jv else False
                if s.second is not None and fact.id in s.second:
                    item.predicted["second"], item.evidence["second"] = s.second[fact.id]
                items.append(item)
            for a in score.avoid:
                present, reason = s.avoid[a.id]
                item = Item("avoid", gf.trace, s.id, s.style, s.split, a.id, a.reason, present, reason,
                            source=gf.source)
                item.predicted["default"], item.evidence["default"] = a.present, a.evidence
                items.append(item)
            flags = relevant_unit_flags(text, index, facts)
            for u, (unit, flag) in enumerate(zip(text.units, flags, strict=True)):
                relevant = not any(sub in unit for sub in s.irrelevant)
                item = Item("unit", gf.trace, s.id, s.style, s.split, f"unit-{u}", "unit", relevant, unit[:80],
                            source=gf.source)
                item.predicted["default"] = flag
                items.append(item)
    return items


def _semantic_at(fact: Fact, row: int, index: SemanticIndex, threshold: float | None) -> bool:
    return semantic_match(fact, row, index, threshold=threshold).kept


# ---------------------------------------------------------------------------- agreement


def agreement(gold: Sequence[bool], predicted: Sequence[bool]) -> dict[str, Any]:
    """Accuracy, precision, recall, F1 (positive = kept / present / relevant) and Cohen's κ.

    κ is None when it is undefined (both raters constant); precision, recall and F1 are
    None when they divide by zero (no positive prediction / no positive gold item).
    """
    from sklearn import config_context
    from sklearn.metrics import (
        accuracy_score,
        cohen_kappa_score,
        f1_score,
        precision_score,
        recall_score,
    )

    y, p = [bool(x) for x in gold], [bool(x) for x in predicted]
    n = len(y)
    out: dict[str, Any] = {"n": n, "gold_positive": sum(y), "predicted_positive": sum(p)}
    if not n:
        return out | {"accuracy": None, "precision": None, "recall": None, "f1": None, "kappa": None}
    # inputs are plain bool lists: skip scikit-learn's per-call validation (most of its cost)
    with warnings.catch_warnings(), config_context(skip_parameter_validation=True):
        warnings.simplefilter("ignore")
        kappa = float(cohen_kappa_score(y, p)) if len(set(y) | set(p)) > 1 else None
        out["accuracy"] = round(float(accuracy_score(y, p)), 4)
        out["precision"] = round(float(precision_score(y, p, zero_division=0)), 4) if any(p) else None
        out["recall"] = round(float(recall_score(y, p, zero_division=0)), 4) if any(y) else None
        out["f1"] = round(float(f1_score(y, p, zero_division=0)), 4) if any(p) or any(y) else None
    if kappa is not None and math.isnan(kappa):
        kappa = None
    out["kappa"] = round(kappa, 4) if kappa is not None else None
    return out


def kappa(gold: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    """Cohen's κ of two boolean raters (scikit-learn's `cohen_kappa_score`); None when
    undefined (no items, or both raters constant)."""
    from sklearn import config_context
    from sklearn.metrics import cohen_kappa_score

    y, p = [bool(x) for x in gold], [bool(x) for x in predicted]
    if not y or len(set(y) | set(p)) < 2:
        return None
    with warnings.catch_warnings(), config_context(skip_parameter_validation=True):
        warnings.simplefilter("ignore")
        k = float(cohen_kappa_score(y, p))
    return None if math.isnan(k) else k


def _table(items: Sequence[Item], matcher: str) -> dict[str, Any]:
    """Agreement of `matcher` on `items`: overall, per category, on each split."""
    have = [i for i in items if matcher in i.predicted]

    def agree(sel: Sequence[Item]) -> dict[str, Any]:
        return agreement([i.gold for i in sel], [i.predicted[matcher] for i in sel])

    cats = [c for c in CATEGORIES if any(i.category == c for i in have)]
    cats += sorted({i.category for i in have} - set(cats))
    return {
        "overall": agree(have),
        "by_category": {c: agree([i for i in have if i.category == c]) for c in cats},
        "by_split": {s: agree([i for i in have if i.split == s]) for s in SPLITS}
        | {"not_tune": agree([i for i in have if i.split != "tune"])},
        "heldout_by_category": {c: agree([i for i in have if i.category == c and i.split != "tune"]) for c in cats},
        "by_style": {s: agree([i for i in have if i.style == s]) for s in STYLES if any(i.style == s for i in have)},
    }


def tune_thresholds(items: Sequence[Item]) -> dict[str, Any]:
    """Per meaning category, the semantic threshold with the best κ on the tune split (ties:
    the one closest to the current default), and its κ on the held-out split next to the
    default's. Chosen on tune only, so the held-out figure is an honest estimate."""
    out: dict[str, Any] = {}
    facts = [i for i in items if i.kind == "fact" and i.category not in EXACT_CATEGORIES]
    for cat in [c for c in CATEGORIES if c not in EXACT_CATEGORIES]:
        tune = [i for i in facts if i.category == cat and i.split == "tune"]
        held = [i for i in facts if i.category == cat and i.split != "tune"]
        if not tune:
            continue
        scores = {t: kappa([i.gold for i in tune], [i.predicted[f"semantic@{t:.2f}"] for i in tune]) or 0.0
                  for t in THRESHOLD_GRID}
        default = CATEGORY_THRESHOLDS.get(cat, KEEP_THRESHOLD)
        best = max(THRESHOLD_GRID, key=lambda t: (round(scores[t], 4), -abs(t - default)))
        default_key = f"semantic@{min(THRESHOLD_GRID, key=lambda t: abs(t - default)):.2f}"
        out[cat] = {
            "default_threshold": default,
            "best_threshold_on_tune": best,
            "tune_kappa_default": agreement([i.gold for i in tune], [i.predicted[default_key] for i in tune])["kappa"],
            "tune_kappa_best": round(scores[best], 4),
            "heldout_kappa_default": agreement([i.gold for i in held], [i.predicted[default_key] for i in held])["kappa"],
            "heldout_kappa_best": agreement([i.gold for i in held], [i.predicted[f"semantic@{best:.2f}"] for i in held])["kappa"],
            "tune_n": len(tune),
            "heldout_n": len(held),
        }
    return out


def disagreements(items: Sequence[Item], matcher: str) -> list[dict[str, Any]]:
    """Every item where `matcher` and the human differ, with the human's reason."""
    return [
        {"kind": i.kind, "trace": i.trace, "summary": i.summary, "style": i.style, "split": i.split, "id": i.id,
         "category": i.category, "gold": i.gold, "predicted": i.predicted[matcher], "reason": i.reason,
         "matcher_note": i.evidence.get(matcher)}
        for i in items if matcher in i.predicted and i.predicted[matcher] != i.gold
    ]


# ---------------------------------------------------------------------------- judge and controls


def _model(model: Any) -> Any:
    from inspect_ai.model import get_model

    # not memoized: inspect keeps one client per model name, bound to the endpoint (base URL,
    # key) of the environment it was first made in; a command reads its environment afresh
    from compaction_eval.compaction.session import provider_args

    return get_model(model, memoize=False, **provider_args(model)) if isinstance(model, str) else model


def judge_gold(gold: Sequence[GoldFile], model: Any) -> dict[tuple[str, str], dict]:
    """The judge's verdicts (its checks recorded) on every fact the gold judged: one generate
    call per gold summary, listing its facts."""
    from compaction_eval.contracts.settings import DEFAULT_JUDGE_CONNECTIONS, is_stand_in
    from compaction_eval.recall.matching.judge import JudgeOutputError, judge_facts, unreadable

    m = _model(model)
    # a scripted stand-in answers in call order: one request at a time keeps that order
    gate = asyncio.Semaphore(1 if is_stand_in(m) else DEFAULT_JUDGE_CONNECTIONS)

    async def one(gf: GoldFile, s: GoldSummary) -> tuple[tuple[str, str], dict]:
        facts = [f for f in gf.labels.expected(s.point) if f.id in s.facts]
        async with gate:
            try:
                return (gf.trace, s.id), await judge_facts(m, s.text, facts)
            except JudgeOutputError as exc:
                # an unreadable answer keeps nothing (and counts against the judge's kappa)
                return (gf.trace, s.id), unreadable(facts, exc)

    async def run() -> dict[tuple[str, str], dict]:
        return dict(await asyncio.gather(*(one(gf, s) for gf in gold for s in gf.summaries)))

    return asyncio.run(run())


@dataclass
class Control:
    """A deliberately wrong judge answer that must not keep its fact.

    Args:
        id: unique in controls.yaml.
        kind: what is wrong (invented_quote | quote_from_fact | negated_quote | no_quote | ...).
        summary: the summary shown to the judge.
        fact: the fact judged.
        answer: the scripted judge answer (raw text, as a model would return it).
        expect_kept: what the scorer must conclude (false for every wrong answer).
    """

    id: str
    kind: str
    summary: str
    fact: Fact
    answer: str
    expect_kept: bool


def load_controls(path: Path) -> list[Control]:
    data = read_yaml_file(path)
    if not isinstance(data, dict) or data.get("schema") != CONTROLS_SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"expected schema: {CONTROLS_SCHEMA}")])
    out = []
    for c in data.get("controls") or []:
        f = c["fact"]
        fact = Fact(id=f["id"], category=f["category"], text=f["text"], keys=tuple(f.get("keys") or ()),
                    source=(0,))
        answer = c["answer"] if isinstance(c["answer"], str) else json.dumps(c["answer"])
        out.append(Control(c["id"], c["kind"], c["summary"], fact, answer, bool(c.get("expect_kept", False))))
    return out


def scripted_model(answers: Sequence[str]) -> Any:
    """An inspect mockllm model that returns `answers` in order (usage set: mockllm without
    usage counts tokens with tiktoken, which needs a download)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outputs = []
    for a in answers:
        out = ModelOutput.from_content(model="mockllm/model", content=a)
        out.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
        outputs.append(out)
    return get_model("mockllm/model", custom_outputs=outputs)


def run_controls(controls: Sequence[Control]) -> dict[str, Any]:
    """Feed each control's wrong answer to the judge through a scripted model: each must be
    caught by a recorded check (quote not found, contradiction, keys missing, no verdict).
    The checks are flags beside the judge tier's verdict, not overrides; a control proves a
    flag is raised where it should be."""
    from compaction_eval.recall.matching.judge import judge_facts

    model = scripted_model([c.answer for c in controls])

    async def run() -> list[dict[str, Any]]:
        rows = []
        for c in controls:
            verdict = (await judge_facts(model, c.summary, [c.fact]))[c.fact.id]
            kept, reason = verdict.checked_kept, verdict.reason
            if not verdict.quote_found or verdict.contradiction:
                reason = f"flagged: {'quote not found' if not verdict.quote_found else 'quote contradicts the fact'} ({reason})"
            if kept and match_key_sets(SummaryText(c.summary), c.fact.key_sets, inflect=True) is None:
                kept, reason = False, f"flagged: keys missing ({reason})"
            rows.append({"id": c.id, "kind": c.kind, "kept": kept, "expected": c.expect_kept,
                         "ok": kept == c.expect_kept, "reason": reason})
        return rows

    rows = asyncio.run(run())
    return {"n": len(rows), "passed": sum(r["ok"] for r in rows), "items": rows}


# ---------------------------------------------------------------------------- the whole run


def validate(gold_dir: Path | str, model: Any = None, *, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every matcher over the gold set in `gold_dir`; the JSON-ready result.

    Args:
        gold_dir: a directory of gold files (labels/gold).
        model: an inspect model name or Model for the LLM judge; None runs offline only.
        out: when given, receives the loaded `gold` and the judged `items` (for the headline,
            `validation.headline`, without scoring everything twice).
    """
    from compaction_eval.contracts.paths import resolve_input

    gold_dir = resolve_input(gold_dir)
    gold = load_gold(gold_dir)
    judged = judge_gold(gold, model) if model is not None else None
    items = collect_items(gold, judged)
    if out is not None:
        out.update(gold=gold, items=items)
    facts = [i for i in items if i.kind == "fact"]
    matchers = ["literal", "semantic", "default"] + (["judge", "judge_checked"] if judged else [])
    if any("second" in i.predicted for i in facts):
        matchers.append("second")
    result: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "gold": {
            "dir": str(gold_dir),
            "traces": len(gold),
            "heldout_traces": sorted(g.trace for g in gold if g.split == "heldout"),
            "fresh_summaries": sorted(f"{g.trace}/{s.id}" for g in gold for s in g.summaries if s.split == "fresh"),
            "by_split": judgments_by_split(gold),
            "summaries": sum(len(g.summaries) for g in gold),
            "fact_judgments": len(facts),
            "avoid_judgments": sum(i.kind == "avoid" for i in items),
            "unit_judgments": sum(i.kind == "unit" for i in items),
            "styles": {s: sum(len([x for x in g.summaries if x.style == s]) for g in gold) for s in STYLES},
            "second_reader_judgments": sum(len(s.second or {}) for g in gold for s in g.summaries),
        },
        "model": None if model is None else str(model if isinstance(model, str) else getattr(model, "name", model)),
        "facts": {m: _table(facts, m) for m in matchers},
        "avoid": _table([i for i in items if i.kind == "avoid"], "default"),
        "units": _table([i for i in items if i.kind == "unit"], "default"),
        "thresholds": tune_thresholds(items),
        "disagreements": {m: disagreements(facts, m) for m in matchers}
        | {"avoid": disagreements([i for i in items if i.kind == "avoid"], "default"),
           "units": disagreements([i for i in items if i.kind == "unit"], "default")},
    }
    controls = gold_dir / "controls.yaml"
    if controls.is_file():
        result["controls"] = run_controls(load_controls(controls))
    return result


def format_table(result: dict[str, Any]) -> str:
    """The agreement table (κ, accuracy, F1 per category; in-sample and held-out)."""
    lines = []
    g = result["gold"]
    lines.append(f"gold: {g['fact_judgments']} fact, {g['avoid_judgments']} avoid, {g['unit_judgments']} unit judgments; "
                 f"{g['summaries']} summaries over {g['traces']} traces")
    lines.append(f"held out (not used to tune): traces {', '.join(g['heldout_traces']) or '-'}; "
                 f"{len(g['fresh_summaries'])} fresh summaries written after the matchers were frozen")
    for m, table in result["facts"].items():
        lines.append("")
        lines.append(f"matcher: {m}")
        lines.append(f"  {'category':<11} {'n':>4} {'acc':>6} {'prec':>6} {'rec':>6} {'F1':>6} {'kappa':>6}   {'held-out n':>10} {'kappa':>6}")
        rows = list(table["by_category"].items()) + [("overall", table["overall"])]
        for cat, a in rows:
            h = table["by_split"]["not_tune"] if cat == "overall" else table["heldout_by_category"][cat]
            lines.append(f"  {cat:<11} {a['n']:>4} {_f(a['accuracy'])} {_f(a['precision'])} {_f(a['recall'])} "
                         f"{_f(a['f1'])} {_f(a['kappa'])}   {h['n']:>10} {_f(h['kappa'])}")
    fresh = result["facts"]["default"]["by_split"]
    lines.append("")
    lines.append("default scorer by split (facts): " + "; ".join(
        f"{sp} n={fresh[sp]['n']} kappa={_f(fresh[sp]['kappa']).strip()}" for sp in SPLITS))
    for name in ("avoid", "units"):
        a, h = result[name]["overall"], result[name]["by_split"]["not_tune"]
        lines.append("")
        lines.append(f"{name} (default): n={a['n']} acc={_f(a['accuracy']).strip()} F1={_f(a['f1']).strip()} "
                     f"kappa={_f(a['kappa']).strip()}; held-out n={h['n']} kappa={_f(h['kappa']).strip()}")
    if result.get("thresholds"):
        lines.append("")
        lines.append("semantic threshold per category (chosen on tune, checked on held-out):")
        for cat, t in result["thresholds"].items():
            lines.append(f"  {cat:<11} default {t['default_threshold']:.2f}: tune kappa {_f(t['tune_kappa_default']).strip()}, "
                         f"held-out {_f(t['heldout_kappa_default']).strip()} | best on tune {t['best_threshold_on_tune']:.2f}: "
                         f"tune {_f(t['tune_kappa_best']).strip()}, held-out {_f(t['heldout_kappa_best']).strip()}")
    if "controls" in result:
        c = result["controls"]
        lines.append("")
        lines.append(f"judge controls (scripted wrong verdicts): {c['passed']}/{c['n']} handled as expected")
    n = len(result["disagreements"].get("default", []))
    lines.append("")
    lines.append(f"default scorer disagreements on facts: {n} (listed in the JSON result)")
    return "\n".join(lines)


def _f(x: float | None) -> str:
    return f"{x:6.3f}" if isinstance(x, (int, float)) else f"{'-':>6}"


__all__ = [
    "Control",
    "GoldFile",
    "GoldSummary",
    "Item",
    "agreement",
    "collect_items",
    "disagreements",
    "format_table",
    "judge_gold",
    "kappa",
    "load_controls",
    "load_gold",
    "load_gold_file",
    "run_controls",
    "scripted_model",
    "tune_thresholds",
    "validate",
]
