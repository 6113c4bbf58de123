"""Replay, decay and probes: pairing under every policy, chains of K compactions, re-derivations,
probe grading, the reader stand-in, atomic results, the gate's decay comparison, and the
real-model path over HTTP against the loopback server (a rerun makes zero calls)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from compaction_eval.contracts.labels import Fact, Labels
from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.contracts.traces import trace_from_json
from compaction_eval.corpus.load import load_corpus
from conftest import REAL_MINI, ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-pipeline-incident-001.json.gz"
LABELS = ROOT / "labels" / "synth-pipeline-incident-001.yaml"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus([TRACE], [LABELS])


def _handoff():
    return next(c for c in load_candidates([ROOT / "prompts"]) if c.name == "handoff")


POLICIES = ["baseline", "baseline-mutated", "eviction", "full", "inspect-edit", "inspect-trim", "inspect-summary"]


@pytest.mark.parametrize("policy", POLICIES)
def test_replay_keeps_tool_call_pairing_under_every_policy(corpus, policy):
    from compaction_eval.horizon.prices import price_for
    from compaction_eval.replay.common import open_model
    from compaction_eval.replay.replay import ReplaySettings, replay_trace

    (tid,) = corpus.labels
    result = asyncio.run(replay_trace(corpus.traces[tid], corpus.labels[tid], policy, 6000, open_model("extractive/default"),
                                      ReplaySettings(prompts_dir=str(ROOT / "prompts")), price_for("extractive/default")[1]))
    assert result.totals["protocol"] == "tool_use"
    assert result.totals["compactions"] > 0, "the window must force the policy to act"
    assert result.totals["pairing_problems"] == []
    assert [s["point"] for s in result.samples] == list(corpus.labels[tid].points)
    assert result.totals["cost"]["cost_usd"] > 0


def test_pairing_check_catches_an_orphan_result():
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    from compaction_eval.replay.common import pairing_problems

    call = ChatMessageAssistant(content="", tool_calls=[ToolCall(id="a", function="bash", arguments={})])
    assert pairing_problems([ChatMessageUser(content="x"), call, ChatMessageTool(content="r", tool_call_id="a")]) == []
    assert pairing_problems([ChatMessageUser(content="x"), ChatMessageTool(content="r", tool_call_id="a")])
    assert pairing_problems([call, ChatMessageUser(content="no result")])


def _tiny_trace_and_labels():
    """A trace whose artifact (app/core.py) is established early and shows up again late."""
    messages = [{"role": "user", "content": "Fix the crash in the importer."}]
    for i in range(1, 13):
        role = "assistant" if i % 2 else "user"
        text = {1: "The crash comes from app/core.py in parse_row.", 11: "Looking at app/core.py again: parse_row."}.get(i, f"step {i}: nothing new")
        messages.append({"role": role, "content": text})
    messages.append({"role": "assistant", "content": "done"})
    trace = trace_from_json({"schema": "compaction-eval/trace@1", "id": "tiny", "messages": messages})
    fact = Fact(id="core-file", category="artifact", text="The crash is in app/core.py, parse_row.", keys=("app/core.py",), source=(1,))
    return trace, Labels(trace="tiny", labelled_by="human", points=(3,), facts=(fact,))


def _scripted_model(summaries: list[str]):
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    calls: list[int] = []

    def output(input, tools, tool_choice, config):
        calls.append(1)
        out = ModelOutput.from_content(model="mockllm/model", content=summaries[(len(calls) - 1) % len(summaries)])
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # else mockllm counts with tiktoken (offline: fails)
        return out

    return get_model("mockllm/model", custom_outputs=output), calls


def test_chain_of_k_compactions_calls_the_model_k_times(corpus):
    from compaction_eval.replay.decay import DecaySettings, decay_chain

    model, calls = _scripted_model(["a summary"])
    (tid,) = corpus.labels
    record = asyncio.run(decay_chain(corpus.traces[tid], corpus.labels[tid], _handoff(), model, DecaySettings(k=5)))
    assert record["k"] == 5 and len(record["cuts"]) == 5
    assert len(calls) == 5 and record["model_calls"] == 5
    assert record["cuts"] == sorted(record["cuts"]) and record["cuts"][0] == min(corpus.labels[tid].points)


def test_a_fact_back_from_the_tail_is_a_rederivation_not_survival():
    from compaction_eval.replay.decay import DecaySettings, decay_chain
    from compaction_eval.replay.run import summarise_decay

    trace, labels = _tiny_trace_and_labels()
    model, _ = _scripted_model(["The crash is in app/core.py, parse_row.", "Something about the importer.",
                                "Back at app/core.py: parse_row crashes."])
    record = asyncio.run(decay_chain(trace, labels, _handoff(), model, DecaySettings(k=3)))
    assert record["cuts"] == [3, 9, 14]  # message 11 (app/core.py again) is in the last span
    (fact,) = record["facts"]
    assert fact["kept"] == [True, False, True]
    assert fact["survived"] == [True, False, False]
    assert fact["rederived"] == [{"k": 3, "from_tail": True}]
    (prompt,) = summarise_decay([record])
    assert [s["survival"] for s in prompt["survival"]] == [1.0, 0.0, 0.0]
    assert [s["present"] for s in prompt["survival"]] == [1.0, 0.0, 1.0]
    assert [s["rederived"] for s in prompt["survival"]] == [0, 0, 1]
    assert prompt["monotone"] and prompt["half_life"] == {"artifact": 2}


def test_exact_probe_fails_on_a_near_miss_and_passes_on_the_exact_answer():
    from compaction_eval.replay.probes import BLANK, grade, make_probe

    trace, labels = _tiny_trace_and_labels()
    probe = make_probe(labels.facts[0])
    assert probe.type == "artifact" and "app/core.py" not in probe.question and BLANK in probe.question
    assert grade(probe, "The crash is in app/core.py, parse_row.", labels, trace, 3)["correct"]
    near = grade(probe, "The crash is in app/cores.py, parse_row.", labels, trace, 3)
    assert not near["correct"]
    assert not grade(probe, "The crash is in app/base.py.", labels, trace, 3)["correct"]


def test_meaning_probe_does_not_hand_out_the_fact():
    from compaction_eval.replay.probes import grade, make_probe

    trace, _ = _tiny_trace_and_labels()
    fact = Fact(id="why", category="decision", text="Parse rows lazily in parse_row because the eager reader ran out of memory on 2 GB files.",
                keys=("parse_row",), source=(1,))
    labels = Labels(trace="tiny", labelled_by="human", points=(3,), facts=(fact,))
    probe = make_probe(fact)
    assert probe.type == "decision" and "memory" not in probe.question
    assert not grade(probe, probe.question, labels, trace, 3)["correct"], "repeating the question is not an answer"


def test_reader_answers_only_from_the_context():
    from compaction_eval.standins.reader import parse_probe, probe_request, read_answer

    context = "[user]\nFix the importer.\n\n[assistant]\nThe failing file is app/core.py at line 12.\nTests pass."
    question = "Which files, paths, symbols or identifiers are involved, exactly as written?\nIt is about: the failing file ____"
    assert parse_probe(probe_request(context, question)) == (context, question)
    assert "app/core.py" in read_answer(context, question)
    assert "app/core.py" not in read_answer(context.replace("app/core.py", "a module"), question)


def test_bad_input_leaves_no_run_directory(tmp_path):
    from compaction_eval.replay.run import ReplayRunConfig, run_modes

    config = ReplayRunConfig(traces=[str(TRACE)], labels=[str(LABELS)], prompts=[str(ROOT / "prompts")], policies=["no-such-policy"])
    with pytest.raises(ContractError) as exc:
        run_modes(config, tmp_path / "run", ("replay",))
    assert "no-such-policy" in str(exc.value)
    assert not (tmp_path / "run").exists() and not list(tmp_path.glob(".run.*"))


def test_cli_writes_replay_json_and_report_sections(tmp_path, capsys):
    from compaction_eval.cli.replay import register
    from compaction_eval.gate.decay import compare_decay
    from compaction_eval.report.replay_view import replay_sections

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    common = ["--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(ROOT / "prompts" / "handoff.j2")]
    args = parser.parse_args(["replay", *common, "--policies", "baseline", "eviction", "--windows", "6000",
                              "--out", str(tmp_path), "--run", "r1"])
    assert args.func(args) == 0
    args = parser.parse_args(["decay", *common, "--k", "3", "--into", str(tmp_path / "r1")])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "OFFLINE STAND-IN" in out and "baseline" in out
    replay = json.loads((tmp_path / "r1" / "replay.json").read_text())
    assert replay["schema"] == "compaction-eval/replay@1" and replay["offline_stand_in"] is True
    by_policy = {p["policy"]: p for p in replay["policies"]}
    assert by_policy["baseline"]["request_visible"] == 0.0 and by_policy["eviction"]["request_visible"] == 1.0
    for key in ("visible_recall", "visible_recall_ci", "samples"):
        assert key in by_policy["eviction"]
    assert {"trace", "point", "visible_recall", "compactions", "context_tokens", "facts"} <= set(by_policy["eviction"]["samples"][0])
    decay = json.loads((tmp_path / "r1" / "decay.json").read_text())
    (prompt,) = decay["prompts"]
    assert [s["k"] for s in prompt["survival"]] == [1, 2, 3] and prompt["monotone"]
    assert set(prompt["half_life"]) == set(prompt["by_category"])
    html = replay_sections(tmp_path / "r1")
    assert 'id="replay"' in html and 'id="decay"' in html and "<svg" in html
    (verdict,) = compare_decay(decay, decay)
    assert verdict.verdict == "pass" and verdict.delta.delta == 0


def test_gate_flags_a_decay_regression():
    from compaction_eval.gate.decay import compare_decay, decay_regressed

    def run(survived: bool) -> dict:
        chains = [{"trace": f"t{i}", "k": 2, "facts": [{"weight": 1.0, "survived": [True, survived or i % 5 == 0]}] * 3} for i in range(10)]
        return {"prompts": [{"prompt": "handoff", "samples": chains}]}

    (verdict,) = compare_decay(run(True), run(False))
    assert verdict.k == 2 and verdict.delta.delta < -0.5 and verdict.verdict == "regression"
    assert decay_regressed([verdict])


def test_text_protocol_trace_replays_commands_as_tool_calls():
    from compaction_eval.horizon.prices import price_for
    from compaction_eval.replay.common import open_model
    from compaction_eval.replay.replay import ReplaySettings, replay_trace

    real = load_corpus([REAL_MINI], [ROOT / "labels" / "real" / "sphinx-doc__sphinx-8120.yaml"])
    (tid,) = real.labels
    settings = ReplaySettings(prompts_dir=str(ROOT / "prompts"))
    model = open_model("extractive/default")
    base = asyncio.run(replay_trace(real.traces[tid], real.labels[tid], "baseline", 12000, model, settings, price_for("extractive/default")[1]))
    evict = asyncio.run(replay_trace(real.traces[tid], real.labels[tid], "eviction", 12000, model, settings, price_for("extractive/default")[1]))
    assert evict.totals["protocol"] == "text-bash" and evict.totals["pairing_problems"] == []
    assert not any(s["request_visible"] for s in base.samples)
    assert all(s["request_visible"] for s in evict.samples)


def test_all_three_over_http_and_a_rerun_makes_zero_calls(tmp_path, monkeypatch):
    """`--model anthropic/...` through inspect's provider and the real SDK, against the loopback
    server; the second run with nothing changed is served by inspect's generate cache."""
    from compaction_eval.loopback import LoopbackServer
    from compaction_eval.replay.run import ReplayRunConfig, run_modes

    with LoopbackServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-DUMMY-0123")
        config = ReplayRunConfig(traces=[str(TRACE)], labels=[str(LABELS)], prompts=[str(ROOT / "prompts" / "handoff.j2")],
                                 model="anthropic/claude-test", policies=["full"], windows=[6000], k=2, max_retries=1, timeout=30)
        first = run_modes(config, tmp_path / "a")
        n = len(server.requests)
        assert n > 0
        assert first["replay"]["offline_stand_in"] is False and first["probes"]["reader"] == "anthropic/claude-test"
        (policy,) = first["replay"]["policies"]
        assert policy["compaction_calls"] > 0 and policy["pairing_problems"] == 0
        assert first["decay"]["prompts"][0]["model_calls"] == 2
        probes = first["probes"]["prompts"][0]
        assert probes["probes"] > 0 and probes["accuracy"] > 0, "the loopback reader answers probes from the context"
        second = run_modes(config, tmp_path / "b")
        assert len(server.requests) == n, "a rerun with nothing changed must make no model calls"
        assert second["probes"]["prompts"][0]["accuracy"] == probes["accuracy"]
        assert second["replay"]["policies"][0]["visible_recall"] == policy["visible_recall"]


def test_gate_cli_compares_decay_beside_recall(tmp_path, capsys):
    """`gate --decay`: an unchanged recall run with a decay regression exits 1; without
    decay.json on one side it is unusable input (exit 2)."""
    import shutil

    from compaction_eval.cli.main import main

    def run_dir(name: str, survived: bool) -> Path:
        d = tmp_path / name
        d.mkdir()
        shutil.copy(ROOT / "results" / "baselines" / "main" / "results.json", d / "results.json")
        chains = [{"trace": f"t{i}", "k": 2, "facts": [{"weight": 1.0, "survived": [True, survived or i % 5 == 0]}] * 3}
                  for i in range(10)]
        (d / "decay.json").write_text(json.dumps({"schema": "compaction-eval/decay@1", "prompts": [{"prompt": "handoff", "samples": chains}]}))
        return d

    base, same, worse = run_dir("base", True), run_dir("same", True), run_dir("worse", False)
    assert main(["gate", "--baseline", str(base), "--candidate", str(same), "--decay"]) == 0
    assert "decay (survival after k compactions" in capsys.readouterr().out
    assert main(["gate", "--baseline", str(base), "--candidate", str(worse), "--decay"]) == 1
    assert "handoff: k=2" in capsys.readouterr().out
    (same / "decay.json").unlink()
    assert main(["gate", "--baseline", str(base), "--candidate", str(same), "--decay"]) == 2
    assert "decay file not found" in capsys.readouterr().err
