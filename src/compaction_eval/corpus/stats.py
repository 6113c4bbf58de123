"""Corpus statistics for the run header: traces, tokens, points, facts by category; by origin
(synthetic / real) and by source (the agent a trace came from)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.contracts.traces import source_of
from compaction_eval.corpus.load import Corpus


def trace_shapes(corpus: Corpus) -> dict[str, dict[str, Any]]:
    """What the statistics need of each trace (source, size, who made it), by trace id in
    the corpus's order: one trace is looked at at a time, so a corpus whose traces are read
    when used (`TraceFiles`) is never all in memory."""
    shapes = {}
    for tid in corpus.traces:
        trace = corpus.traces[tid]
        meta = trace.metadata
        shapes[tid] = {"source": source_of(trace), "messages": len(trace.messages), "tokens": sum(trace.token_counts),
                       "agent": meta.get("agent"), "model": meta.get("model"),
                       "task_kind": meta.get("task_kind") or meta.get("family"), "license": trace.source.get("license")}
    return shapes


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    facts = Counter(f.category for lab in corpus.labels.values() for f in lab.facts)
    labelled_by = Counter(lab.labelled_by for lab in corpus.labels.values())
    shapes = trace_shapes(corpus)
    traces = [shapes[tid] for tid in corpus.labels]
    return {
        "traces": len(traces),
        "points": sum(len(lab.points) for lab in corpus.labels.values()),
        "messages": sum(t["messages"] for t in traces),
        "tokens": sum(t["tokens"] for t in traces),
        "facts": sum(facts.values()),
        "facts_by_category": dict(sorted(facts.items())),
        "labelled_by": dict(sorted(labelled_by.items())),
        "synthetic_traces": labelled_by.get("generator", 0),
        "real_traces": len(traces) - labelled_by.get("generator", 0),
        "unlabelled_traces": len(corpus.traces) - len(traces),
        "skipped_files": [str(p) for p in corpus.skipped],
        "by_source": by_source(corpus, shapes),
        "fingerprint": fingerprint(corpus),
    }


def fingerprint(corpus: Corpus) -> str:
    """A digest of the labelled traces and their labels: two runs with the same fingerprint were
    asked the same questions about the same conversations (the run history compares only those)."""
    digest = hashlib.sha256()
    for tid in sorted(corpus.labels):
        trace = corpus.traces[tid]
        labels = dataclasses.asdict(corpus.labels[tid])
        for where in ("path", "lines", "text"):  # where and how the file was written is not what it says
            labels.pop(where, None)
        body = {"system": trace.system, "messages": trace.messages, "labels": labels}
        digest.update(json.dumps([tid, body], sort_keys=True, default=str, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:24]


def _distinct(values: Iterable[Any]) -> list[str]:
    return sorted({str(v) for v in values if v not in (None, "")})


def by_source(corpus: Corpus, shapes: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per source, in name order: agents, models, task kinds and licenses seen, then
    the numbers of `_group` for its labelled traces and how many of its traces are unlabelled.
    `shapes`: `trace_shapes(corpus)` when the caller has it."""
    shapes = trace_shapes(corpus) if shapes is None else shapes
    sources: dict[str, list[str]] = defaultdict(list)
    for tid, shape in shapes.items():
        sources[shape["source"]].append(tid)
    rows = []
    for name in sorted(sources):
        tids = sorted(sources[name])
        labelled = [t for t in tids if t in corpus.labels]
        traces = [shapes[t] for t in tids]
        rows.append({
            "source": name,
            "agents": _distinct(t["agent"] for t in traces),
            "models": _distinct(t["model"] for t in traces),
            "task_kinds": _distinct(t["task_kind"] for t in traces),
            "licenses": _distinct(t["license"] for t in traces),
            "labelled_by": dict(sorted(Counter(corpus.labels[t].labelled_by for t in labelled).items())),
            **_group(corpus, labelled, shapes),
            "unlabelled_traces": len(tids) - len(labelled),
        })
    return rows


def format_source_table(rows: list[dict[str, Any]]) -> str:
    """`by_source` as aligned text: the numbers, then what each source is."""
    cats = list(CATEGORIES)
    head = ["source", "traces", "unlabelled", "tokens", "points", "facts", *cats]
    numbers = [head] + [
        [r["source"], r["traces"], r["unlabelled_traces"], r["tokens"], r["points"], r["facts"], *(r["facts_by_category"][c] for c in cats)]
        for r in rows
    ]
    what = [["source", "agent", "model", "task kind"]] + [
        [r["source"], _short(r["agents"]), _short(r["models"]), _short(r["task_kinds"])] for r in rows
    ]
    return _align(numbers, numeric=range(1, len(head))) + "\n\n" + _align(what, numeric=())


def _short(values: list[str], most: int = 2) -> str:
    if not values:
        return "-"
    return ", ".join(values[:most]) + (f" (+{len(values) - most})" if len(values) > most else "")


def _align(rows: list[list[Any]], numeric: Iterable[int]) -> str:
    right = set(numeric)
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(v).rjust(w) if i in right else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True))).rstrip()
                     for r in rows)


def _group(corpus: Corpus, tids: list[str], shapes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    facts = Counter(f.category for tid in tids for f in corpus.labels[tid].facts)
    tokens = [shapes[tid]["tokens"] for tid in tids]
    return {
        "traces": len(tids),
        "points": sum(len(corpus.labels[tid].points) for tid in tids),
        "messages": sum(shapes[tid]["messages"] for tid in tids),
        "tokens": sum(tokens),
        "tokens_min": min(tokens, default=0),
        "tokens_max": max(tokens, default=0),
        "facts": sum(facts.values()),
        "critical": sum(f.critical for tid in tids for f in corpus.labels[tid].facts),
        "avoid": sum(len(corpus.labels[tid].avoid) for tid in tids),
        "facts_by_category": {c: facts.get(c, 0) for c in CATEGORIES},
    }


def corpus_table(corpus: Corpus) -> dict[str, Any]:
    """Statistics split by origin: `synthetic` (labelled_by generator), `real` (human or
    draft labels on imported traces) and `all`."""
    labelled = sorted(corpus.labels)
    synthetic = [t for t in labelled if corpus.labels[t].labelled_by == "generator"]
    real = [t for t in labelled if corpus.labels[t].labelled_by != "generator"]
    shapes = trace_shapes(corpus)
    return {
        "groups": {"synthetic": _group(corpus, synthetic, shapes), "real": _group(corpus, real, shapes),
                   "all": _group(corpus, labelled, shapes)},
        "drafts": sum(corpus.labels[t].labelled_by == "draft" for t in labelled),
        "unlabelled_traces": len(corpus.traces) - len(labelled),
        "skipped_files": [str(p) for p in corpus.skipped],
        "by_source": by_source(corpus, shapes),
    }


def format_corpus_table(table: dict[str, Any]) -> str:
    """The table as aligned text: one row per origin, one column per number and category."""
    cats = list(CATEGORIES)
    head = ["corpus", "traces", "tokens", "min", "max", "points", "facts", "crit", "avoid", *cats]
    rows = [head]
    for name, g in table["groups"].items():
        rows.append([name, g["traces"], g["tokens"], g["tokens_min"], g["tokens_max"], g["points"], g["facts"],
                     g["critical"], g["avoid"], *(g["facts_by_category"][c] for c in cats)])
    lines = [_align(rows, numeric=range(1, len(head)))]
    if table.get("by_source"):
        lines += ["", "by source:", format_source_table(table["by_source"])]
    if table["drafts"]:
        lines.append(f"({table['drafts']} labels file(s) are unchecked drafts)")
    if table["unlabelled_traces"]:
        lines.append(f"({table['unlabelled_traces']} trace(s) have no labels)")
    return "\n".join(lines)
