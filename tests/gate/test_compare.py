"""Paired comparison of two fact-recall runs (compaction_eval.gate.compare).

The first test scores real summaries of a real trace (mini-swe-agent django__django-11087,
labels/real) to build two runs; the others build results@1 documents by hand so that each
rule of the verdict is exercised on its own.
"""

from __future__ import annotations

import copy
import re
import zlib
from pathlib import Path

import pytest

from compaction_eval.contracts.labels import load_labels
from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.runfiles import write_json_atomic
from compaction_eval.corpus.load import read_trace
from compaction_eval.gate.compare import (
    PASS,
    REGRESSION,
    CorpusMismatch,
    compare_dirs,
    compare_runs,
    paired_delta,
)
from compaction_eval.recall.scoring import score_summary
from conftest import ROOT, real_trace

# ----------------------------------------------------------------------------- builders

CATS = ["artifact", "number", "decision", "attempt"]


def fact(fid: str, category: str, kept: bool, critical: bool = False) -> dict:
    return {"id": fid, "category": category, "kept": kept, "matcher": "literal", "evidence": None,
            "weight": 1.0, "critical": critical}


def sample(trace: str, point: int, prompt: str, facts: list[dict], epoch: int = 1) -> dict:
    by_cat: dict[str, list[bool]] = {}
    for f in facts:
        by_cat.setdefault(f["category"], []).append(f["kept"])
    return {
        "trace": trace, "point": point, "prompt": prompt, "epoch": epoch,
        "recall": sum(f["kept"] for f in facts) / len(facts),
        "recall_by_category": {c: sum(v) / len(v) for c, v in by_cat.items()},
        "precision": 0.5, "facts": facts, "avoid": [], "distortions": [],
        "critical_lost": [f["id"] for f in facts if f["critical"] and not f["kept"]],
    }


def run(name: str, samples: list[dict]) -> dict:
    return {"schema": "compaction-eval/results@1", "suite": "fact_recall", "run": name, "samples": samples,
            "prompts": [{"prompt": p} for p in dict.fromkeys(s["prompt"] for s in samples)]}


def corpus_run(name: str, n_samples: int = 20, prompts=("handoff", "terse"), drop=lambda t, p, prompt, fid: False,
               critical: set[str] = frozenset()) -> dict:
    """n_samples (trace, point) samples with 8 facts each (2 per category); every fact kept
    unless `drop(trace, point, prompt, fact id)` says it is lost."""
    samples = []
    for i in range(n_samples):
        trace, point = f"trace-{i // 2}", 40 + 20 * (i % 2)
        for prompt in prompts:
            facts = [
                fact(fid, cat, not drop(trace, point, prompt, fid), fid in critical)
                for cat in CATS for fid in (f"{cat}-a", f"{cat}-b")
            ]
            samples.append(sample(trace, point, prompt, facts))
    return run(name, samples)


# ----------------------------------------------------------------------------- real summaries


def test_real_summaries_of_a_real_trace_pair_by_fact():
    """Two 'runs' scoring real summaries of django__django-11087 at its labelled points: the
    candidate's summary is the baseline's with every line naming a file path removed, so the
    candidate loses exactly the path facts the baseline kept, and nothing else changes."""
    trace, problems = read_trace(real_trace("django__django-11087"))
    assert trace is not None, problems
    labels = load_labels(ROOT / "labels" / "real" / "django__django-11087.yaml")
    base_samples, cand_samples = [], []
    removed_any = False
    for at in labels.points:
        # an extract of the history: every line of every message before the point
        lines = [ln.strip() for t in trace.texts[:at] for ln in t.splitlines() if ln.strip()]
        full = "\n".join(f"- {ln}" for ln in lines)
        no_paths = "\n".join(f"- {ln}" for ln in lines if not re.search(r"\w/\w+\.py", ln))
        removed_any |= no_paths != full
        for facts_text, bucket in ((full, base_samples), (no_paths, cand_samples)):
            score = score_summary(facts_text, labels, trace, at).to_json()
            bucket.append({"trace": trace.id, "point": at, "prompt": "extract", "epoch": 1, **score})
    assert removed_any
    baseline, candidate = run("base", base_samples), run("cand", cand_samples)

    cmp = compare_runs(baseline, candidate)
    pc = cmp.prompt("extract")
    assert pc.recall.n == len(labels.points)
    assert pc.recall.delta < 0
    # what was lost are facts kept by the baseline and not by the candidate, sample by sample
    assert pc.lost, "removing every path line must lose some fact"
    for change in pc.lost:
        b = next(s for s in base_samples if s["point"] == change.point)
        c = next(s for s in cand_samples if s["point"] == change.point)
        assert next(f for f in b["facts"] if f["id"] == change.fact)["kept"]
        assert not next(f for f in c["facts"] if f["id"] == change.fact)["kept"]
    assert not pc.gained
    # the same comparison the other way round gains exactly what was lost
    back = compare_runs(candidate, baseline).prompt("extract")
    assert {(f.point, f.fact) for f in back.gained} == {(f.point, f.fact) for f in pc.lost}
    assert back.recall.delta == pytest.approx(-pc.recall.delta)


# ----------------------------------------------------------------------------- verdict rules


def test_identical_runs_pass_with_zero_deltas():
    base = corpus_run("a", drop=lambda t, p, pr, f: f == "attempt-b")
    cmp = compare_runs(base, copy.deepcopy(base))
    assert cmp.verdict == PASS and cmp.passed and cmp.reasons == [] and cmp.warnings == []
    for pc in cmp.prompts:
        assert pc.recall.delta == 0 and pc.recall.ci == (0.0, 0.0)
        assert pc.lost == [] and pc.gained == []
    assert cmp.samples == 20 and [p.prompt for p in cmp.prompts] == ["handoff", "terse"]


def test_a_consistent_drop_is_a_regression_with_the_lost_facts_and_their_samples():
    base = corpus_run("base")
    cand = corpus_run("cand", drop=lambda t, p, prompt, f: prompt == "handoff" and f == "number-a")
    cmp = compare_runs(base, cand)
    assert cmp.verdict == REGRESSION
    pc = cmp.prompt("handoff")
    assert pc.recall.delta == pytest.approx(-1 / 8)
    assert pc.recall.ci[1] < 0
    assert pc.by_category["number"].delta == pytest.approx(-0.5)
    assert len(pc.lost) == 20 and {(f.fact, f.category) for f in pc.lost} == {("number-a", "number")}
    assert {(f.trace, f.point) for f in pc.lost} == {(f"trace-{i // 2}", 40 + 20 * (i % 2)) for i in range(20)}
    assert any(r.startswith("handoff: recall -0.125") for r in cmp.reasons)
    assert any("handoff: number recall -0.500" in r for r in cmp.reasons)
    # the other prompt did not change
    assert cmp.prompt("terse").recall.delta == 0 and not cmp.prompt("terse").regression


def test_a_drop_within_noise_passes_with_a_warning():
    """One fact lost in one sample of twenty: recall drops by 0.125/20 on average but by
    much more in that sample; beyond a tiny tolerance, yet the interval includes zero."""
    base = corpus_run("base")
    cand = corpus_run("cand", drop=lambda t, p, prompt, f: (t, p, prompt, f) == ("trace-3", 40, "handoff", "decision-a"))
    cmp = compare_runs(base, cand, tolerance=0.001)
    pc = cmp.prompt("handoff")
    assert pc.recall.delta < -0.001 and pc.recall.ci[0] < 0 <= pc.recall.ci[1]
    assert cmp.verdict == PASS
    assert any("within noise" in w and w.startswith("handoff: recall") for w in cmp.warnings)
    assert [(f.trace, f.point, f.fact) for f in pc.lost] == [("trace-3", 40, "decision-a")]


def test_losing_a_critical_fact_fails_by_itself():
    crit = {"artifact-a"}
    base = corpus_run("base", critical=crit)
    cand = corpus_run("cand", critical=crit, drop=lambda t, p, prompt, f: (t, p, prompt, f) == ("trace-0", 60, "terse", "artifact-a"))
    cmp = compare_runs(base, cand)
    assert cmp.verdict == REGRESSION
    pc = cmp.prompt("terse")
    assert [(f.fact, f.trace, f.point, f.critical) for f in pc.critical_lost] == [("artifact-a", "trace-0", 60, True)]
    assert cmp.reasons == ["terse: critical fact artifact-a (artifact) lost at trace-0@60"]


def test_a_category_can_regress_while_overall_recall_stays_within_tolerance():
    # every sample loses one of its two number facts: overall -1/8 = -0.125 but tolerance 0.2
    base = corpus_run("base")
    cand = corpus_run("cand", drop=lambda t, p, prompt, f: prompt == "handoff" and f == "number-b")
    cmp = compare_runs(base, cand, tolerance=0.2, category_tolerance=0.05)
    assert cmp.verdict == REGRESSION
    assert cmp.reasons == [r for r in cmp.reasons if "number recall" in r] and len(cmp.reasons) == 1


def test_gains_are_listed_and_do_not_fail():
    base = corpus_run("base", drop=lambda t, p, prompt, f: f.startswith("attempt"))
    cand = corpus_run("cand")
    cmp = compare_runs(base, cand)
    assert cmp.verdict == PASS
    pc = cmp.prompt("handoff")
    assert pc.recall.delta == pytest.approx(0.25) and pc.recall.significant
    assert len(pc.gained) == 40 and not pc.lost


def test_the_pairing_is_by_sample():
    """Samples differ a lot from each other but the candidate is uniformly 1/8 worse: a
    paired interval is exactly that difference; an unpaired one would span zero."""
    hard = {f"trace-{i}" for i in range(0, 10, 2)}

    def base_drop(t, p, prompt, f):
        return t in hard and f.endswith("-a")

    base = corpus_run("base", drop=base_drop)
    cand = corpus_run("cand", drop=lambda t, p, prompt, f: base_drop(t, p, prompt, f) or f == "attempt-b")
    pc = compare_runs(base, cand).prompt("handoff")
    assert pc.recall.delta == pytest.approx(-0.125)
    assert pc.recall.ci == pytest.approx((-0.125, -0.125))


def test_results_are_reproducible():
    base = corpus_run("base")
    cand = corpus_run("cand", drop=lambda t, p, prompt, f: zlib.crc32(f"{t}{p}{f}".encode()) % 5 == 0 and prompt == "handoff")
    a, b = compare_runs(base, cand), compare_runs(base, cand)
    assert a.to_json() == b.to_json()


def test_epochs_are_averaged_and_a_fact_is_kept_by_majority():
    facts_kept = [fact("f1", "artifact", True), fact("f2", "number", True)]
    facts_lost = [fact("f1", "artifact", False), fact("f2", "number", True)]
    base = run("base", [sample("t", 10, "p", facts_kept, 1), sample("t", 10, "p", facts_kept, 2)])
    # candidate keeps f1 in one epoch of three: lost by majority
    cand = run("cand", [sample("t", 10, "p", facts_lost, 1), sample("t", 10, "p", facts_kept, 2), sample("t", 10, "p", facts_lost, 3)])
    pc = compare_runs(base, cand).prompt("p")
    assert pc.recall.n == 1
    assert pc.recall.candidate == pytest.approx((0.5 + 1 + 0.5) / 3)
    assert [(f.fact, f.baseline_kept, round(f.candidate_kept, 3)) for f in pc.lost] == [("f1", 1.0, 0.333)]


def test_a_prompt_subset_is_compared_on_the_common_prompts():
    base = corpus_run("base", prompts=("handoff", "terse", "recall_max"))
    cand = corpus_run("cand", prompts=("terse", "new_prompt"))
    cmp = compare_runs(base, cand)
    assert [p.prompt for p in cmp.prompts] == ["terse"]
    assert cmp.only_in_baseline == ["handoff", "recall_max"] and cmp.only_in_candidate == ["new_prompt"]
    assert any("only in the baseline" in w and "handoff" in w for w in cmp.warnings)


# ----------------------------------------------------------------------------- refusals


def test_runs_on_different_traces_are_refused_with_a_clear_message():
    base = corpus_run("base", n_samples=20)
    cand = corpus_run("cand", n_samples=18)  # trace-9 missing
    with pytest.raises(CorpusMismatch) as exc:
        compare_runs(base, cand)
    message = "\n".join(map(str, exc.value.problems))
    assert "different corpora" in str(exc.value)
    assert "only in baseline: trace-9@40, trace-9@60" in message
    assert isinstance(exc.value, ContractError)  # the CLI reports it as unusable input (exit 2)


def test_runs_with_different_labelled_facts_are_refused():
    base = corpus_run("base")
    cand = copy.deepcopy(base)
    cand["run"] = "cand"
    for s in cand["samples"]:
        if (s["trace"], s["point"]) == ("trace-2", 60):
            s["facts"].append(fact("new-fact", "intent", True))
    with pytest.raises(CorpusMismatch) as exc:
        compare_runs(base, cand)
    assert any("trace-2@60" in p.place and "facts only in candidate: new-fact" in p.message for p in exc.value.problems)


def test_no_common_prompt_is_refused():
    with pytest.raises(CorpusMismatch, match="no prompt in common"):
        compare_runs(corpus_run("a", prompts=("x",)), corpus_run("b", prompts=("y",)))


def test_paired_delta_checks_lengths_and_handles_empty():
    with pytest.raises(ValueError):
        paired_delta([1.0], [1.0, 0.5])
    d = paired_delta([], [])
    assert d.n == 0 and d.delta != d.delta  # nan


def test_compare_dirs_reads_run_directories(tmp_path: Path):
    for name, drop in (("a", lambda *a: False), ("b", lambda t, p, prompt, f: f == "number-a")):
        (tmp_path / name).mkdir()
        write_json_atomic(tmp_path / name / "results.json", corpus_run(name, drop=drop))
    cmp = compare_dirs(tmp_path / "a", tmp_path / "b")
    assert cmp.baseline_run == "a" and cmp.candidate_run == "b" and cmp.verdict == REGRESSION
