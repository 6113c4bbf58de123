"""`baseline`: the naive append-only loop that truncates the oldest messages on overflow."""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageTool,
    ChatMessageUser,
    CompactionStrategy,
    Model,
)
from inspect_ai.tool import ToolInfo

from compaction_eval.contracts.chat_tokens import message_tokens, tools_tokens
from compaction_eval.horizon.policies.common import new_id


class BaselineTruncation(CompactionStrategy):
    """Drop the oldest messages until the request fits, the system prompt and the original
    request included: this is how a naive loop loses its task.

    `preserve_prefix` is False and the suite's loop honours it for system messages too
    (inspect's own orchestrator would re-insert the system prompt, so this policy cannot be
    expressed with `react()` unchanged). The cut never leaves a tool result without its call:
    a result whose call was dropped becomes a plain user message, as providers require.

    Args:
        window: the context window in tokens (the request must fit in it).
        output_reserve: tokens kept free for the model's reply.
    """

    def __init__(self, *, window: int, output_reserve: int = 512) -> None:
        super().__init__(type="trim", threshold=window - output_reserve, memory=False)
        self.window = window
        self.output_reserve = output_reserve

    @property
    def preserve_prefix(self) -> bool:
        return False

    def _repr_params_(self) -> dict[str, Any]:
        return {**super()._repr_params_(), "window": self.window}

    async def compact(self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        return truncate_oldest(messages, int(self.threshold) - tools_tokens(tools)), None


def truncate_oldest(messages: list[ChatMessage], limit: int) -> list[ChatMessage]:
    """The longest suffix of `messages` within `limit` tokens, with orphaned results fixed."""
    total = 0
    start = len(messages)
    while start > 0 and total + message_tokens(messages[start - 1]) <= limit:
        start -= 1
        total += message_tokens(messages[start])
    kept = list(messages[start:])
    called = {c.id for m in kept for c in getattr(m, "tool_calls", None) or []}
    return [
        ChatMessageUser(id=new_id(), content="[tool result]\n" + m.text)
        if isinstance(m, ChatMessageTool) and m.tool_call_id not in called else m
        for m in kept
    ]
