"""Gemini CLI chat sessions (`~/.gemini/tmp/<project hash>/chats/session-*.json`).

Shape: {"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...], "summary"?}.
Each message is {"id", "timestamp", "type": "user" | "gemini" | "info" | "error", "content",
"thoughts"?, "tokens"?, "model"?, "toolCalls"?}; a tool call is {"id", "name", "args", "status",
"result": [{"functionResponse": {"id", "name", "response": {"output" | "error"}}}],
"resultDisplay", "displayName", "description", ...}. The result of a call lives inside the
gemini message that made it; there are no tool-role messages.

Conversion:
- a `user` message becomes a user message (its text); `metadata.user_prompts` counts them,
  except the CLI's own "System: Please continue." nudges;
- a `gemini` message becomes an assistant message: its thoughts as a thinking block ("subject:
  description" per thought), its text, then one tool_use per call; when it made calls it is
  followed by ONE user message holding their tool_results, in call order (the content is what
  the model got back, `functionResponse.response`; `is_error` when the status is not
  `success` or the response is an `error`). So a source message is one or two trace messages;
  `metadata.index_map[t]` is the source index of trace message t. Call ids are kept, made
  unique with a `_2` suffix if a session repeats one.
- `info` and `error` messages are the CLI's own notices ("Request cancelled.", update
  failures); the model never sees them. They are left out of the messages and kept, with
  their text, in `metadata.cli_notices`.
- per-call UI fields are left out: `resultDisplay` (a display copy of the output; counted in
  `metadata.result_displays_left_out`), `displayName`, `renderOutputAsMarkdown`. The tool
  `description` becomes the trace's `tools` entry (no parameter schema is logged).
- a message of any other type, or a call without a name, is a ContractError naming the file
  and the message.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import read_json_file
from compaction_eval.corpus.importers.common import fail, file_stem, finish, safe_id, unique_id

NAME = "gemini-cli"
NOTICE_TYPES = ("info", "error", "warning")
CLI_PROMPTS = ("System: Please continue.",)  # user messages the CLI sends by itself


def detect(data: Any) -> bool:
    """True for a Gemini CLI session: {sessionId, messages: [{type: user|gemini|...}]}."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or "sessionId" not in data:
        return False
    msgs = data["messages"]
    return bool(msgs) and all(isinstance(m, dict) and "type" in m and "role" not in m for m in msgs) and any(
        m.get("type") in ("user", "gemini") for m in msgs)


def _text(content: Any, where: str, place: str) -> str:
    """Message content: a string, or a list of parts with `text` (newer CLI versions)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                fail(where, f"{place}[{j}]", "a content part without text")
        return "\n".join(parts)
    fail(where, place, f"expected a string or a list of parts, got {type(content).__name__}")


def _thinking(thoughts: Any) -> str:
    if not isinstance(thoughts, list):
        return ""
    parts = []
    for t in thoughts:
        if isinstance(t, dict):
            subject, description = str(t.get("subject") or "").strip(), str(t.get("description") or "").strip()
            parts.append(f"{subject}: {description}" if subject and description else subject or description)
        elif isinstance(t, str):
            parts.append(t)
    return "\n\n".join(p for p in parts if p)


def _result(call: dict[str, Any]) -> tuple[str, bool]:
    """(tool_result content, is_error) of one call."""
    status = call.get("status")
    texts: list[str] = []
    error = status not in (None, "success")
    for r in call.get("result") or []:
        resp = r.get("functionResponse", {}).get("response") if isinstance(r, dict) else None
        if isinstance(resp, dict) and set(resp) <= {"output", "error"}:
            if "error" in resp:
                error = True
            texts.extend(str(resp[k]) for k in ("output", "error") if k in resp)
        elif resp is not None:
            texts.append(resp if isinstance(resp, str) else json.dumps(resp, ensure_ascii=False))
    if not texts:
        return f"(no result recorded; status {status})", True
    return "\n".join(texts), error


def convert(data: Any, path: Path) -> list[dict[str, Any]]:
    """One trace from one session file."""
    where = str(path)
    if not detect(data):
        fail(where, "$", "expected a Gemini CLI session {sessionId, messages: [{type: user|gemini, content, toolCalls?}]}")
    messages: list[dict[str, Any]] = []
    index_map: list[int] = []
    notices: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    used_ids: set[str] = set()
    models: Counter[str] = Counter()
    usage: Counter[str] = Counter()
    displays = 0
    no_result = 0
    user_prompts = 0
    for i, m in enumerate(data["messages"]):
        place = f"messages[{i}]"
        kind = m.get("type")
        if kind == "user":
            text = _text(m.get("content"), where, f"{place}.content")
            messages.append({"role": "user", "content": text})
            index_map.append(i)
            user_prompts += not text.startswith(CLI_PROMPTS)
            continue
        if kind in NOTICE_TYPES:
            notices.append({"index": i, "type": kind, "before_message": len(messages),
                            "text": _text(m.get("content"), where, f"{place}.content")})
            continue
        if kind != "gemini":
            fail(where, f"{place}.type", f"unknown message type {kind!r} (expected user, gemini, info or error)")
        if isinstance(m.get("model"), str):
            models[m["model"]] += 1
        if isinstance(m.get("tokens"), dict):
            usage.update({k: v for k, v in m["tokens"].items() if isinstance(v, int)})
        blocks: list[dict[str, Any]] = []
        thinking = _thinking(m.get("thoughts"))
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking})
        text = _text(m.get("content"), where, f"{place}.content")
        if text:
            blocks.append({"type": "text", "text": text})
        calls = m.get("toolCalls") or []
        if not isinstance(calls, list):
            fail(where, f"{place}.toolCalls", "must be a list")
        results: list[dict[str, Any]] = []
        for c, call in enumerate(calls):
            cplace = f"{place}.toolCalls[{c}]"
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
                fail(where, cplace, "tool call without a name")
            raw_id = cid if isinstance(cid := call.get("id"), str) and cid else f"call_{i}_{c}"
            tool_id = unique_id(raw_id, used_ids)
            args = call.get("args")
            blocks.append({"type": "tool_use", "id": tool_id, "name": call["name"],
                           "input": args if isinstance(args, dict) else {"_raw": args}})
            content, is_error = _result(call)
            if not call.get("result"):
                no_result += 1
            results.append({"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error})
            displays += "resultDisplay" in call
            if call["name"] not in tools:
                tools[call["name"]] = {"name": call["name"], "input_schema": {"type": "object"}}
                if isinstance(call.get("description"), str) and call["description"]:
                    tools[call["name"]]["description"] = call["description"]
        messages.append({"role": "assistant", "content": blocks if blocks else ""})
        index_map.append(i)
        if results:
            messages.append({"role": "user", "content": results})
            index_map.append(i)
    if not messages:
        fail(where, "messages", "no user or gemini messages")
    metadata: dict[str, Any] = {
        "session_id": data.get("sessionId"),
        "start_time": data.get("startTime"),
        "last_updated": data.get("lastUpdated"),
        "index_map": index_map,
        "user_prompts": user_prompts,
        "models": dict(sorted(models.items())),
        "token_usage": dict(sorted(usage.items())),
        "cli_notices": notices,
        "result_displays_left_out": displays,
    }
    if data.get("summary"):
        metadata["summary"] = data["summary"]
    if isinstance(data.get("source"), str):
        metadata["session_source"] = data["source"]
    if no_result:
        metadata["calls_without_result"] = no_result
    return [finish(trace_id=safe_id(file_stem(path), where, "file name"), source={"kind": NAME, "path": path.name},
                   system="", tools=list(tools.values()), messages=messages, metadata=metadata, where=where)]


def convert_file(path: Path) -> list[dict[str, Any]]:
    return convert(read_json_file(path), path)
