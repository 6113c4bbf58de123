"""The Codex CLI, Crush and SpecStory importers on small shipped samples (cut down from the
real sessions of the shared data folder; see tests/data/importers/README.md), so they run
without ../shared, and on malformed inputs, which fail on one located line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.traces import message_text, validate_trace
from compaction_eval.corpus.importers import convert_all

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "data" / "importers"
CODEX = SAMPLES / "codex-cli-rollout.jsonl"


def shapes(trace: dict) -> list[tuple[str, object]]:
    return [(m["role"], [b["type"] for b in m["content"]] if isinstance(m["content"], list) else "text")
            for m in trace["messages"]]


def one_line_error(path: Path, place: str, message: str) -> None:
    with pytest.raises(ContractError) as exc:
        convert_all(path)
    text = str(exc.value)
    assert text.startswith(f"{path}: {place}") and message in text and "\n" not in text, text


# ------------------------------------------------------------------ Codex CLI


def test_codex_rollout_history_paired_and_events_not_doubled():
    [trace] = convert_all(CODEX)
    assert validate_trace(trace, "t") == [] and trace["source"]["kind"] == "codex-cli"
    assert trace["id"] == "codex-cli-rollout"  # the file name, as for Gemini CLI sessions
    assert shapes(trace) == [
        ("user", "text"), ("user", "text"),                 # the injected environment context, the typed prompt
        ("assistant", ["thinking", "text"]),                # reasoning summary + the preamble
        ("assistant", ["tool_use"]), ("user", ["tool_result"]),   # update_plan
        ("assistant", ["tool_use"]), ("user", ["tool_result"]),   # shell
        ("assistant", ["thinking", "tool_use"]), ("user", ["tool_result"]),
    ]
    assert trace["messages"][1]["content"] == "检查目前项目的设计"
    # the UI copies (event_msg agent_message / agent_reasoning) add nothing
    assert sum("我先梳理仓库结构与文档" in message_text(m) for m in trace["messages"]) == 1
    plan = trace["messages"][3]["content"][0]
    assert plan["name"] == "update_plan" and plan["input"]["plan"][0]["step"] == "Inventory files and structure"
    shell = trace["messages"][5]["content"][0]
    assert shell["input"]["command"][:2] == ["bash", "-lc"]
    out = trace["messages"][6]["content"][0]
    assert out["tool_use_id"] == shell["id"] and out["content"].startswith("total 112\n")  # unwrapped from {"output", "metadata"}
    meta = trace["metadata"]
    assert meta["user_prompts"] == 1 and meta["models"] == {"gpt-5-codex": 3} and meta["resumed"] is True
    assert [s["id"] for s in meta["sessions"]] == ["613a9a68-8816-40b2-a2d4-041ade599da6", "9cd28a74-da7e-4458-a91a-fffec2be9d7a"]
    assert meta["index_map"][2] == [11, 12] and meta["tool_calls"] == 3


def codex_lines(path: Path, items: list[dict]) -> Path:
    head = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s1", "cli_version": "0.58.0"}}
    path.write_text("".join(json.dumps(r) + "\n" for r in [head, *({"timestamp": "t", "type": "response_item", "payload": p}
                                                                   for p in items)]))
    return path


def test_codex_parallel_custom_and_interrupted_calls(tmp_path):
    path = codex_lines(tmp_path / "rollout-x.jsonl", [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "patch it"}]},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": '{"command": ["ls"]}'},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": '{"output": "Success.", "metadata": {"exit_code": 0}}'},
        {"type": "function_call_output", "call_id": "c2", "output": '{"output": "no", "metadata": {"exit_code": 2}}'},
        {"type": "function_call", "call_id": "c3", "name": "shell", "arguments": "not json"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "stop"}]},
        {"type": "function_call_output", "call_id": "c9", "output": "late"},
    ])
    [trace] = convert_all(path)
    assert shapes(trace) == [("user", "text"), ("assistant", ["tool_use", "tool_use"]), ("user", ["tool_result", "tool_result"]),
                             ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("user", "text"), ("user", "text")]
    assert trace["messages"][1]["content"][0]["input"] == {"input": "*** Begin Patch"}
    assert trace["messages"][2]["content"][1] == {"type": "tool_result", "tool_use_id": "c2", "content": "no\n[exit code 2]", "is_error": True}
    assert trace["messages"][3]["content"][0]["input"] == {"_raw": "not json"}
    assert trace["messages"][4]["content"][0]["is_error"] is True
    meta = trace["metadata"]
    assert meta["unanswered_tool_calls"] == [{"index": 3, "call_id": "c3"}] and meta["orphan_tool_outputs"] == [9]
    assert trace["messages"][6]["content"].startswith("[tool output for c9; its call is not in the rollout]")


def test_codex_malformed_inputs_fail_on_one_located_line(tmp_path):
    cut = tmp_path / "rollout-cut.jsonl"
    lines = CODEX.read_text(encoding="utf-8").splitlines()
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:60], encoding="utf-8")
    one_line_error(cut, "line 6, column", "cut short")
    bad = codex_lines(tmp_path / "rollout-bad.jsonl", [{"type": "function_call", "name": "shell", "arguments": "{}"}])
    one_line_error(bad, "line 2: payload.call_id", "function_call without a call_id")
    role = codex_lines(tmp_path / "rollout-role.jsonl", [{"type": "message", "role": "tool", "content": []}])
    one_line_error(role, "line 2: payload.role", "unknown message role 'tool'")
    empty = codex_lines(tmp_path / "rollout-empty.jsonl", [])
    one_line_error(empty, "", "no conversation")
