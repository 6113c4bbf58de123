"""Shared helpers of the policies: token sums, new message ids, the head of a history."""

from __future__ import annotations

import uuid

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolInfo

from compaction_eval.contracts.chat_tokens import messages_tokens, tools_tokens


def new_id() -> str:
    return uuid.uuid4().hex


def request_tokens(messages: list[ChatMessage], tools: list[ToolInfo]) -> int:
    """What a request of `messages` with `tools` costs in input tokens."""
    return tools_tokens(tools) + messages_tokens(messages)


def head_length(messages: list[ChatMessage]) -> int:
    """Messages up to and including the first user message: system prompt + original request."""
    for i, m in enumerate(messages):
        if isinstance(m, ChatMessageUser) and not isinstance(m, ChatMessageSystem):
            return i + 1
    return 0


def largest_tool_output(messages: list[ChatMessage]) -> int:
    """Tokens of the largest tool result in `messages` (the headroom one more step needs)."""
    from compaction_eval.contracts.chat_tokens import message_tokens

    return max((message_tokens(m) for m in messages if isinstance(m, ChatMessageTool)), default=0)
