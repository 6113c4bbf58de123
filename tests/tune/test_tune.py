"""Recall-first tuning (compaction_eval.tune.ablation): reduced prompts, the elimination path, the
recommended stop, the CLI end to end on one small trace, and the frontier in the report."""

from __future__ import annotations

import json

import pytest

from compaction_eval.cli.main import main
from compaction_eval.contracts.prompts import Candidate, load_candidate
from compaction_eval.tune import ablation as tune_mod
from compaction_eval.tune.ablation import (
    Point,
    TuneConfig,
    recommend,
    reduced_template,
    tune,
    write_variant,
)
from conftest import ROOT

RECALL_MAX = ROOT / "prompts" / "recall_max.j2"


@pytest.mark.parametrize("prompt", ["recall_max", "handoff", "inspect_default"])
def test_a_reduced_prompt_renders_exactly_like_the_original_with_those_fields(tmp_path, prompt):
    cand = load_candidate(ROOT / "prompts" / f"{prompt}.j2")
    keep = cand.fields[::2]
    path = write_variant(cand, keep, tmp_path, f"{prompt}-small")
    reduced = load_candidate(path)
    assert reduced.name == f"{prompt}-small" and reduced.fields == keep
    original = Candidate(cand.name, cand.description, cand.fields, cand.path, keep)
    for span in ("SPAN TEXT", None):
        assert reduced.render(budget=700, span=span, focus="paths") == original.render(budget=700, span=span, focus="paths")
    # the removed blocks are gone from the file, not just switched off
    text = path.read_text()
    for f in cand.fields:
        assert (f'"{f}" in fields' in text) == (f in keep)


def test_reduced_template_names_what_was_removed():
    cand = load_candidate(RECALL_MAX)
    text = reduced_template(cand, ("intent", "bugs"), "x")
    assert "name: x" in text and "fields: [intent, bugs]" in text
    assert "removed constraints, decisions, artifacts, numbers, attempts, state, next_step" in text
    assert "## Numbers" not in text and "## Open bugs and errors" in text


def _p(n: int, recall: float, completion: float | None = None) -> Point:
    return Point(tuple(f"f{i}" for i in range(n)), None if n == 5 else f"f{n}", recall, None, 0.5, 100.0 * n, completion)


def test_recommend_picks_the_smallest_set_within_tolerance_of_the_best():
    frontier = [_p(5, 0.80), _p(4, 0.81), _p(3, 0.795), _p(2, 0.78), _p(1, 0.60)]
    assert recommend(frontier, 0.02) == 2  # 0.795 >= 0.81 - 0.02; 0.78 is not
    assert recommend(frontier, 0.05) == 3
    assert recommend(frontier, 0.0) == 1
    # completion holds the stop back even when recall allows going further
    with_completion = [_p(5, 0.80, 1.0), _p(4, 0.80, 1.0), _p(3, 0.80, 0.75), _p(2, 0.80, 0.5)]
    assert recommend(with_completion, 0.02) == 1


def test_backward_elimination_removes_the_least_harmful_field_each_round(tmp_path, monkeypatch):
    """Measurements faked as a function of the field set: each field is worth a fixed amount
    of recall; completion needs `intent`. The path must remove the cheapest field first, and
    with `both` completion is measured on the frontier steps only."""
    worth = {"intent": 0.30, "constraints": 0.001, "decisions": 0.05, "bugs": 0.2, "artifacts": 0.15,
             "numbers": 0.10, "attempts": 0.003, "state": 0.0, "next_step": 0.002}
    horizon_calls: list[list[str]] = []

    def fake_recall(config, paths, run_dir):
        out = {}
        for name, path in paths.items():
            fields = load_candidate(path).fields
            r = sum(worth[f] for f in fields) / sum(worth.values())
            out[name] = {"recall": r, "recall_ci": [r - 0.05, r + 0.05], "precision": 0.5, "summary_tokens": 80.0 * len(fields)}
        return out

    def fake_completion(config, names, prompts_dir, log_dir):
        horizon_calls.append(list(names))
        return {n: ((1.0 if "intent" in load_candidate(prompts_dir / f"{n}.j2").fields else 0.0), (0.0, 1.0)) for n in names}

    monkeypatch.setattr(tune_mod, "_measure_recall", fake_recall)
    monkeypatch.setattr(tune_mod, "_measure_completion", fake_completion)
    out = tmp_path / "tuned.j2"
    result = tune(TuneConfig(prompt=str(RECALL_MAX), suite="both", tolerance=0.02, work_dir=str(tmp_path / "w")),
                  out_prompt=out, log=lambda m: None)
    removed = [p.removed for p in result.frontier[1:]]
    assert removed == ["state", "constraints", "next_step", "attempts", "decisions", "numbers", "artifacts", "bugs"]
    assert len(result.frontier) == 9 and len(result.frontier[-1].fields) == 1
    assert all(len(c) == 1 for c in horizon_calls) and len(horizon_calls) == 9  # the start and 8 frontier steps
    assert len(result.tried) == 1 + sum(range(2, 10))
    # recall within 2 points of the best down to 5 fields (decisions is worth 0.05/0.811 = 6 points)
    rec = result.frontier[result.recommended]
    assert set(rec.fields) == {"intent", "decisions", "bugs", "artifacts", "numbers"}
    assert load_candidate(out).fields == rec.fields and result.out_prompt == str(out)


def test_tune_needs_a_prompt_with_fields(tmp_path):
    (tmp_path / "p.j2").write_text("{#-\nname: p\n-#}\nSummarise.\n")
    with pytest.raises(Exception, match="at least two schema fields"):
        tune(TuneConfig(prompt=str(tmp_path / "p.j2")), log=lambda m: None)


def test_tune_cli_offline_prints_the_frontier_writes_the_prompt_and_the_report_shows_it(tmp_path, capsys):
    """End to end on one trace with a four-field cut of recall_max (fast): real recall runs."""
    small = write_variant(load_candidate(RECALL_MAX), ("intent", "bugs", "artifacts", "numbers"), tmp_path / "prompts", "small")
    run_dir = tmp_path / "run"
    code = main(["tune", str(small), "--traces", str(ROOT / "fixtures" / "traces" / "synth-dep-upgrade-001.json.gz"),
                 "--labels", str(ROOT / "labels" / "synth-dep-upgrade-001.yaml"), "--work-dir", str(tmp_path / "work"),
                 "--out", str(tmp_path / "small-tuned.j2"), "--results", str(run_dir)])
    assert code == 0
    out = capsys.readouterr().out
    assert "step  fields  removed" in out and "<- recommended" in out and "(all)" in out
    assert out.count("\n   ") >= 4  # start + 3 rounds
    tuned = load_candidate(tmp_path / "small-tuned.j2")
    data = json.loads((run_dir / "tune.json").read_text())
    rec = data["frontier"][data["recommended"]]
    assert list(tuned.fields) == rec["fields"] and tuned.name == "small-tuned"
    assert all(p["recall"] is not None and p["summary_tokens"] > 0 for p in data["frontier"])
    # the report of a run directory holding tune.json shows the frontier table and plot
    (run_dir / "results.json").write_text((tmp_path / "work" / "round-01" / "results.json").read_text())
    assert main(["report", str(run_dir)]) == 0
    html = (run_dir / "report.html").read_text()
    assert 'id="tune-table"' in html and "Recall-first tuning frontier" in html


def test_tune_horizon_suite_measures_completion_through_the_long_horizon_task(tmp_path):
    """Real long-horizon runs (one small world, offline scripted agent): completion is a rate
    per field set and the recall columns stay empty."""
    small = write_variant(load_candidate(ROOT / "prompts" / "handoff.j2"), ("intent", "next_step"), tmp_path / "p", "two")
    result = tune(TuneConfig(prompt=str(small), suite="horizon", worlds=["build-01"], work_dir=str(tmp_path / "w")),
                  out_prompt=tmp_path / "two-tuned.j2", log=lambda m: None)
    assert len(result.frontier) == 2 and len(result.tried) == 3
    for p in result.frontier:
        assert p.completion in (0.0, 1.0) and p.recall is None
    assert "scripted agent" in " ".join(result.notes)
    assert load_candidate(tmp_path / "two-tuned.j2").fields == result.frontier[result.recommended].fields
