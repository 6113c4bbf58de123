"""Token counts of inspect ChatMessages, counted once per message and cached.

The text a model reads from a message is its text plus, for an assistant message, its
tool calls rendered as `name(json args)`. Counts go through `tokens.count_tokens`, which
caches by string, and are memoised here by (message id, text length) so a history of n
messages costs n dictionary look-ups per step, never a re-tokenisation.
"""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant
from inspect_ai.tool import ToolInfo

from compaction_eval.contracts.tokens import count_tokens

_CACHE: dict[tuple[str | None, int, int], int] = {}
_CACHE_LIMIT = 500_000


def render_call(function: str, arguments: dict[str, Any]) -> str:
    return f"{function}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"


def message_tokens(message: ChatMessage) -> int:
    """Tokens of one message (cached; a changed text under the same id is counted anew)."""
    text = message.text
    calls = message.tool_calls or [] if isinstance(message, ChatMessageAssistant) else []
    key = (message.id, len(text), len(calls))
    hit = _CACHE.get(key) if message.id else None
    if hit is not None:
        return hit
    tokens = count_tokens(text) + sum(count_tokens(render_call(c.function, c.arguments)) for c in calls)
    if message.id:
        if len(_CACHE) > _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[key] = tokens
    return tokens


def messages_tokens(messages: list[ChatMessage]) -> int:
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: list[ToolInfo]) -> int:
    """Tokens of the tool definitions (sent with every request)."""
    return sum(count_tokens(t.model_dump_json(exclude_none=True)) for t in tools)
