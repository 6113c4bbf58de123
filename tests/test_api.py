"""The public API: what `import compaction_eval` offers, on the repository's real files."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import compaction_eval as ce

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "fixtures/traces/synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels/synth-ci-broken-001.yaml"

DOCTEST_MODULES = (
    "compaction_eval",
    "compaction_eval.api",
    "compaction_eval.contracts.settings",
    "compaction_eval.stats.bootstrap",
    "compaction_eval.stats.blas",
    "compaction_eval.recall.matching.normalize",
)


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_every_public_name_resolves():
    for name in ce.__all__:
        assert getattr(ce, name) is not None
    with pytest.raises(AttributeError):
        ce.no_such_name  # noqa: B018


def test_importing_the_package_does_not_import_inspect():
    code = "import sys, compaction_eval; print('inspect_ai' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_traces_and_labels_load_from_str_paths_path_objects_and_text():
    by_str, by_path = ce.load_trace(str(TRACE)), ce.load_trace(TRACE)
    assert by_str.id == by_path.id == "synth-ci-broken-001" and by_str.messages == by_path.messages
    from_text = ce.load_labels(LABELS.read_text(encoding="utf-8"))
    from_file = ce.load_labels(str(LABELS))
    assert from_text.facts == from_file.facts and from_text.points == from_file.points


def test_bad_input_raises_a_located_contract_error():
    with pytest.raises(ce.ContractError, match="no-such-file.json"):
        ce.load_trace("no-such-file.json")
    with pytest.raises(ce.ContractError, match=r"<string>: line 1"):
        ce.load_trace('{"schema": ')
    with pytest.raises(ce.ContractError, match="<string>"):
        ce.load_labels("schema: compaction-eval/labels@1\ntrace: t\n")


def test_compact_then_score_matches_the_recall_suite_rule():
    trace, labels = ce.load_trace(TRACE), ce.load_labels(LABELS)
    at = labels.points[0]
    compacted = ce.compact(trace, at, ROOT / "prompts/handoff.j2")
    assert 0 < compacted.summary_tokens <= ce.CompactionSettings().budget
    kept = ce.score_summary(compacted.summary, labels, trace, at)
    lost = ce.score_summary("", labels, trace, at)
    assert kept.recall > 0.5 and lost.recall == 0.0
    # a smaller budget keeps less
    small = ce.compact(trace, at, ROOT / "prompts/handoff.j2", settings=ce.CompactionSettings(budget=80))
    assert small.summary_tokens <= 80
    assert ce.score_summary(small.summary, labels, trace, at).recall < kept.recall


def test_a_committed_baseline_reads_and_gates_against_itself():
    baseline = ROOT / "results/baselines/main"
    results = ce.read_run(baseline)
    assert results["schema"] == "compaction-eval/results@1"
    comparison = ce.compare_runs(results, baseline)
    assert comparison.prompts and all(p.recall.delta == 0 and p.recall.ci == (0.0, 0.0) for p in comparison.prompts)
    assert ce.gate_runs(baseline, baseline).exit_code == 0


def test_run_recall_takes_the_settings_as_one_value_or_by_field(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr("compaction_eval.recall.run.run_recall", lambda config, out: seen.append(config) or {})
    ce.run_recall(tmp_path / "a", budget=300, focus="the flaky test")
    ce.run_recall(tmp_path / "b", compaction=ce.CompactionSettings(keep_last=2), budget=300)
    ce.run_recall(tmp_path / "c", ce.RecallConfig(compaction=ce.CompactionSettings(shape="messages")), keep_last=1)
    assert [c.compaction for c in seen] == [ce.CompactionSettings(budget=300, focus="the flaky test"),
                                          ce.CompactionSettings(budget=300, keep_last=2),
                                          ce.CompactionSettings(shape="messages", keep_last=1)]
    with pytest.raises(ce.ContractError, match="--budget: 0 is not valid"):
        ce.run_recall(tmp_path / "d", budget=0)
    with pytest.raises(TypeError):
        ce.RecallConfig(budget=300)  # the config itself has one home for the settings: `compaction`
