"""Bootstrap intervals and atomic result directories."""

from __future__ import annotations

import json

import numpy as np
import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.runfiles import (
    read_results,
    staged_run_dir,
    write_json_atomic,
)
from compaction_eval.stats.bootstrap import bootstrap_mean_ci


def test_bootstrap_interval_covers_the_mean_and_narrows_with_n():
    rng = np.random.default_rng(1)
    small = rng.binomial(1, 0.7, size=20).astype(float)
    large = rng.binomial(1, 0.7, size=2000).astype(float)
    lo_s, hi_s = bootstrap_mean_ci(small)
    lo_l, hi_l = bootstrap_mean_ci(large)
    assert lo_s <= small.mean() <= hi_s and lo_l <= large.mean() <= hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s) / 4
    assert bootstrap_mean_ci(small) == (lo_s, hi_s)  # seeded: reproducible


def test_bootstrap_coverage_is_about_95_percent():
    rng = np.random.default_rng(7)
    hits = 0
    for i in range(200):
        x = rng.normal(0.5, 0.2, size=40)
        lo, hi = bootstrap_mean_ci(x, resamples=500, seed=i)
        hits += lo <= 0.5 <= hi
    assert 0.88 <= hits / 200 <= 0.99


def test_degenerate_inputs():
    assert bootstrap_mean_ci([0.4]) == (0.4, 0.4)
    assert bootstrap_mean_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    lo, hi = bootstrap_mean_ci([])
    assert np.isnan(lo) and np.isnan(hi)


def test_staged_dir_appears_only_on_success(tmp_path):
    final = tmp_path / "run1"
    with pytest.raises(RuntimeError):
        with staged_run_dir(final) as stage:
            (stage / "partial.json").write_text("{}")
            raise RuntimeError("boom")
    assert not final.exists() and list(tmp_path.iterdir()) == []
    with staged_run_dir(final) as stage:
        write_json_atomic(stage / "results.json", {"schema": "compaction-eval/results@1", "samples": []})
    assert read_results(final)["schema"] == "compaction-eval/results@1"
    assert [p.name for p in tmp_path.iterdir()] == ["run1"]


def test_existing_run_dir_is_refused(tmp_path):
    (tmp_path / "run1").mkdir()
    with pytest.raises(ContractError, match="already exists"):
        with staged_run_dir(tmp_path / "run1"):
            pass


def test_read_results_rejects_other_files(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"schema": "x"}))
    with pytest.raises(ContractError, match="not a compaction-eval/results@1 file"):
        read_results(tmp_path)
    with pytest.raises(ContractError, match="results file not found"):
        read_results(tmp_path / "nope")


def test_prompt_rows_split_real_from_synthetic_traces():
    from compaction_eval.recall.aggregate import summarise_prompts

    def sample(recall, synthetic):
        return {"prompt": "p", "recall": recall, "precision": 0.5, "context_recall": 1.0, "recall_by_category": {},
                "critical_lost": [], "distortions": [], "avoid": [], "compression": 10.0, "summary_tokens": 100,
                "budget_truncated": False, "input_tokens": 1, "output_tokens": 1, "synthetic": synthetic}

    [row] = summarise_prompts([sample(0.9, True), sample(0.8, True), sample(0.3, False)])
    assert row["recall_by_origin"]["synthetic"]["mean"] == pytest.approx(0.85)
    assert row["recall_by_origin"]["real"]["mean"] == pytest.approx(0.3) and row["recall_by_origin"]["real"]["n"] == 1
    [only] = summarise_prompts([sample(0.9, True)])
    assert set(only["recall_by_origin"]) == {"synthetic"}
