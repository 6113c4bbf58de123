"""Fact text read back from a run's recorded labels paths (issue 23, item 2).

The default corpus records `labels/real#2`: a directory plus a selector, a path that does not
exist on disk. The report, `suggest`, the gate markdown and `review` read labels back through
one resolver (`corpus.load.read_labels_back`), so a real trace shows its fact text in all four.
"""

from __future__ import annotations

from pathlib import Path

from compaction_eval.contracts.labels import load_labels
from compaction_eval.corpus.load import read_labels_back, run_labels
from compaction_eval.gate.rules import fact_texts
from compaction_eval.report.render import load_source_corpus
from compaction_eval.tune.suggest import _fact_index
from compaction_eval.validation.review import format_uncertain, review_file, uncertain_verdicts
from conftest import ROOT, real_trace

TRACE = "21037e11-89de-484d-abba-8705254aa991"  # a real Claude Code trace of the default corpus's labels/real#2


def _results(labels: list[str], given: list[str] | None = None) -> dict:
    """A results document of one real sample, recording its inputs as `run` does (absolute,
    selector kept) and optionally as given."""
    lab = load_labels(ROOT / "labels" / "real" / f"{TRACE}.yaml")
    point = lab.points[0]
    facts = [{"id": f.id, "category": f.category, "kept": False, "critical": f.critical, "weight": 1.0,
              "uncertain": i == 0, "probability": 0.5, "evidence": None, "note": None}
             for i, f in enumerate(lab.expected(point))]
    sample = {"trace": TRACE, "point": point, "prompt": "handoff", "epoch": 1, "summary": "nothing", "recall": 0.0,
              "precision": 0.0, "facts": facts, "avoid": [], "distortions": []}
    doc = {"schema": "compaction-eval/results@1", "run": "r", "samples": [sample],
           "config": {"labels": labels, "traces": [str(real_trace(TRACE).parent.parent)]}}
    if given is not None:
        doc["inputs_as_given"] = {"labels": given}
    return doc


def test_a_selector_path_resolves_in_the_report_suggest_the_gate_and_review(tmp_path):
    results = _results([str(ROOT / "labels"), str(ROOT / "labels" / "real#2")])
    lab = load_labels(ROOT / "labels" / "real" / f"{TRACE}.yaml")
    first = lab.expected(lab.points[0])[0]

    assert run_labels(results)[TRACE].facts == lab.facts
    assert fact_texts(results)[(TRACE, first.id)] == first.text  # gate markdown
    assert _fact_index(results)[(TRACE, first.id)].text == first.text  # suggest
    corpus = load_source_corpus(results, tmp_path)  # report
    assert corpus.missing is None and corpus.labels[TRACE].facts == lab.facts
    row = review_file(results)["summaries"][0]  # review.yaml: text and keys beside each verdict
    assert row["labels"] == str((ROOT / "labels" / "real" / f"{TRACE}.yaml").resolve())
    assert row["facts"][0]["text"] == first.text and row["facts"][0]["keys"] == list(first.keys)
    assert f"fact: {first.text[:60]}" in format_uncertain(uncertain_verdicts(results))


def test_a_moved_run_finds_its_labels_as_given_under_a_base(tmp_path, monkeypatch):
    # recorded absolute paths that no longer exist; the as-given relative path under a base
    monkeypatch.chdir(tmp_path)
    results = _results([str(tmp_path / "gone" / "labels" / "real#2")], given=["labels/real#2"])
    assert TRACE not in run_labels(results)
    assert TRACE in run_labels(results, bases=[ROOT])
    assert read_labels_back([Path("no/such#2"), "hf:nothing"], bases=[ROOT]) == {}
