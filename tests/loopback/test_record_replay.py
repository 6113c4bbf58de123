"""`--record FILE` over real HTTP (the anthropic SDK against the loopback server), then the
same run replayed from the file with `recorded/FILE`: no key, no server, the same summaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_eval.loopback import LoopbackServer
from conftest import ROOT

DUMMY_KEY = "sk-ant-DUMMY-KEY-0123456789"
INPUTS = [
    "--traces", str(ROOT / "fixtures" / "traces" / "synth-dep-upgrade-001.json.gz"),
    "--labels", str(ROOT / "labels" / "synth-dep-upgrade-001.yaml"),
    "--prompts", str(ROOT / "prompts" / "handoff.j2"), str(ROOT / "prompts" / "terse.j2"),
    "--shape", "messages", "--display", "none",
]


def keep_all(summary: str, facts: list[dict]) -> str:
    """The scripted judge: every fact kept, quoting the summary's first line."""
    return json.dumps([{"id": f["id"], "kept": True, "quote": summary.splitlines()[0], "reason": "stated"} for f in facts])


@pytest.fixture(scope="module")
def server():
    srv = LoopbackServer(judge_script=keep_all).start()
    try:
        yield srv
    finally:
        srv.stop()


def _env(cwd: Path, server: LoopbackServer | None) -> dict[str, str]:
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_", "ANTHROPIC_"))}
    env.update(HOME=str(home), PYTHONWARNINGS="ignore", INSPECT_DISPLAY="none")
    if server is not None:
        env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=DUMMY_KEY)
    return env


def cli(cwd: Path, server: LoopbackServer | None, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=_env(cwd, server), timeout=300)


def summaries(run_dir: Path) -> dict[tuple, str]:
    results = json.loads((run_dir / "results.json").read_text())
    return {(s["trace"], s["point"], s["prompt"]): s["summary"] for s in results["samples"]}


def test_record_over_http_then_replay_without_key_or_server(server, tmp_path):
    rec = tmp_path / "nightly.jsonl"
    start = len(server.requests)
    proc = cli(tmp_path, server, "recall", *INPUTS, "--model", "anthropic/claude-test", "--judge-model", "anthropic/claude-test",
               "--out", "results", "--run", "live", "--record", str(rec))
    assert proc.returncode == 0, proc.stderr
    paid = [r for r in server.served() if r["seq"] >= start and r["path"] == "/v1/messages"]
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    # one trace, 2 points x 2 prompts: 4 summaries and a judge call about each; every answer once
    # (a judge request asked twice, the same summary at one point, is one answer)
    assert len(lines) == len({r["key"] for r in lines}) <= len(paid) <= 8
    assert sum(1 for r in lines if r["text"].startswith("[{")) >= 2
    assert {r["model"] for r in lines} == {"anthropic/claude-test"}
    assert all("through its API" in r["written_by"] and r["usage"]["output_tokens"] > 0 for r in lines)
    assert DUMMY_KEY not in rec.read_text()

    # A second recorded run asks nothing new of the file (answers already there are kept once).
    proc = cli(tmp_path, server, "recall", *INPUTS, "--model", "anthropic/claude-test", "--judge-model", "anthropic/claude-test",
               "--out", "results", "--run", "live2", "--record", str(rec))
    assert proc.returncode == 0, proc.stderr
    assert len(rec.read_text().splitlines()) == len(lines)

    proc = cli(tmp_path, None, "recall", *INPUTS, "--model", f"recorded/{rec}", "--judge-model", f"recorded/{rec}",
               "--out", "results", "--run", "replayed")
    assert proc.returncode == 0, proc.stderr
    assert summaries(tmp_path / "results" / "replayed") == summaries(tmp_path / "results" / "live")
    results = json.loads((tmp_path / "results" / "replayed" / "results.json").read_text())
    assert results["offline_stand_in"] is False
    assert results["recorded_answers"]["models"] == ["anthropic/claude-test"]
    assert results["recorded_answers"]["answers"] == len(lines)
    assert "not API output" in results["recorded_answers"]["note"]
    live = json.loads((tmp_path / "results" / "live" / "results.json").read_text())
    assert [p["recall"] for p in results["prompts"]] == [p["recall"] for p in live["prompts"]]


def test_run_recorded_reproduces_a_recorded_run_from_its_manifest(server, tmp_path):
    """`run --recorded DIR`: the manifest names the corpus, prompts, budget and judge; the
    folder holds the answers (recorded here over HTTP); no key and no server at replay."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    proc = cli(tmp_path, server, "recall", *INPUTS, "--budget", "300", "--model", "anthropic/claude-test",
               "--judge-model", "anthropic/claude-test", "--out", "results", "--run", "live",
               "--record", str(shipped / "answers.jsonl"), "--written-by", "the loopback server, playing Claude")
    assert proc.returncode == 0, proc.stderr
    (shipped / "manifest.yaml").write_text("\n".join([
        "schema: compaction-eval/recorded-run@1",
        f"traces: [{INPUTS[1]}]", f"labels: [{INPUTS[3]}]", f"prompts: [{INPUTS[5]}, {INPUTS[6]}]",
        "budget: 300", "shape: messages", "judge: true", ""]))
    proc = cli(tmp_path, None, "run", "--recorded", str(shipped), "--out", "results", "--run", "offline")
    assert proc.returncode == 0, proc.stderr
    assert "recorded answers written by the loopback server, playing Claude (models: anthropic/claude-test), not API output" in proc.stdout
    run = tmp_path / "results" / "offline"
    results = json.loads((run / "results.json").read_text())
    live = json.loads((tmp_path / "results" / "live" / "results.json").read_text())
    assert results["offline_stand_in"] is False and results["model"] == f"recorded/{shipped}"
    assert results["config"]["judge_model"] == results["model"] and results["config"]["budget"] == 300
    assert [p["recall"] for p in results["prompts"]] == [p["recall"] for p in live["prompts"]]
    assert "Recorded answers." in (run / "report.html").read_text()
    assert not (run / "horizon.json").exists() and not (run / "decay.json").exists()
