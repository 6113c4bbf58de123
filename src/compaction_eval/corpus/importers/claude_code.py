"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is one event. Conversation events have `type` "user" or "assistant", a `message`
in the Anthropic Messages shape ({role, content}), a `uuid` and the `parentUuid` of the event
before it; `isSidechain: true` marks the conversation of a sub-agent (Task tool). Other lines
(`summary`, `system`, `file-history-snapshot`, ...) carry no conversation.

The trace is the main thread: the chain of parentUuid links from the last main-thread event
back to the root, so abandoned branches (a message edited and resent) and sidechains are
left out (counted in metadata). Claude Code logs one event per content block of a streamed
reply; consecutive assistant events of the same `message.id` are merged back into one
message, and consecutive user events (the results of parallel tool calls) into one, so every
tool_use is answered in the next message as the trace contract requires.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compaction_eval.corpus.importers.common import (
    fail,
    file_stem,
    finish,
    safe_id,
)

NAME = "claude-code"
CONVERSATION = ("user", "assistant")


def read_events(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, event) for every non-empty line; a line that is not a JSON object fails
    with its line number."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        fail(where, "", f"cannot read: {exc.strerror or exc}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(where, f"byte {exc.start}", "not UTF-8 text")
    events = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            fail(where, f"line {n}, column {exc.colno}", f"invalid JSON: {exc.msg}")
        if not isinstance(event, dict):
            fail(where, f"line {n}", "an event must be a JSON object")
        events.append((n, event))
    if not events:
        fail(where, "", "empty transcript")
    return events


def detect_events(events: list[tuple[int, dict[str, Any]]]) -> bool:
    """True when the lines look like Claude Code events (conversation events with uuids)."""
    conv = [e for _, e in events if e.get("type") in CONVERSATION]
    return bool(conv) and all("uuid" in e and isinstance(e.get("message"), dict) for e in conv)


def _main_thread(events: list[tuple[int, dict[str, Any]]], where: str) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The main-thread conversation events in order, and how many conversation events were left out."""
    conv = [(n, e) for n, e in events if e.get("type") in CONVERSATION]
    main = [(n, e) for n, e in conv if not e.get("isSidechain")]
    if not main:
        fail(where, "", "no main-thread user or assistant events")
    by_uuid: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, e in events:
        if isinstance(e.get("uuid"), str):
            by_uuid[e["uuid"]] = (n, e)
    chain: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    node: tuple[int, dict[str, Any]] | None = main[-1]
    while node is not None:
        n, e = node
        uid = e.get("uuid")
        if uid in seen:
            fail(where, f"line {n}", f"parentUuid cycle at {uid!r}")
        seen.add(uid)
        if e.get("type") in CONVERSATION and not e.get("isSidechain"):
            chain.append(node)
        parent = e.get("parentUuid")
        if parent is None:
            break
        if parent not in by_uuid:
            fail(where, f"line {n}", f"parentUuid {parent!r} names no event in the file")
        node = by_uuid[parent]
    chain.reverse()
    return chain, len(conv) - len(chain)


def _tool_result_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(str(b.get("text", "")))
            elif isinstance(b, dict):
                parts.append(f"[{b.get('type', 'block')} omitted]")
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _blocks(content: Any, where: str, place: str) -> list[dict[str, Any]]:
    """The message content as trace@1 blocks (images and documents become a text note)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        fail(where, place, "message.content must be a string or a list of blocks")
    out = []
    for b in content:
        if not isinstance(b, dict):
            fail(where, place, "a content block must be an object")
        kind = b.get("type")
        if kind == "text":
            if b.get("text"):
                out.append({"type": "text", "text": str(b["text"])})
        elif kind == "thinking":
            out.append({"type": "thinking", "thinking": str(b.get("thinking", ""))})
        elif kind == "redacted_thinking":
            continue  # encrypted: nothing a summariser could read
        elif kind == "tool_use":
            out.append({"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": b.get("input", {})})
        elif kind == "tool_result":
            out.append({"type": "tool_result", "tool_use_id": b.get("tool_use_id"),
                        "content": _tool_result_content(b.get("content")), "is_error": bool(b.get("is_error"))})
        else:
            out.append({"type": "text", "text": f"[{kind} omitted]"})
    return out


def convert_events(events: list[tuple[int, dict[str, Any]]], path: Path) -> list[dict[str, Any]]:
    """One trace from one session transcript."""
    where = str(path)
    chain, left_out = _main_thread(events, where)
    sidechain = sum(1 for _, e in events if e.get("type") in CONVERSATION and e.get("isSidechain"))
    messages: list[dict[str, Any]] = []
    last_key: tuple[str, Any] | None = None
    merged = 0
    for n, e in chain:
        msg = e["message"]
        role = msg.get("role", e["type"])
        if role not in CONVERSATION:
            fail(where, f"line {n}", f"message.role {role!r} is not user or assistant")
        blocks = _blocks(msg.get("content"), where, f"line {n}: message.content")
        if not blocks:
            continue
        key = (role, msg.get("id") if role == "assistant" else None)
        if messages and messages[-1]["role"] == role:
            # Parts of one streamed reply, or tool results / text of one user turn.
            if role == "assistant" and key != last_key:
                merged += 1
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
        last_key = key
    if not messages:
        fail(where, "", "the main thread has no message content")
    # Tool results first in a user message (the API's order); a tool_use the session never
    # answered (interrupted, or the transcript ends) gets an explicit error result.
    unanswered = 0
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m["role"] == "user":
            m["content"].sort(key=lambda b: b["type"] != "tool_result")
        out.append(m)
        if m["role"] != "assistant":
            continue
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for b in nxt["content"]} if nxt and nxt["role"] == "user" else set()
        missing = [u for u in uses if u not in answered]
        if missing:
            unanswered += len(missing)
            filler = [{"type": "tool_result", "tool_use_id": u, "content": "(no result in the transcript)",
                       "is_error": True} for u in missing]
            if nxt is not None and nxt["role"] == "user":
                nxt["content"][:0] = filler
            else:
                out.append({"role": "user", "content": filler})
    first = chain[0][1]
    session = first.get("sessionId") or file_stem(path)
    metadata = {
        "session_id": first.get("sessionId"),
        "cwd": first.get("cwd"),
        "version": first.get("version"),
        "git_branch": first.get("gitBranch"),
        "events": len(events),
        "main_thread_events": len(chain),
        "sidechain_events_skipped": sidechain,
        "other_branch_events_skipped": left_out - sidechain,
        "summaries": [e.get("summary") for _, e in events if e.get("type") == "summary"],
        "unanswered_tool_uses": unanswered,
    }
    if merged:
        metadata["assistant_messages_merged"] = merged
    return [finish(trace_id=safe_id(session, where, "sessionId"), source={"kind": NAME, "path": path.name},
                   system="", tools=[], messages=out, metadata={k: v for k, v in metadata.items() if v is not None},
                   where=where)]


def convert_file(path: Path) -> list[dict[str, Any]]:
    events = read_events(path)
    if not detect_events(events):
        fail(str(path), "", "not a Claude Code transcript (no user/assistant events with uuid and message)")
    return convert_events(events, path)
