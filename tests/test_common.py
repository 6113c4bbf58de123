"""Invariance tests across the flow, in the spirit of scikit-learn's test_common.py.

Properties every part must keep whatever the data: a run compared with itself changes
nothing, aggregates do not depend on the order samples arrive in, and every matcher gives
the same verdicts in every process.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_eval.contracts.runfiles import read_results
from compaction_eval.gate.compare import compare_runs, paired_delta
from compaction_eval.gate.rules import gate_runs
from compaction_eval.recall.aggregate import summarise_prompts
from compaction_eval.stats.bootstrap import bootstrap_mean_ci

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "results/baselines/main"


@pytest.fixture(scope="module")
def results():
    return read_results(BASELINE)


def test_a_run_gated_against_itself_passes_with_zero_change(results):
    comparison = compare_runs(results, results)
    assert comparison.prompts
    for prompt in comparison.prompts:
        assert prompt.recall.delta == 0 and prompt.recall.ci == (0.0, 0.0)
        assert not prompt.lost and not prompt.gained
        assert all(d.delta == 0 for d in prompt.by_category.values())
    verdict = gate_runs(results, results)
    assert verdict.exit_code == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_aggregates_do_not_depend_on_sample_order(results, seed):
    samples = list(results["samples"])
    shuffled = samples[:]
    random.Random(seed).shuffle(shuffled)
    assert shuffled != samples
    assert summarise_prompts(shuffled) == summarise_prompts(samples)


@pytest.mark.parametrize("seed", [1, 2])
def test_intervals_do_not_depend_on_value_order(seed):
    values = [random.Random(seed + i).random() for i in range(40)]
    reordered = values[::-1]
    assert bootstrap_mean_ci(values) == bootstrap_mean_ci(reordered)
    pairs = list(zip(values, reordered, strict=True))
    random.Random(seed).shuffle(pairs)
    b, c = zip(*pairs, strict=True)
    assert paired_delta(values, reordered).ci == paired_delta(list(b), list(c)).ci


_SCORE_EVERY_SAMPLE = """
import json, sys
from compaction_eval.corpus.load import read_trace
from compaction_eval.contracts.labels import load_labels
from compaction_eval.recall.scoring import score_summary
results = json.load(open(sys.argv[1]))
out = []
traces, labels = {}, {}
for s in results["samples"][:40]:
    tid = s["trace"]
    if tid not in traces:
        traces[tid] = read_trace(sys.argv[2] + "/fixtures/traces/" + tid + ".json.gz")[0]
        labels[tid] = load_labels(sys.argv[2] + "/labels/" + tid + ".yaml")
    score = score_summary(s["summary"], labels[tid], traces[tid], s["point"]).to_json()
    out.append(score)
print(json.dumps(out, sort_keys=True))
"""


def test_every_matcher_gives_the_same_verdicts_in_every_process():
    """Hash seeds change set and dict iteration order across processes; verdicts must not."""
    outputs = []
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-c", _SCORE_EVERY_SAMPLE, str(BASELINE / "results.json"), str(ROOT)],
            capture_output=True, text=True, env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, check=True,
        )
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    scored = outputs[0]
    assert len(scored) == 40 and any(f["kept"] for s in scored for f in s["facts"])
    assert any(not f["kept"] for s in scored for f in s["facts"])
