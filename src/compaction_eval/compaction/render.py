"""Trace messages in the two shapes a compaction prompt can take.

- text: the span rendered into the prompt (`[user]`, `[assistant]`, `[tool result]`).
- chat: inspect ChatMessages, so that the conversation is a prefix a provider can cache
  across prompts and the instruction comes last.
"""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall

from compaction_eval.contracts.traces import block_text


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", "")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)]


def render_message_text(message: dict[str, Any]) -> str:
    """One message as text, blocks in their order; consecutive prose under one role header."""
    parts: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            parts.append(f"[{message.get('role', 'user')}]\n" + "\n".join(prose))
            prose.clear()

    for block in _blocks(message):
        kind = block.get("type")
        if kind in ("text", "thinking"):
            prose.append(block_text(block))
        elif kind == "tool_use":
            args = block.get("input", {})
            shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            prose.append(f"[tool call {block.get('name', '')}] {shown}")
        elif kind == "tool_result":
            flush()
            parts.append("[tool result]\n" + block_text(block))
    flush()
    return "\n\n".join(parts)


def render_span_text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(render_message_text(m) for m in messages)


def to_chat_messages(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    """Trace messages as inspect ChatMessages (tool results become ChatMessageTool)."""
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for message in messages:
        blocks = _blocks(message)
        if message.get("role") == "assistant":
            text = "\n".join(block_text(b) for b in blocks if b.get("type") in ("text", "thinking"))
            calls = []
            for b in blocks:
                if b.get("type") == "tool_use":
                    names[b["id"]] = b.get("name", "")
                    args = b.get("input", {})
                    calls.append(
                        ToolCall(id=b["id"], function=b.get("name", ""), arguments=args if isinstance(args, dict) else {"input": args})
                    )
            out.append(ChatMessageAssistant(content=text, tool_calls=calls or None))
            continue
        prose: list[str] = []
        for b in blocks:  # in order, so both shapes show the same sequence
            if b.get("type") == "tool_result":
                if any(p.strip() for p in prose):
                    out.append(ChatMessageUser(content="\n".join(prose)))
                prose = []
                tid = b.get("tool_use_id", "")
                out.append(ChatMessageTool(content=block_text(b), tool_call_id=tid, function=names.get(tid)))
            else:
                prose.append(block_text(b))
        if any(p.strip() for p in prose):
            out.append(ChatMessageUser(content="\n".join(prose)))
    return _drop_orphan_results(out)


def _drop_orphan_results(messages: list[ChatMessage]) -> list[ChatMessage]:
    """A span can start right after a tool call (its result is then the span's first
    message): providers reject a result without its call, so show it as user text."""
    called: set[str] = set()
    fixed: list[ChatMessage] = []
    for m in messages:
        if isinstance(m, ChatMessageAssistant):
            called.update(c.id for c in m.tool_calls or [])
        if isinstance(m, ChatMessageTool) and m.tool_call_id not in called:
            fixed.append(ChatMessageUser(content="[tool result]\n" + m.text))
            continue
        fixed.append(m)
    return fixed
