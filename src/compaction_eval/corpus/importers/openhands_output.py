"""OpenHands evaluation output (`output.jsonl` of `evaluation/benchmarks/*`): one trace per line.

Each line is {"instance_id", "instruction", "metadata": {"agent_class", "llm_config": {"model"},
...}, "history": [event, ...], "metrics", "error", "test_result", "instance"}. `history` is the
OpenHands event stream: actions (`action`: system, message, recall, run, read, edit, think,
finish, ...) and observations (`observation`: run, read, edit, think, recall, error, ...).
An action the model chose carries `tool_call_metadata` {function_name, tool_call_id,
model_response (the raw OpenAI-style completion)}; its observation carries the same
tool_call_metadata.

Conversion (what CodeActAgent shows the model):
- the `system` action is the trace `system`; its `args.tools` (OpenAI schemas) the `tools`;
- a `message` action is a user message (source user) or an assistant message (source agent);
- a tool action becomes an assistant message: the model response's text, then a tool_use
  (id = tool_call_id, input = the call's arguments from the model response). Actions from one
  model response (parallel calls) are one assistant message;
- an observation with tool_call_metadata becomes a tool_result in the user message after that
  assistant message: its `content`, for a command with the runtime's prefix and suffix
  (`extras.metadata`, e.g. "[The command completed with exit code 1.]") as the agent sees it;
  `is_error` for `error` observations;
- an observation without tool_call_metadata (an `error` raised before any action ran, e.g. a
  rejected tool argument) is a user message with its text;
- `recall` actions and observations (workspace context and microagent knowledge added by the
  runtime) and any other event without a model-facing form are left out and listed in
  `metadata.skipped_events` ({event id, kind}).
A call whose observation is missing in the middle of a run gets an error tool_result saying
so (`metadata.unanswered_tool_calls`); calls in the last message that never ran (the final
`finish`, or the iteration limit) become text reading as the flattened call, as the
openai-chat importer does. `metadata.index_map[t]` lists the event ids behind trace message t.
A line that is not an evaluation record is a ContractError naming the file and the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import block_text, strict_loads
from compaction_eval.corpus.importers.common import as_dict, fail, file_stem, finish, read_text, safe_id, sniff_jsonl, unique_id
from compaction_eval.corpus.importers.openai_chat import _arguments, _tools

NAME = "openhands-output"


def is_record(data: Any) -> bool:
    """True for one evaluation record: an object with an event `history` and an instance id."""
    return isinstance(data, dict) and isinstance(data.get("history"), list) and (
        "instance_id" in data or "instruction" in data)


def _response_message(tcm: dict[str, Any]) -> dict[str, Any]:
    resp = tcm.get("model_response")
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict) and isinstance(choices[0].get("message"), dict):
        return choices[0]["message"]
    return {}


def _call_input(tcm: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The arguments the model gave for this call (from the raw response); the action's args otherwise."""
    for call in _response_message(tcm).get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id") == tcm.get("tool_call_id"):
            fn = as_dict(call.get("function"))
            return _arguments(fn.get("arguments"))
    args = event.get("args")
    return dict(args) if isinstance(args, dict) else {}


def _observation_text(event: dict[str, Any]) -> str:
    """The observation as the agent is shown it: a command's output comes with the runtime's
    prefix and suffix (`[The command completed with exit code 1.]`)."""
    content = event.get("content")
    text = content if isinstance(content, str) else str(event.get("message") or "")
    extras = as_dict(event.get("extras"))
    meta = as_dict(extras.get("metadata"))
    prefix, suffix = meta.get("prefix"), meta.get("suffix")
    return f"{prefix if isinstance(prefix, str) else ''}{text}{suffix if isinstance(suffix, str) else ''}"


def convert_record(record: dict[str, Any], path: Path, line: int, k: int) -> dict[str, Any]:
    """One trace from one evaluation record (line `line`, k-th record of the file)."""
    where = str(path)
    system = ""
    tools: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    index_map: list[list[Any]] = []
    skipped: list[dict[str, Any]] = []
    used: set[str] = set()
    # The open assistant turn: its model response id, the index of its assistant message and
    # of the user message holding its results, and source call id -> trace tool id.
    turn: dict[str, Any] = {}
    answered: set[str] = set()
    unanswered: list[dict[str, Any]] = []
    user_prompts = 0

    def push(role: str, blocks: list[dict[str, Any]], event_id: Any) -> int:
        messages.append({"role": role, "content": blocks})
        index_map.append([event_id])
        return len(messages) - 1

    def close_turn() -> None:
        """End the open turn; its calls that got no observation get an error result each."""
        missing = [t for c, t in turn.get("calls", {}).items() if c not in answered]
        if missing:
            filler = [{"type": "tool_result", "tool_use_id": t, "is_error": True,
                       "content": "(no observation for this call in the event history)"} for t in missing]
            if turn.get("results") is None:
                turn["results"] = push("user", [], None)
            messages[turn["results"]]["content"].extend(filler)
            unanswered.extend({"index": turn["results"], "id": t} for t in missing)
        turn.clear()

    history = record["history"]
    for j, ev in enumerate(history):
        place = f"line {line}: history[{j}]"
        if not isinstance(ev, dict):
            fail(where, place, "an event must be an object")
        eid = ev.get("id", j)
        action, obs = ev.get("action"), ev.get("observation")
        tcm = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else None
        if action == "system":
            args = as_dict(ev.get("args"))
            system = str(args.get("content") or ev.get("message") or "")
            tools = _tools(args.get("tools"), where, f"{place}.args.tools")
            continue
        if action is not None and tcm is not None and action != "message":
            if not isinstance(tcm.get("tool_call_id"), str) or not isinstance(tcm.get("function_name"), str):
                fail(where, f"{place}.tool_call_metadata", "needs tool_call_id and function_name")
            resp = tcm.get("model_response")
            resp_id = resp.get("id") if isinstance(resp, dict) else None
            if not (turn and resp_id is not None and resp_id == turn["response"]):
                close_turn()
                text = _response_message(tcm).get("content")
                blocks = [{"type": "text", "text": text}] if isinstance(text, str) and text else []
                turn.update(response=resp_id, assistant=push("assistant", blocks, eid), results=None, calls={})
            else:
                index_map[turn["assistant"]].append(eid)
            tool_id = unique_id(tcm["tool_call_id"], used)
            turn["calls"][tcm["tool_call_id"]] = tool_id
            messages[turn["assistant"]]["content"].append(
                {"type": "tool_use", "id": tool_id, "name": tcm["function_name"], "input": _call_input(tcm, ev)})
            continue
        if obs is not None and tcm is not None:
            call_id = tcm.get("tool_call_id")
            if not turn or call_id not in turn["calls"] or call_id in answered:
                fail(where, place, f"observation for tool call {call_id!r} follows no open call of that id")
            answered.add(call_id)
            result = {"type": "tool_result", "tool_use_id": turn["calls"][call_id], "content": _observation_text(ev),
                      "is_error": obs == "error"}
            if turn["results"] is None:
                turn["results"] = push("user", [result], eid)
            else:
                messages[turn["results"]]["content"].append(result)
                index_map[turn["results"]].append(eid)
            continue
        if action == "message":
            close_turn()
            text = str((ev.get("args") or {}).get("content") or ev.get("message") or "")
            role = "user" if ev.get("source") == "user" else "assistant"
            push(role, [{"type": "text", "text": text}], eid)
            user_prompts += role == "user"
            continue
        if obs == "error":
            close_turn()
            push("user", [{"type": "text", "text": _observation_text(ev)}], eid)
            continue
        kind = f"{action} action" if action is not None else f"{obs} observation" if obs is not None else "event"
        skipped.append({"event": eid, "kind": kind})
    if not messages:
        fail(where, f"line {line}: history", "no messages in the event history")
    # Calls of the last message that never ran: text, as the openai-chat importer does.
    if turn and turn["results"] is None and turn["assistant"] == len(messages) - 1:
        last = messages[-1]
        blocks = []
        for b in last["content"]:
            if b["type"] == "tool_use":
                unanswered.append({"index": len(messages) - 1, "id": b["id"], "name": b["name"], "kept_as_text": True})
                blocks.append({"type": "text", "text": block_text(b)})
            else:
                blocks.append(b)
        last["content"] = blocks
        turn.clear()
    close_turn()
    meta_in = as_dict(record.get("metadata"))
    llm = as_dict(meta_in.get("llm_config"))
    metadata: dict[str, Any] = {
        "instance_id": record.get("instance_id"),
        "agent_class": meta_in.get("agent_class"),
        "model": llm.get("model"),
        "max_iterations": meta_in.get("max_iterations"),
        "error": record.get("error"),
        "events": len(history),
        "index_map": index_map,
        "skipped_events": skipped,
        "user_prompts": user_prompts,
    }
    if unanswered:
        metadata["unanswered_tool_calls"] = unanswered
    patch = (record.get("test_result") or {}).get("git_patch") if isinstance(record.get("test_result"), dict) else None
    if isinstance(patch, str):
        metadata["git_patch_chars"] = len(patch)
    raw_id = record.get("instance_id") or f"{file_stem(path)}-{k}"
    return finish(trace_id=safe_id(raw_id, where, f"line {line}: instance_id"),
                  source={"kind": NAME, "path": path.name, "line": line},
                  system=system, tools=tools, messages=messages,
                  metadata={key: v for key, v in metadata.items() if v is not None}, where=where)


def sniff(path: Path) -> bool:
    """True when the first JSON line of `path` is an evaluation record."""
    return sniff_jsonl(path, is_record)


def convert_file(path: Path) -> list[dict[str, Any]]:
    """One trace per line of an evaluation output file."""
    where = str(path)
    text = read_text(path)
    traces: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = strict_loads(line)
        except json.JSONDecodeError as exc:
            fail(where, f"line {n}, column {exc.colno}", f"invalid JSON: {exc.msg}")
        if not is_record(record):
            fail(where, f"line {n}", "expected an OpenHands evaluation record {instance_id, history: [events]}")
        traces.append(convert_record(record, path, n, len(traces)))
    if not traces:
        fail(where, "", "no evaluation records")
    return traces
