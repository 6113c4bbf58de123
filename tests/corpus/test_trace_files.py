"""A corpus loaded `lazy` reads its traces when they are used (issue 25): the same corpus,
the same statistics, and never every trace in memory at once."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from compaction_eval.contracts.paths import DEFAULTS
from compaction_eval.contracts.traces import Trace
from compaction_eval.corpus.load import TRACES_KEPT, TraceFiles, load_corpus
from compaction_eval.corpus.stats import corpus_stats, corpus_table
from conftest import ROOT

# the shipped corpus: synthetic and real traces (a `DIR#N` selector among the labels), more
# traces than a TraceFiles keeps
TRACES = [str(ROOT / p) for p in DEFAULTS["traces"]]
LABELS = [str(ROOT / p) for p in DEFAULTS["labels"]]


def live_traces() -> int:
    gc.collect()
    return sum(isinstance(o, Trace) for o in gc.get_objects())


def test_a_lazy_corpus_is_the_corpus_and_gives_the_same_statistics():
    eager = load_corpus(TRACES, LABELS)
    lazy = load_corpus(TRACES, LABELS, lazy=True)
    assert isinstance(lazy.traces, TraceFiles) and len(eager.traces) > TRACES_KEPT
    assert list(lazy.traces) == list(eager.traces) and len(lazy.traces) == len(eager.traces)
    assert lazy.labels == eager.labels and lazy.samples() == eager.samples() and lazy.rows() == eager.rows()
    assert corpus_stats(lazy) == corpus_stats(eager)
    assert corpus_table(lazy) == corpus_table(eager)
    for tid, trace in eager.traces.items():
        assert tid in lazy.traces
        assert lazy.traces[tid].to_json() == trace.to_json()
    assert "no-such-trace" not in lazy.traces
    with pytest.raises(KeyError):
        lazy.traces["no-such-trace"]


def test_a_lazy_corpus_never_holds_more_than_a_few_traces():
    before = live_traces()
    corpus = load_corpus(TRACES, LABELS, lazy=True)
    corpus_stats(corpus)
    for tid in corpus.traces:
        corpus.traces[tid]
    assert live_traces() - before <= TRACES_KEPT
    eager = load_corpus(TRACES, LABELS)
    assert live_traces() - before >= len(eager.traces)  # the count above can see traces


def test_a_trace_file_changed_after_it_was_checked_is_an_error_not_another_trace(tmp_path):
    """A trace read again (no longer among the kept ones) is read and checked again."""
    from compaction_eval.contracts.problems import ContractError
    from compaction_eval.corpus.load import read_trace

    src = Path(ROOT / DEFAULTS["traces"][0])
    names = sorted(p.name for p in src.iterdir() if p.name.endswith(".json.gz"))[:2]
    files = TraceFiles(keep=1)
    for name in names:
        (tmp_path / name).write_bytes((src / name).read_bytes())
        trace, problems = read_trace(tmp_path / name)
        assert trace is not None and not problems
        files.add(trace)
    first, second = list(files)
    assert files[first].id == first and files[second].id == second  # the second read pushes the first out
    assert files[second] is files[second]  # kept
    (tmp_path / names[0]).write_bytes(b"not gzip")
    with pytest.raises(ContractError):
        files[first]
