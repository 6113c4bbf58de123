"""Scriptable output (issue 14 parts 3 and 4): prices per provider and model with "unknown"
instead of a guess, `--format json` (one document on stdout), progress on stderr only,
`--quiet`, horizon logs kept on failure, `-T` paths read from the working directory.

Tiny inputs throughout: one trace, one prompt, one world."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from compaction_eval.cli.main import main
from compaction_eval.contracts.problems import ContractError
from compaction_eval.horizon.prices import REFERENCE_PRICE_MODEL, load_prices, resolve_price
from conftest import ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"
PROMPT = ROOT / "prompts" / "handoff.j2"
TINY = ["--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(PROMPT)]


# ------------------------------------------------------------------------------ prices


@pytest.mark.parametrize("model, entry", [
    ("anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5"),
    ("anthropic/claude-opus-4-20250514", "anthropic/claude-opus-4"),
    ("anthropic/claude-opus-4-1", "anthropic/claude-opus-4-1"),
    ("anthropic/claude-haiku-4-5", "anthropic/claude-haiku-4-5"),
    ("openai/gpt-4o-2024-08-06", "openai/gpt-4o"),
    ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
    ("openai/gpt-4.1-mini", "openai/gpt-4.1-mini"),
    ("openai/o3", "openai/o3"),
    ("google/gemini-2.5-flash", "google/gemini-2.5-flash"),
    ("google/gemini-2.5-pro", "google/gemini-2.5-pro"),
])
def test_prices_by_provider_and_model(model, entry):
    pricing = resolve_price(model)
    assert pricing.entry == entry and pricing.known and pricing.note is None


@pytest.mark.parametrize("model", ["anthropic/claude-opus-4-6", "anthropic/claude-test", "ollama/llama3", "openai/gpt-4o-realtime",
                                   "google/gemini-3-pro", "mistral/mistral-large"])
def test_models_not_in_the_table_have_unknown_price(model):
    pricing = resolve_price(model)
    assert not pricing.known and pricing.entry is None and "unknown" in pricing.note
    assert pricing.to_json()["input_per_mtok"] is None and pricing.to_json()["price_known"] is False


def test_cache_rules_differ_by_provider():
    sonnet, gpt, haiku = (resolve_price(m).price for m in ("anthropic/claude-sonnet-4", "openai/gpt-4.1", "anthropic/claude-haiku-4-5"))
    assert (sonnet.cache_write_multiplier, sonnet.cache_read_multiplier) == (1.25, 0.1)
    assert (gpt.cache_write_multiplier, gpt.cache_read_multiplier) == (1.0, 0.25)
    assert haiku.min_cacheable_tokens == 4096


def test_stand_ins_are_priced_as_the_reference_model_and_say_so():
    pricing = resolve_price("scripted/default")
    assert pricing.entry == REFERENCE_PRICE_MODEL and "offline stand-in scripted/default priced as" in pricing.note
    chosen = resolve_price("extractive/default", price_model="openai/gpt-4.1")
    assert chosen.entry == "openai/gpt-4.1" and "--price-model" in chosen.note
    assert resolve_price("ollama/llama3", price_model="google/gemini-2.5-flash").entry == "google/gemini-2.5-flash"
    with pytest.raises(ValueError, match="not in the price table"):
        resolve_price("scripted/default", price_model="acme/unknown")


def test_a_prices_file_overrides_the_table(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"ollama/llama3": {"input": 0.0, "output": 0.0}, "my-model": {"input": 1, "output": 2, "cache_read_multiplier": 0.5}}))
    table = load_prices(path)
    assert resolve_price("ollama/llama3", table).known
    assert resolve_price("vllm/my-model", table).price.cache_read_multiplier == 0.5
    assert not resolve_price("anthropic/claude-sonnet-4", table).known  # the file replaces the table
    path.write_text(json.dumps({"x": {"input": -1, "output": 2}}))
    with pytest.raises(ContractError, match=r"prices.json.*x.input"):
        load_prices(path)
    path.write_text("{not json")
    with pytest.raises(ContractError, match="malformed JSON"):
        load_prices(path)


# ------------------------------------------------------------------ --format json, progress


def test_recall_json_on_stdout_progress_on_stderr_and_quiet(tmp_path, capsys):
    assert main(["recall", *TINY, "--out", str(tmp_path), "--run", "a", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)  # the whole of stdout is one JSON document
    assert doc["command"] == "recall" and doc["offline_stand_in"] is True
    assert [p["prompt"] for p in doc["prompts"]] == ["handoff"] and 0 <= doc["prompts"][0]["recall"] <= 1
    assert "samples" not in doc["prompts"][0] and os.path.exists(doc["files"]["results"])
    assert "progress [fact recall]: 2/2 samples (100%)" in err and "ETA" in err

    assert main(["recall", *TINY, "--out", str(tmp_path), "--run", "b", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "progress" not in err and "fact recall:" not in err
    assert "handoff" in out and "results:" in out  # the text table


def test_inspect_display_goes_to_stderr(tmp_path, capsys):
    assert main(["recall", *TINY, "--out", str(tmp_path), "--run", "c", "--display", "plain", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    json.loads(out)
    assert "progress [" not in err  # inspect's display instead of ours (inspect fixes its display once per process)


def test_horizon_json_unknown_price_and_a_failed_horizon_run_keeps_its_log(tmp_path, capsys, monkeypatch):
    prices = tmp_path / "prices.json"  # no entry for the reference model: the stand-in's cost is unknown
    prices.write_text(json.dumps({"openai/gpt-4o": {"input": 2.5, "output": 10}}))
    assert main(["horizon", "--worlds", "build-01", "--configs", "eviction", "--out", str(tmp_path), "--run", "h",
                 "--prompts-dir", str(ROOT / "prompts"), "--prices", str(prices), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["command"] == "horizon" and [c["config"] for c in doc["configs"]] == ["eviction"]
    assert doc["configs"][0]["cost_usd"] is None and doc["cost_model"]["price_known"] is False
    assert "unknown" in doc["cost_model"]["price_note"] and "progress [long horizon]: 1/1 samples" in err
    assert (tmp_path / "h" / json.loads((tmp_path / "h" / "horizon.json").read_text())["configs"][0]["inspect_log"]).exists()
    from compaction_eval.report.render import render_report

    assert "Cost unknown" in render_report(tmp_path / "h").read_text()

    # a strategy that fails: no run directory, but inspect's log stays where inspect view finds it
    (tmp_path / "boom_policy.py").write_text(
        "from inspect_ai.model import CompactionStrategy\n"
        "class Boom(CompactionStrategy):\n"
        "    def __init__(self, *a, **k):\n        super().__init__(type='summary')\n"
        "    async def compact(self, model, messages, tools):\n        raise RuntimeError('boom in compact')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["horizon", "--worlds", "build-01", "--configs", "boom_policy:Boom", "--out", str(tmp_path), "--run", "bad",
                 "--prompts-dir", str(ROOT / "prompts"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1 and "inspect logs kept in" in err and out == ""
    assert not (tmp_path / "bad").exists()
    kept = list((tmp_path / "logs" / "bad").rglob("*.eval"))
    assert kept, err
    from inspect_ai.log import read_eval_log

    assert read_eval_log(str(kept[0]), header_only=True).status == "error"


def test_replay_json(tmp_path, capsys):
    args = ["replay", *TINY, "--policies", "eviction", "--windows", "12000", "--budget", "500", "--out", str(tmp_path), "--run", "j",
            "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "replay" and doc["offline_stand_in"] is True
    assert doc["policies"][0]["policy"] == "eviction" and "samples" not in doc["policies"][0]
    assert doc["cost_model"]["price_model"] == REFERENCE_PRICE_MODEL and isinstance(doc["policies"][0]["cost_usd"], float)
    # --budget became the config's one CompactionSettings; the file keeps the keys it always had
    written = json.loads((tmp_path / "j" / "replay.json").read_text())
    assert written["settings"]["budget"] == written["config"]["policy_budget"] == 500
    assert written["settings"]["compaction"] == written["config"]["compaction"] == {"budget": 500, "keep_last": 4, "shape": "inline", "focus": None}


def test_gate_json(tmp_path, capsys):
    base = ROOT / "results" / "baselines" / "main"
    code = main(["gate", "--baseline", str(base), "--candidate", str(base), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["verdict"] == "pass" and doc["exit_code"] == 0 and doc["comparison"]["prompts"]


def test_horizon_table_and_report_show_unknown_cost():
    from compaction_eval.horizon.measure import config_summary
    from compaction_eval.report.horizon_table import format_horizon

    sample = {"world": "w", "completed": True, "steps": 1, "model_calls": 1, "input_tokens": 10, "output_tokens": 1,
              "uncached_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0, "compaction_calls": 0,
              "compaction_input_tokens": 0, "compaction_output_tokens": 0, "peak_tokens": 10, "peak_occupancy": 0.1,
              "overflow": False, "redundant_calls": 0, "wall_seconds": 0.1, "cost_usd": None, "cost_breakdown": None,
              "pre_compaction": {"requests": 1, "input_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": None}}
    summary = config_summary("eviction", [sample])
    assert summary["cost_usd"] is None and summary["cost_breakdown"] is None and summary["pre_compaction"]["cost_usd"] is None
    results = {"agent": "ollama/llama3", "n_worlds": 1, "size": "small", "configs": [summary],
               "cost_model": {**resolve_price("ollama/llama3").to_json(), "source": "provider-reported cache usage"}}
    table = format_horizon(results)
    assert "unknown" in table.splitlines()[3] and "cost: unknown (no price for ollama/llama3" in table


# ------------------------------------------------------------------ -T from the working directory


def test_task_file_reads_relative_T_paths_from_the_working_directory(tmp_path):
    work = tmp_path / "work"
    (work / "in").mkdir(parents=True)
    for src in (TRACE, LABELS, PROMPT, ROOT / "prompts" / "_span.j2"):
        (work / "in" / src.name).write_bytes(src.read_bytes())
    env = {**os.environ, "PWD": str(work), "INSPECT_LOG_DIR": str(tmp_path / "ilogs"), "INSPECT_DISPLAY": "none"}
    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", os.path.relpath(ROOT / "evals" / "fact_recall.py", work), "--model", "extractive/default",
         "-T", f"traces=in/{TRACE.name}", "-T", f"labels=in/{LABELS.name}", "-T", f"prompts=in/{PROMPT.name}",
         "--log-dir", str(tmp_path / "ilogs"), "--display", "none"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    from inspect_ai.log import list_eval_logs, read_eval_log

    log = read_eval_log(list_eval_logs(str(tmp_path / "ilogs"))[0])
    assert log.status == "success", log.error
    assert len(log.samples) == 2 and {s.metadata["prompt"] for s in log.samples} == {"handoff"}
