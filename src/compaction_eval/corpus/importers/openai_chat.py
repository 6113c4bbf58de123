"""OpenAI chat transcripts with structured tool calls (`tool_calls`, `role: tool`).

Accepted files: a list of samples (`[{"messages": [...], "tools": [...], ...}]`, as the
Agent Data Protocol / SWE-Gym OpenHands dumps), one sample object, or a bare list of
messages. Each sample becomes one trace:

- leading `system` (or `developer`) messages become the trace `system`;
- assistant `tool_calls` become `tool_use` blocks (arguments JSON-parsed; arguments that
  are not a JSON object are kept as {"_raw": <string>});
- a run of `role: tool` messages answering one assistant turn becomes ONE user message of
  `tool_result` blocks, because the trace contract wants every tool_use answered in the next
  message. That is the only place where trace and source messages are not one-to-one;
  `metadata.index_map[t]` lists the source indices of trace message t.
- a tool call without a result, or a result without its call, is an error naming the
  source message. The one tolerated case is the LAST source message: runs end on a call
  that never executed (OpenHands' `finish`, or the iteration limit). Such calls become a
  text block reading exactly as the flattened tool call would (`[tool call NAME] {args}`)
  and are listed in `metadata.unanswered_tool_calls`.
- a sample with no structured tool calls whose assistant text writes them inline
  (`<function=NAME><parameter=...>...</function>`, SWE-agent's and OpenHands' text
  function-calling formats) gets them parsed into tool_use / tool_result pairs where the
  pairing is certain, without changing the message count; see `inline_calls` for the rules
  and `metadata.inline_calls` for what stayed text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import block_text, strict_loads
from compaction_eval.corpus.importers.common import fail, file_stem, finish, safe_id
from compaction_eval.corpus.importers.inline_calls import has_inline_calls, parse_inline_calls

NAME = "openai-chat"
_SYSTEM_ROLES = {"system", "developer"}
_OPENAI_ONLY_ROLES = {"system", "developer", "tool", "function"}
_OPENAI_ONLY_KEYS = {"tool_calls", "tool_call_id", "function_call"}


def detect(data: Any) -> bool:
    """True when `data` is shaped like OpenAI chat (samples, a sample or messages)."""
    if isinstance(data, list) and data and all(isinstance(s, dict) and isinstance(s.get("messages"), list) for s in data):
        return True  # a list of samples: neither other format is a list of objects with messages
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return _looks_openai(data["messages"]) or _openai_tools(data.get("tools"))
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return _looks_openai(data)
    return False


def _looks_openai(messages: list[Any]) -> bool:
    for m in messages:
        if isinstance(m, dict) and (m.get("role") in _OPENAI_ONLY_ROLES or _OPENAI_ONLY_KEYS & m.keys()):
            return True
    return False


def _openai_tools(tools: Any) -> bool:
    return isinstance(tools, list) and any(isinstance(t, dict) and "function" in t for t in tools)


def convert(data: Any, path: Path) -> list[dict[str, Any]]:
    """One trace per sample in the file.

    Args:
        data: the parsed JSON of the file.
        path: the file (its name goes into `source.path`; errors name it).
    """
    where = str(path)
    # (place prefix of the sample, place prefix of its messages, position in the file, sample)
    samples: list[tuple[str, str, int | None, Any]]
    if isinstance(data, list) and data and all(isinstance(s, dict) and "messages" in s for s in data):
        samples = [(f"[{k}].", f"[{k}].messages", k, s) for k, s in enumerate(data)]
    elif isinstance(data, dict) and "messages" in data:
        samples = [("", "messages", None, data)]
    elif isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        samples = [("", "", None, {"messages": data})]
    else:
        fail(where, "$", "expected a list of samples {messages, tools?}, one sample or a list of messages")
    stem = file_stem(path)
    traces = []
    for prefix, msg_prefix, k, sample in samples:
        raw_id = sample.get("instance_id") or sample.get("id") or (stem if k is None else f"{stem}-{k}")
        trace_id = safe_id(raw_id, where, f"{prefix}instance_id")
        traces.append(_convert_sample(sample, k, trace_id, msg_prefix, prefix, path))
    return traces


def _convert_sample(
    sample: dict[str, Any], k: int | None, trace_id: str, msg_prefix: str, prefix: str, path: Path
) -> dict[str, Any]:
    where = str(path)
    source_messages = sample.get("messages")
    if not isinstance(source_messages, list) or not source_messages:
        fail(where, f"{prefix}messages", "missing or empty")

    def place(i: int, suffix: str = "") -> str:
        return f"{msg_prefix}[{i}]{suffix}"

    system_parts: list[str] = []
    messages: list[dict[str, Any]] = []
    index_map: list[list[int]] = []
    system_as_user: list[int] = []
    used_ids: set[str] = set()
    # The assistant turn whose calls await results: its source index, call id -> trace id
    # and call id -> name, in call order.
    awaiting: tuple[int, dict[str, str], dict[str, str]] | None = None

    def unanswered_error(a_index: int, missing: list[str], names: dict[str, str]) -> None:
        calls = ", ".join(f"{c!r} ({names[c]})" for c in missing)
        fail(where, place(a_index), f"tool call {calls} has no tool result in the messages that follow")

    n = len(source_messages)
    i = 0
    while i < n:
        msg = source_messages[i]
        if not isinstance(msg, dict):
            fail(where, place(i), "a message must be an object")
        role = msg.get("role")
        if role == "tool":
            if awaiting is None:
                fail(where, place(i), f"tool result for {msg.get('tool_call_id')!r} does not follow an assistant message with tool calls")
            a_index, id_map, names = awaiting
            blocks: list[dict[str, Any]] = []
            answered: set[str] = set()
            j = i
            while j < n and isinstance(source_messages[j], dict) and source_messages[j].get("role") == "tool":
                call_id = source_messages[j].get("tool_call_id")
                if call_id not in id_map:
                    fail(where, place(j, ".tool_call_id"), f"tool result for {call_id!r} answers no tool call of messages[{a_index}]")
                if call_id in answered:
                    fail(where, place(j, ".tool_call_id"), f"second tool result for {call_id!r}")
                answered.add(call_id)
                blocks.append(
                    {"type": "tool_result", "tool_use_id": id_map[call_id], "content": _text(source_messages[j], where, place(j))}
                )
                j += 1
            missing = [c for c in id_map if c not in answered]
            if missing:
                unanswered_error(a_index, missing, names)
            messages.append({"role": "user", "content": blocks})
            index_map.append(list(range(i, j)))
            awaiting = None
            i = j
            continue
        if awaiting is not None:
            a_index, id_map, names = awaiting
            unanswered_error(a_index, list(id_map), names)

        if role in _SYSTEM_ROLES and not messages:
            system_parts.append(_text(msg, where, place(i)))
            i += 1
            continue
        if role in _SYSTEM_ROLES:
            # trace@1 has no mid-conversation system role; the text still matters.
            system_as_user.append(len(messages))
            messages.append({"role": "user", "content": _text(msg, where, place(i))})
        elif role == "user":
            messages.append({"role": "user", "content": _user_content(msg, where, place(i))})
        elif role == "assistant":
            if msg.get("function_call"):
                fail(where, place(i, ".function_call"), "legacy function_call is not supported; use tool_calls")
            content, id_map, names = _assistant_content(msg, where, place, i, used_ids)
            messages.append({"role": "assistant", "content": content})
            if id_map:
                awaiting = (i, id_map, names)
        elif role == "function":
            fail(where, place(i, ".role"), "legacy 'function' messages are not supported; use role 'tool'")
        else:
            fail(where, place(i, ".role"), f"unknown role {role!r}")
        index_map.append([i])
        i += 1

    unanswered: list[dict[str, Any]] = []
    if awaiting is not None:
        # Only the final message may hold calls that never ran (see the module docstring).
        a_index, _, _ = awaiting
        last = messages[-1]
        blocks = []
        for block in last["content"]:
            if block["type"] == "tool_use":
                unanswered.append({"index": len(messages) - 1, "source_index": a_index, "id": block["id"], "name": block["name"]})
                blocks.append({"type": "text", "text": block_text(block)})
            else:
                blocks.append(block)
        last["content"] = blocks
    if not messages:
        fail(where, f"{prefix}messages", "no user or assistant messages")

    metadata: dict[str, Any] = {"index_map": index_map}
    if not used_ids and has_inline_calls(messages):
        messages, metadata["inline_calls"] = parse_inline_calls(messages)
    if k is not None:
        metadata["sample"] = k
    if system_as_user:
        metadata["system_as_user"] = system_as_user
    if unanswered:
        metadata["unanswered_tool_calls"] = unanswered
    # Scalar facts about the run (instance id, resolved, run id) travel with the trace.
    info = {key: v for key, v in sample.items() if key not in ("messages", "tools") and (v is None or isinstance(v, (str, int, float, bool)))}
    if info:
        metadata["sample_info"] = info
    source: dict[str, Any] = {"kind": NAME, "path": path.name}
    if k is not None:
        source["sample"] = k
    return finish(
        trace_id=trace_id,
        source=source,
        system="\n\n".join(p for p in system_parts if p),
        tools=_tools(sample.get("tools"), where, f"{prefix}tools"),
        messages=messages,
        metadata=metadata,
        where=where,
    )


def _text(msg: dict[str, Any], where: str, place: str) -> str:
    """The text of a system/tool message: a string, or text parts joined by newlines."""
    content = msg.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in _text_parts(content, where, place))
    fail(where, f"{place}.content", f"expected a string or a list of parts, got {type(content).__name__}")


def _text_parts(parts: list[Any], where: str, place: str) -> list[dict[str, Any]]:
    out = []
    for j, part in enumerate(parts):
        if isinstance(part, str):
            out.append({"type": "text", "text": part})
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif isinstance(part, dict) and part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            out.append({"type": "text", "text": part["refusal"]})
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            fail(where, f"{place}.content[{j}]", f"content part {kind!r} has no trace@1 equivalent (only text)")
    return out


def _user_content(msg: dict[str, Any], where: str, place: str) -> str | list[dict[str, Any]]:
    content = msg.get("content")
    if isinstance(content, list):
        return _text_parts(content, where, place)
    return _text(msg, where, place)


def _assistant_content(
    msg: dict[str, Any], where: str, place: Any, i: int, used_ids: set[str]
) -> tuple[str | list[dict[str, Any]], dict[str, str], dict[str, str]]:
    """The assistant content and, for its tool calls, source id -> trace id and id -> name."""
    content = msg.get("content")
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        fail(where, place(i, ".tool_calls"), "must be a list")
    if not calls:
        if isinstance(content, list):
            return _text_parts(content, where, place(i)), {}, {}
        return _text(msg, where, place(i)), {}, {}
    blocks: list[dict[str, Any]] = []
    if isinstance(content, list):
        blocks.extend(_text_parts(content, where, place(i)))
    elif content:
        blocks.append({"type": "text", "text": _text(msg, where, place(i))})
    id_map: dict[str, str] = {}
    names: dict[str, str] = {}
    for c, call in enumerate(calls):
        cplace = place(i, f".tool_calls[{c}]")
        fn = call.get("function") if isinstance(call, dict) else None
        call_id = call.get("id") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            fail(where, cplace, "tool call without function.name")
        if not isinstance(call_id, str) or not call_id:
            fail(where, f"{cplace}.id", "tool call without an id")
        if call_id in id_map:
            fail(where, f"{cplace}.id", f"duplicate tool call id {call_id!r} in one message")
        # Some providers reuse ids across turns; trace@1 wants them unique in the trace.
        trace_tool_id = call_id
        n = 1
        while trace_tool_id in used_ids:
            n += 1
            trace_tool_id = f"{call_id}_{n}"
        used_ids.add(trace_tool_id)
        id_map[call_id] = trace_tool_id
        names[call_id] = fn["name"]
        blocks.append({"type": "tool_use", "id": trace_tool_id, "name": fn["name"], "input": _arguments(fn.get("arguments"))})
    return blocks, id_map, names


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as an object; anything that is not a JSON object stays as _raw."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            parsed = strict_loads(raw)
        except json.JSONDecodeError:
            return {"_raw": raw}
        if isinstance(parsed, dict):
            return parsed
    return {"_raw": raw if isinstance(raw, str) else json.dumps(raw)}


def _tools(raw: Any, where: str, place: str) -> list[dict[str, Any]]:
    """OpenAI tool schemas ({"type": "function", "function": {...}}) in trace@1 form."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        fail(where, place, "must be a list")
    tools = []
    for t, tool in enumerate(raw):
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            fail(where, f"{place}[{t}]", "tool without a function name")
        schema = _drop_nulls(fn.get("parameters")) or {"type": "object", "properties": {}}
        entry: dict[str, Any] = {"name": fn["name"], "input_schema": schema}
        if fn.get("description"):
            entry["description"] = fn["description"]
        tools.append(entry)
    return tools


def _drop_nulls(value: Any) -> Any:
    """Remove null members: columnar dumps (Hugging Face datasets) pad every schema with the
    union of all keys, e.g. `"file_text": null` in a tool that has no such parameter."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):  # a null inside a list (an enum member) is meaningful
        return [_drop_nulls(v) for v in value]
    return value
