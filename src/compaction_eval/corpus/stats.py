"""Corpus statistics for the run header: traces, tokens, points, facts by category."""

from __future__ import annotations

from collections import Counter
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.corpus.load import Corpus


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    facts = Counter(f.category for lab in corpus.labels.values() for f in lab.facts)
    labelled_by = Counter(lab.labelled_by for lab in corpus.labels.values())
    traces = [corpus.traces[tid] for tid in corpus.labels]
    return {
        "traces": len(traces),
        "points": sum(len(lab.points) for lab in corpus.labels.values()),
        "messages": sum(len(t.messages) for t in traces),
        "tokens": sum(sum(t.token_counts) for t in traces),
        "facts": sum(facts.values()),
        "facts_by_category": dict(sorted(facts.items())),
        "labelled_by": dict(sorted(labelled_by.items())),
        "synthetic_traces": labelled_by.get("generator", 0),
        "real_traces": len(traces) - labelled_by.get("generator", 0),
        "unlabelled_traces": len(corpus.traces) - len(traces),
        "skipped_files": [str(p) for p in corpus.skipped],
    }


def _group(corpus: Corpus, tids: list[str]) -> dict[str, Any]:
    facts = Counter(f.category for tid in tids for f in corpus.labels[tid].facts)
    tokens = [sum(corpus.traces[tid].token_counts) for tid in tids]
    return {
        "traces": len(tids),
        "points": sum(len(corpus.labels[tid].points) for tid in tids),
        "messages": sum(len(corpus.traces[tid].messages) for tid in tids),
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
    return {
        "groups": {"synthetic": _group(corpus, synthetic), "real": _group(corpus, real),
                   "all": _group(corpus, labelled)},
        "drafts": sum(corpus.labels[t].labelled_by == "draft" for t in labelled),
        "unlabelled_traces": len(corpus.traces) - len(labelled),
        "skipped_files": [str(p) for p in corpus.skipped],
    }


def format_corpus_table(table: dict[str, Any]) -> str:
    """The table as aligned text: one row per origin, one column per number and category."""
    cats = list(CATEGORIES)
    head = ["corpus", "traces", "tokens", "min", "max", "points", "facts", "crit", "avoid", *cats]
    rows = [head]
    for name, g in table["groups"].items():
        rows.append([name, g["traces"], g["tokens"], g["tokens_min"], g["tokens_max"], g["points"], g["facts"],
                     g["critical"], g["avoid"], *(g["facts_by_category"][c] for c in cats)])
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    lines = ["  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
             for r in rows]
    if table["drafts"]:
        lines.append(f"({table['drafts']} labels file(s) are unchecked drafts)")
    if table["unlabelled_traces"]:
        lines.append(f"({table['unlabelled_traces']} trace(s) have no labels)")
    return "\n".join(lines)
