"""Per-process caches of validated inputs, keyed by path and modification time.

Solvers and scorers receive file paths (inspect records task arguments in its logs, so
they must stay plain values); each trace is parsed and token-counted once per process
while its samples run. inspect runs samples in dataset order (trace by trace), a few at a
time: a handful of traces in the cache serve every prompt and point of each, and a corpus
of a thousand traces is not held (a trace and the matcher's indexes of it, which live as
long as the trace, are megabytes for a long one).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from compaction_eval.contracts.labels import Labels, load_labels
from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.prompts import Candidate, load_candidate
from compaction_eval.contracts.traces import Trace
from compaction_eval.corpus.load import read_trace


def _mtime(path: str) -> float:
    return Path(path).stat().st_mtime


TRACES_CACHED = 16


@lru_cache(maxsize=TRACES_CACHED)
def _trace(path: str, mtime: float) -> Trace:
    trace, problems = read_trace(Path(path))
    if trace is None:
        raise ContractError(problems)
    return trace


@lru_cache(maxsize=TRACES_CACHED)
def _labels(path: str, mtime: float) -> Labels:
    return load_labels(path)


def trace_at(path: str) -> Trace:
    return _trace(path, _mtime(path))


def labels_at(path: str) -> Labels:
    return _labels(path, _mtime(path))


def candidate_at(path: str, enabled: tuple[str, ...] | None) -> Candidate:
    candidate = load_candidate(path)
    if enabled is None:
        return candidate
    return Candidate(candidate.name, candidate.description, candidate.fields, candidate.path, tuple(enabled))
