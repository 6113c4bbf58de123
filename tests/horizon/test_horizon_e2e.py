"""The suite end to end through inspect: runner, horizon.json contract, CLI and inspect eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from inspect_ai.log import list_eval_logs, read_eval_log

from compaction_eval.horizon.runner import HorizonConfig, run_horizon
from compaction_eval.report.horizon_table import format_horizon
from conftest import ROOT

WORLDS = ["build-01", "query-01"]


def test_runner_writes_horizon_json_atomically(tmp_path):
    cfg = HorizonConfig(configs=["baseline", "full", "baseline-mutated"], worlds=WORLDS,
                        prompts_dir=str(ROOT / "prompts"), display="none")
    out = tmp_path / "run1"
    results = run_horizon(cfg, out)
    data = json.loads((out / "horizon.json").read_text())
    assert data == json.loads(json.dumps(results))
    assert data["schema"] == "compaction-eval/horizon@1" and data["agent"] == "scripted/default"
    assert data["offline_stand_in"] is True and "not an LLM" in data["agent_note"]
    assert data["compaction"] == {"budget": 600, "keep_last": 4, "shape": "inline", "focus": None}  # how `full` compacted
    assert [c["config"] for c in data["configs"]] == ["baseline", "full", "baseline-mutated"]
    for c in data["configs"]:
        lo, hi = c["completion_ci"]
        assert lo <= c["completion_rate"] <= hi and c["input_tokens"] > 0 and c["wall_p50"] <= c["wall_p95"]
        assert [s["world"] for s in c["samples"]] == WORLDS
        assert all(isinstance(s["completed"], bool) for s in c["samples"])
    full = data["configs"][1]
    assert full["compaction_calls"] > 0 and 0 < full["compaction_share"] < 1
    baseline = data["configs"][0]
    # The naive loop overflowed and lost the request: no baseline answer is in the format.
    assert all(not s["format_ok"] for s in baseline["samples"])
    assert data["ablation"]["rows"][2]["cache_hit_rate"] <= data["ablation"]["rows"][0]["cache_hit_rate"]
    table = format_horizon(data)
    assert "scripted agent, not an LLM" in table and "baseline-mutated" in table
    assert (out / data["configs"][0]["inspect_log"]).exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def _env(tmp_path):
    env = dict(os.environ)
    env.update(INSPECT_LOG_DIR=str(tmp_path / "logs"), INSPECT_CACHE_DIR=str(tmp_path / "cache"),
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "xcache"), INSPECT_DISPLAY="none")
    return env


def test_inspect_eval_runs_the_task_file(tmp_path):
    logs = tmp_path / "ilogs"
    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "evals/long_horizon.py", "-T", "config=full", "-T", "worlds=audit-01",
         "--model", "scripted/default", "--log-dir", str(logs), "--display", "none"],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # inspect exits 0 even when the run failed: the log's status is what counts.
    log = read_eval_log(list_eval_logs(str(logs))[0])
    assert log.status == "success", log.error
    scores = {s.name: s for s in log.results.scores}
    assert scores["completed"].metrics["mean"].value in (0.0, 1.0)


def test_cli_horizon_prints_the_table(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "compaction_eval.cli.main", "horizon", "--worlds", "build-01", "--configs", "eviction",
         "--out", str(tmp_path), "--run", "h", "--display", "none"],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "scripted agent, not an LLM" in proc.stdout and (tmp_path / "h" / "horizon.json").exists()
    bad = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", "horizon", "--configs", "nonsense", "--out", str(tmp_path)],
                         cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown configuration" in bad.stderr
