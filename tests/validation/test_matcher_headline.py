"""validate-matchers' headline (test part first, bootstrap by trace, tune part cross-validated,
key-presence reference) and `--judge-model` over real HTTP against the loopback server with
scripted right, wrong, unquoted and malformed judge answers; uncertain counts in aggregates."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from compaction_eval.loopback import LoopbackServer
from compaction_eval.validation.headline import NO_TEST_PART, format_headline, validate_all
from conftest import ROOT

CI_LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"
DUMMY_KEY = "sk-ant-DUMMY-KEY-0123456789"
LINES = {
    "intent": "Goal: get the nightly CI on main green again (run #4812) by fixing the root cause before the release cut.",
    "no-test-edits": "Do not modify anything under tests/; report a wrong test instead.",
    "fail-count": "Nightly run #4812: 14 failed, 347 passed.",
}
KEPT = set(LINES)
FACT_IDS = ["answer-format", "intent", "keep-api", "no-test-edits", "fail-count", "failing-error", "root-cause",
            "breaking-commit", "plan-revert"]
MODES = ("right", "wrong", "unquoted", "malformed")


def _summary(mode: str, split: str) -> str:
    facts = ", ".join(f"{f}: [{'kept' if f in KEPT else 'lost'}, x]" for f in FACT_IDS)
    text = "\n".join(f"      - {line}" for line in LINES.values()) + f"\n      - Marker {mode}."
    return f"""  - id: {mode}
    point: 31
    style: terse
    split: {split}
    text: |
{text}
    facts: {{{facts}}}
    avoid: {{ci-secret: [absent, "no token"]}}
    irrelevant: ["Marker {mode}"]
"""


def _gold(tmp_path: Path, split: str) -> Path:
    d = tmp_path / f"gold-{split}"
    d.mkdir()
    body = "".join(_summary(m, split) for m in MODES)
    (d / "g.yaml").write_text(f"schema: compaction-eval/gold@1\ntrace: synth-ci-broken-001\nlabels: {CI_LABELS}\n"
                              f"judged_by: human\nsplit: tune\nsummaries:\n{body}", encoding="utf-8")
    return d


def script(summary: str, facts: list[dict]) -> str:
    """Right: the human verdicts with real quotes. Wrong: every verdict flipped, quoting a real
    line. Unquoted: right verdicts, no quotes. Malformed: not JSON at all."""
    mode = next(m for m in MODES if f"Marker {m}." in summary)
    if mode == "malformed":
        return "I think they are all kept, more or less."
    out = []
    for f in facts:
        kept = f["id"] in KEPT
        if mode == "wrong":
            kept = not kept
        quote = LINES.get(f["id"], LINES["fail-count"]) if kept and mode != "unquoted" else ""
        out.append({"id": f["id"], "kept": kept, "quote": quote, "reason": mode})
    return json.dumps(out)


def test_no_test_part_says_so_and_keeps_tune_figures_out_of_the_headline(tmp_path):
    from compaction_eval.cli.validation import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    out = tmp_path / "res" / "m.json"
    args = parser.parse_args(["validate-matchers", "--gold", str(_gold(tmp_path, "tune")), "--out", str(out), "--format", "json"])
    assert args.func(args) == 0
    h = json.loads(out.read_text())["headline"]
    assert h["test"] is None and h["status"] == NO_TEST_PART
    # one tune trace: no grouped cross-validation possible, said instead of a figure
    assert h["tune_cross_validated"] is None and "fewer than 2 tune traces" in h["tune_note"]
    assert NO_TEST_PART in format_headline(h) and "not cross-validated" in format_headline(h)


def test_judge_model_over_http_scores_scripted_verdicts_on_the_test_part(tmp_path, monkeypatch):
    from inspect_ai.model import get_model

    monkeypatch.setenv("ANTHROPIC_API_KEY", DUMMY_KEY)
    with LoopbackServer(judge_script=script) as server:
        model = get_model("anthropic/claude-test", base_url=server.url, api_key=DUMMY_KEY)
        result = validate_all(_gold(tmp_path, "test"), judge_model=model, resamples=200)
        judge_requests = [r for r in server.served()]
    assert len(judge_requests) == len(MODES)  # one generate call per test summary
    h = result["headline"]
    assert h["status"] == "test part" and h["test"]["n"] == 4 * len(FACT_IDS)
    assert h["test"]["by_source"] == {"synthetic": h["test"]["by_source"]["synthetic"]}
    assert h["test"]["kappa_ci"] is not None and h["test"]["keys_kappa"] is not None
    j = h["judge_test"]
    # right: 9 agree; wrong: 9 flipped (6 false keeps on a real quote, 3 false misses);
    # unquoted: its 3 keeps stand (the judge tier: flagged, not overruled); malformed: nothing
    # kept (3 false misses, the summary marked)
    assert (j["false_keeps"], j["false_misses"]) == (6, 6)
    assert j["accuracy"] == pytest.approx((36 - 12) / 36, abs=1e-4)
    (part,) = result["judge_rounds"]
    assert part["part"] == "test part" and part["n"] == 36 and part["summaries"] == 4
    # with the quote check as an override the unquoted keeps are lost: the choice stays visible
    assert (part["judge_checked"]["false_keeps"], part["judge_checked"]["false_misses"]) == (6, 9)
    assert part["judge_overruled_by_checks"] == 3 and part["overruled_kept_in_gold"] == 3
    assert result["judge_requests"] == 4 and result["judge_unanswered"] == len(FACT_IDS)  # the malformed answer
    text = format_headline(h)
    assert "LLM judge" in text and "key-presence only" in text


def test_without_a_test_part_the_judge_is_measured_on_the_last_blind_round(tmp_path, monkeypatch):
    """Once a round's test part has joined the tune part, --judge-model still has out-of-sample
    data: the judge was tuned on nothing, and that round's matcher figure is on record."""
    from inspect_ai.model import get_model

    from compaction_eval.validation.headline import part_table
    from compaction_eval.validation.rounds import record_round

    gold = _gold(tmp_path, "round2")
    n = 4 * len(FACT_IDS)
    test = part_table([("t", "intent", "terse", "synthetic", i % 2 == 0, i % 3 == 0, True, None) for i in range(n)], 50)
    record_round({"headline": {"test": test}}, gold, round_no=2, split="round2", frozen_at="abc1234")
    monkeypatch.setenv("ANTHROPIC_API_KEY", DUMMY_KEY)
    with LoopbackServer(judge_script=script) as server:
        model = get_model("anthropic/claude-test", base_url=server.url, api_key=DUMMY_KEY)
        result = validate_all(gold, judge_model=model, resamples=100)
        served = server.served()
    h = result["headline"]
    assert h["test"] is None and h["last_blind_round"]["frozen_at"] == "abc1234" and h["last_blind_round"]["stale"] is False
    assert len(served) == len(MODES) and h["judge_on"] == "round 2 test part (split: round2)"
    assert h["judge_test"]["n"] == n and (h["judge_test"]["false_keeps"], h["judge_test"]["false_misses"]) == (6, 6)
    text = format_headline(h)
    assert "last blind round: round 2" in text and "round 2 test part (split: round2) (LLM judge tier" in text


def test_uncertain_counts_per_sample_and_prompt_reach_the_leaderboard():
    from compaction_eval.recall.aggregate import summarise_prompts, uncertain_count
    from compaction_eval.report.tables import format_leaderboard

    def sample(trace, flags):
        return {"prompt": "p", "trace": trace, "recall": 0.5, "precision": 1.0, "context_recall": 0.5,
                "recall_by_category": {}, "critical_lost": [], "distortions": [], "avoid": [], "compression": 2.0,
                "summary_tokens": 10, "budget_truncated": False, "input_tokens": 1, "output_tokens": 1,
                "facts": [{"id": f"f{i}", "kept": True, "uncertain": u} for i, u in enumerate(flags)]}

    samples = [sample("a", [True, False, True]), sample("b", [False])]
    assert [uncertain_count(s) for s in samples] == [2, 0]
    rows = summarise_prompts(samples)
    assert rows[0]["uncertain"] == 2 and rows[0]["verdicts"] == 4
    board = format_leaderboard({"prompts": rows, "model": "m", "offline_stand_in": False, "config": {"budget": 1},
                                "corpus": {"traces": 2, "synthetic_traces": 0, "real_traces": 2, "points": 2, "facts": 4}})
    assert "uncert" in board and "n uncertain" in board
