"""The fact-recall dataset: one inspect Sample per (trace, point, prompt)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from inspect_ai.dataset import MemoryDataset, Sample

from compaction_eval.contracts.prompts import Candidate
from compaction_eval.corpus.load import load_corpus


def recall_samples(traces: Sequence[Path | str], labels: Sequence[Path | str], candidates: list[Candidate], *,
                   points: Sequence[str] = ()) -> MemoryDataset:
    """Samples for every labelled point of every trace (or only `points`, `TRACE@AT`), under
    every candidate prompt."""
    # the rows need each trace's path, not the traces: they are read one at a time
    corpus = load_corpus(traces, labels, points=points, lazy=True)
    rows = corpus.rows()
    samples = [
        Sample(
            id=f"{row['id']}/{c.name}",
            input=f"Compact {row['trace']} at message {row['point']} with prompt {c.name}",
            metadata={
                **row,
                "prompt": c.name,
                "prompt_path": str(c.path),
                "prompt_fields": list(c.active_fields),
            },
        )
        for row in rows
        for c in candidates
    ]
    return MemoryDataset(samples, name="fact_recall")
