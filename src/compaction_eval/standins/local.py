"""What every offline stand-in provider shares: offline token counts, no retries.

inspect's default token counter is tiktoken, which downloads its vocabulary on first use
and so fails offline; and retrying a deterministic local model only repeats its failure.
"""

from __future__ import annotations

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI
from inspect_ai.tool import ToolInfo
from tenacity import wait_none
from tenacity.wait import WaitBaseT

from compaction_eval.contracts.chat_tokens import message_tokens, tools_tokens
from compaction_eval.contracts.tokens import count_tokens


class LocalModelAPI(ModelAPI):
    """A deterministic in-process provider (subclasses implement `generate`)."""

    async def count_text_tokens(self, text: str) -> int:
        return count_tokens(text)

    async def count_tokens(self, input: str | list[ChatMessage], config: GenerateConfig | None = None) -> int:
        return count_tokens(input) if isinstance(input, str) else sum(message_tokens(m) for m in input)

    async def count_tool_tokens(self, tools: list[ToolInfo]) -> int:
        return tools_tokens(tools)

    def max_connections(self) -> int:
        # Local CPU work that holds no connection: concurrency costs nothing to allow.
        return 64

    def should_retry(self, ex: Exception) -> bool:
        return False

    def retry_wait(self) -> WaitBaseT:
        # Never used (nothing is retried); inspect's default wait is built with a
        # deprecated tenacity parameter and warns on every call.
        return wait_none()
