"""Corpus statistics for the run header: traces, tokens, points, facts by category."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .corpus import Corpus


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
