"""`corpus export --format hf`: the corpus as a Hugging Face dataset with its card.

The dataset's layout and why traces and labels travel as text: see corpus/hf.py, which reads
the same folders back (`hf:` inputs).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES, Labels
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.runfiles import check_replaceable_dir
from compaction_eval.contracts.traces import Trace, source_of
from compaction_eval.corpus.hf import SPLIT, require_datasets
from compaction_eval.corpus.stats import by_source, corpus_table


def _row(trace: Trace, labels: Labels | None, source: str) -> dict[str, Any]:
    meta = trace.metadata
    text = None
    if labels is not None:
        text = labels.text if labels.text is not None else Path(labels.path).read_text(encoding="utf-8")  # type: ignore[arg-type]
    return {
        "id": trace.id,
        "source": source,
        "agent": str(meta.get("agent") or ""),
        "model": str(meta.get("model") or ""),
        "task_kind": str(meta.get("task_kind") or meta.get("family") or ""),
        "license": str(trace.source.get("license") or ""),
        "provenance": json.dumps(trace.source, sort_keys=True, ensure_ascii=False),
        "messages": len(trace.messages),
        "tokens": sum(trace.token_counts),
        "labelled_by": labels.labelled_by if labels else None,
        "points": list(labels.points) if labels else [],
        "facts": len(labels.facts) if labels else 0,
        "trace": json.dumps(trace.to_json(), ensure_ascii=False),
        "labels": text,
    }


def _export_file(path: Path) -> bool:
    """What an export writes at its top level (anything else is the user's)."""
    return path.name in ("dataset_dict.json", "README.md", SPLIT)


def export_hf(corpus: Any, out: Path, *, name: str = "compaction-eval corpus", force: bool = False) -> Path:
    """Write `corpus` (a corpus.load.Corpus) as a dataset folder at `out`; return `out`.

    Written beside `out` first and moved into place at the end, so a failed export leaves
    no partial folder; an existing `out` is replaced only with `force` and only when it is an
    export holding nothing else (contracts.runfiles.check_replaceable_dir), never an
    unrelated folder or the user's files beside an export.
    """
    out = Path(out)
    datasets = require_datasets(str(out))
    if out.exists() and not (out / "dataset_dict.json").exists():
        raise ContractError([Problem(str(out), "", "exists and is not a dataset export: choose another folder or remove it")])
    check_replaceable_dir(out, _export_file, force=force, flag="corpus export DIR")
    rows = [_row(t, corpus.labels.get(tid), source_of(t)) for tid, t in sorted(corpus.traces.items())]
    features = datasets.Features({
        "id": datasets.Value("string"), "source": datasets.Value("string"), "agent": datasets.Value("string"),
        "model": datasets.Value("string"), "task_kind": datasets.Value("string"), "license": datasets.Value("string"),
        "provenance": datasets.Value("string"), "messages": datasets.Value("int64"), "tokens": datasets.Value("int64"),
        "labelled_by": datasets.Value("string"), "points": datasets.Sequence(datasets.Value("int64")),
        "facts": datasets.Value("int64"), "trace": datasets.Value("string"), "labels": datasets.Value("string"),
    })
    ds = datasets.Dataset.from_list(rows, features=features)
    stage = out.with_name(f".{out.name}.export-tmp")
    shutil.rmtree(stage, ignore_errors=True)
    try:
        datasets.DatasetDict({SPLIT: ds}).save_to_disk(str(stage))
        card = dataset_card(name, corpus_table(corpus), by_source(corpus), sorted(p.name for p in (stage / SPLIT).glob("*.arrow")))
        (stage / "README.md").write_text(card, encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        stage.rename(out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


def _md(value: Any) -> str:
    """A table cell: traces and labels are untrusted, so no markdown or HTML gets through."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    for ch in "&<>*_`[]":  # `&` first: escaping it after `<` turned `&#60;` into `&#38;#60;` (escaped twice)
        text = text.replace(ch, f"&#{ord(ch)};")
    return text


def dataset_card(name: str, table: dict[str, Any], sources: list[dict[str, Any]], arrow_files: list[str]) -> str:
    """The dataset card: `configs` header for load_dataset, sources, licenses, label rule, statistics."""
    licenses = sorted({lic for r in sources for lic in r["licenses"]})
    lic_id = licenses[0].lower() if len(licenses) == 1 else "other"
    header = [
        "---",
        f"license: {json.dumps(lic_id)}",
        "pretty_name: " + json.dumps(name),
        "tags: [agents, context-compaction, evaluation]",
        "configs:",
        "- config_name: default",
        "  data_files:",
        f"  - split: {SPLIT}",
        "    path:",
        *[f"    - {SPLIT}/{f}" for f in arrow_files],
        "---",
        "",
    ]
    g = table["groups"]
    cats = list(CATEGORIES)
    lines = [
        f"# {_md(name)}",
        "",
        "Agent traces in `compaction-eval/trace@1` with hand-written labels (`compaction-eval/labels@1`): the facts a",
        "resumed agent must still know at each compaction point. Written by `compaction-eval corpus export --format hf`;",
        "read back with `compaction-eval recall --traces hf:PATH --labels hf:PATH` (PATH a folder or a Hub name),",
        "`datasets.load_dataset(PATH)` or `datasets.load_from_disk(PATH)`.",
        "",
        "## Columns",
        "",
        "One row per trace. `trace` is the trace JSON and `labels` the labels YAML exactly as written (null when the",
        "trace is unlabelled); `provenance` is the trace's `source` (repository, commit, path, license). `source`,",
        "`agent`, `model`, `task_kind`, `license`, `messages`, `tokens`, `labelled_by`, `points`, `facts` are copies",
        "for browsing.",
        "",
        "## Label rule",
        "",
        "A fact counts as kept when a resumed agent could act on it from the compacted context without re-deriving it.",
        "`artifact`, `number`, `bug`: exact (the path, symbol, ID, number or error text as written). `intent`,",
        "`constraint`, `decision`, `attempt`, `next_step`: meaning (a paraphrase counts; a negation, an inversion or a",
        "vaguer version that loses what makes it actionable does not; for decisions and attempts the reason is part of",
        "the fact). A fact is expected at a point when one of its `source` messages is before the point and",
        "`valid_until` is absent or not before it. `labelled_by`: `human` (written or checked by a person),",
        "`generator` (synthetic traces, labels written with them), `draft` (unchecked candidates).",
        "",
        "## Statistics",
        "",
        "| origin | traces | points | facts | tokens |",
        "|---|---|---|---|---|",
        *[f"| {k} | {v['traces']} | {v['points']} | {v['facts']} | {v['tokens']} |" for k, v in g.items()],
        "",
        f"{table['unlabelled_traces']} trace(s) have no labels.",
        "",
        "| source | traces labelled | unlabelled | tokens | points | facts | " + " | ".join(cats) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(cats),
        *[f"| {_md(r['source'])} | {r['traces']} | {r['unlabelled_traces']} | {r['tokens']} | {r['points']} | {r['facts']} | "
          + " | ".join(str(r["facts_by_category"][c]) for c in cats) + " |" for r in sources],
        "",
        "## Sources and licenses",
        "",
        "| source | agent | model | task kind | license |",
        "|---|---|---|---|---|",
        *[f"| {_md(r['source'])} | {_md(', '.join(r['agents']) or '-')} | {_md(', '.join(r['models']) or '-')} | "
          f"{_md(', '.join(r['task_kinds']) or '-')} | {_md(', '.join(r['licenses']) or '-')} |" for r in sources],
        "",
        "Each row's `provenance` names its upstream repository, commit and path, and any note on its license.",
        "",
    ]
    return "\n".join(header + lines)
