"""Verdict tiers: with `--judge-model` the judge decides every fact of a sample (one request
per sample, over real HTTP against the loopback server), the matcher's verdict stays beside it
and its disagreements are counted in results.json, the terminal table and the report; an
unreadable judge answer marks its sample instead of crashing the run; the gate refuses to
compare runs of different tiers."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from compaction_eval.cli.main import main
from compaction_eval.contracts.runfiles import write_json_atomic
from compaction_eval.contracts.settings import CompactionSettings
from compaction_eval.loopback import LoopbackServer
from compaction_eval.recall.run import RecallConfig, run_recall
from conftest import ROOT

DUMMY_KEY = "sk-ant-DUMMY-KEY-0123456789"
TRACE = ROOT / "fixtures" / "traces" / "synth-dep-upgrade-001.json.gz"
LABELS = ROOT / "labels" / "synth-dep-upgrade-001.yaml"
PROMPTS = [ROOT / "prompts" / "handoff.j2", ROOT / "prompts" / "terse.j2"]


class KeepAllOnceMalformed:
    """A judge that keeps every fact it is asked about (no quote: flagged, not overruled),
    except that its first answer is not JSON. Records the facts of every request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: list[list[str]] = []

    def __call__(self, summary: str, facts: list[dict]) -> str:
        with self.lock:
            self.asked.append([f["id"] for f in facts])
            first = len(self.asked) == 1
        if first:
            return "All of them survived, I think."
        return json.dumps([{"id": f["id"], "kept": True, "quote": "", "reason": "stated"} for f in facts])


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """One offline-compacted recall run judged by the loopback server's scripted judge."""
    out = tmp_path_factory.mktemp("tiers") / "judged"
    script = KeepAllOnceMalformed()
    mp = pytest.MonkeyPatch()
    with LoopbackServer(judge_script=script) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", DUMMY_KEY)
        try:
            config = RecallConfig(traces=[str(TRACE)], labels=[str(LABELS)], prompts=[str(p) for p in PROMPTS],
                                  judge_model="anthropic/claude-test", compaction=CompactionSettings(shape="messages"),
                                  max_retries=0)
            results = run_recall(config, out)
            served = server.served()
        finally:
            mp.undo()
    return results, script, served, out


def test_the_judge_decides_every_category_with_one_request_per_sample(judged_run):
    results, script, served, _out = judged_run
    samples = results["samples"]
    assert len(script.asked) == len(samples) == len(served)  # one request per sample
    for s in samples:
        assert any(set(ids) == {f["id"] for f in s["facts"]} for ids in script.asked)  # every category: the sample's every fact
    categories = {f["category"] for s in samples for f in s["facts"]}
    assert {"artifact", "number"} <= categories  # exact categories went to the judge too
    assert all(f["tier"] == "judge" and f["matcher"] == "judge" and "matcher_kept" in f for s in samples for f in s["facts"])


def test_an_unreadable_answer_marks_its_sample_and_keeps_nothing(judged_run):
    results, _script, _served, _out = judged_run
    broken = [s for s in results["samples"] if s.get("judge_error")]
    assert len(broken) == 1
    (s,) = broken
    assert s["recall"] == 0.0 and not any(f["kept"] for f in s["facts"])
    assert all(f["judge_answered"] is False and f["note"].startswith("unreadable judge answer") for f in s["facts"])
    assert s["judge_unanswered"] == len(s["facts"])
    rows = {p["prompt"]: p for p in results["prompts"]}
    assert rows[s["prompt"]]["judge_unreadable"] == 1


def test_the_judges_verdict_stands_its_checks_are_flags_and_disagreements_are_counted(judged_run):
    results, _script, _served, _out = judged_run
    answered = [s for s in results["samples"] if not s.get("judge_error")]
    assert answered and all(s["recall"] == 1.0 for s in answered)  # kept without a quote: not overruled
    for s in answered:
        assert all(f["kept"] and f["quote_found"] is False for f in s["facts"])
        assert s["matcher_disagreements"] == sum(1 for f in s["facts"] if not f["matcher_kept"])
    assert sum(s["matcher_disagreements"] for s in answered) > 0  # the extractive summaries lose facts the matcher sees
    assert results["tier"] == "judge" and results["judge_model"] == "anthropic/claude-test"
    # which tier produced each figure: the summary's fact verdicts are the judge's, the rest the matcher's
    assert results["figure_tiers"]["recall"] == "judge" and results["figure_tiers"]["context_recall"] == "matcher"
    assert all(s["context"]["tier"] == "matcher" for s in results["samples"])
    for p in results["prompts"]:
        assert p["tier"] == "judge" and p["figure_tiers"] == results["figure_tiers"]
        assert p["matcher_disagreements"] == sum(s["matcher_disagreements"] for s in results["samples"] if s["prompt"] == p["prompt"])


def test_the_table_and_the_report_say_which_tier_produced_each_figure(judged_run, tmp_path):
    from compaction_eval.report.render import render_report
    from compaction_eval.report.tables import format_leaderboard

    results, _script, _served, out = judged_run
    table = format_leaderboard(results)
    assert "verdicts: judge tier (LLM judge anthropic/claude-test decides every fact" in table
    header = next(line for line in table.splitlines() if line.startswith("prompt"))
    assert header.split()[:4] == ["prompt", "tier", "recall", "(95%"] and "m.disagree" in header
    rows = [line.split() for line in table.splitlines() if line.split()[:1] in (["handoff"], ["terse"])]
    assert {r[1] for r in rows} == {"judge"}
    html = render_report(out, out=tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="leaderboard-tier"' in html and "judge tier (LLM judge anthropic/claude-test" in html
    assert 'data-k="matcher-disagreements"' in html and 'id="run-tier"' in html
    assert 'data-k="matcher-disagrees"' in html  # per fact in the drill-down: "matcher: lost" beside the judge's keep


def test_a_matcher_tier_run_says_so_and_keeps_its_verdicts_free_of_judge_fields(tmp_path):
    from compaction_eval.report.tables import format_leaderboard

    config = RecallConfig(traces=[str(TRACE)], labels=[str(LABELS)], prompts=[str(PROMPTS[0])])
    results = run_recall(config, tmp_path / "offline")
    assert results["tier"] == "matcher" and results["judge_model"] is None
    assert all(s["tier"] == "matcher" and "matcher_disagreements" not in s for s in results["samples"])
    assert all(f["tier"] == "matcher" and "matcher_kept" not in f for s in results["samples"] for f in s["facts"])
    assert all(p["tier"] == "matcher" for p in results["prompts"])
    assert "verdicts: matcher tier" in format_leaderboard(results) and "m.disagree" not in format_leaderboard(results)


# ---------------------------------------------------------------------------- the gate


def _doc(tmp_path: Path, name: str, judge: str | None) -> Path:
    from test_compare import corpus_run

    doc = corpus_run(name)
    doc["config"] = {"model": "extractive/default", "budget": 800, "keep_last": 4, "shape": "inline", "focus": None, "judge_model": judge}
    doc["model"] = "extractive/default"
    d = tmp_path / name
    d.mkdir()
    write_json_atomic(d / "results.json", doc)
    return d


@pytest.mark.parametrize("allow", [False, True])
def test_the_gate_refuses_runs_of_different_tiers_with_one_line(tmp_path, capsys, allow):
    base = _doc(tmp_path, "base", None)
    cand = _doc(tmp_path, "cand", "anthropic/claude-judge")
    code = main(["gate", "--baseline", str(base), "--candidate", str(cand)] + (["--allow-setting-changes"] if allow else []))
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if "tier" in line]
    assert len(lines) == 1
    assert "verdicts of the judge tier cannot be compared with a baseline of the matcher tier" in lines[0]


def test_the_gate_compares_runs_of_the_same_tier(tmp_path):
    base = _doc(tmp_path, "base", "anthropic/claude-judge")
    cand = _doc(tmp_path, "cand", "anthropic/claude-judge")
    assert main(["gate", "--baseline", str(base), "--candidate", str(cand)]) == 0
