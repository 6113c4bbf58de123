"""Per-sample measurements of a long-horizon run, recorded by the agent loop.

Every request is kept as the sequence of its blocks (the tool definitions, then each message)
by a small integer key per distinct block and its token count, so the cost model can replay
the exact request sequence against a simulated prompt cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from inspect_ai.model import ChatMessage, ModelUsage
from inspect_ai.tool import ToolInfo

from compaction_eval.contracts.chat_tokens import message_tokens, tools_tokens

STORE_KEY = "horizon"


@dataclass
class Ledger:
    """What one sample did and cost.

    Attributes:
        window: the world's context window.
        requests: per request, `keys` (block ids: tools, then messages) and `tokens` per block,
            `output` tokens, and the provider's reported `input` (uncached, as Anthropic reports
            it), `cache_read` and `cache_write`; their sum is what the request sent.
        compactions: compaction events (`step`: requests made before it, `tokens_before`,
            `tokens_after`, `strategy`).
        tool_calls: (function, arguments) of every tool call, in order.
        redundant_calls: calls identical to an earlier call of the sample.
        overflow: the request did not fit the window even after compaction.
        answer: the submitted answer (None if the agent never submitted).
        wall_seconds: time spent in the loop.
    """

    window: int
    requests: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    redundant_calls: int = 0
    overflow: bool = False
    answer: str | None = None
    wall_seconds: float = 0.0
    stop_reason: str = ""
    _keys: dict[str, int] = field(default_factory=dict, repr=False)

    def _key(self, identity: str) -> int:
        return self._keys.setdefault(identity, len(self._keys))

    def record_request(self, messages: list[ChatMessage], tools: list[ToolInfo], output_tokens: int, usage: ModelUsage | None) -> None:
        tools_id = "tools:" + hashlib.sha1("".join(t.model_dump_json() for t in tools).encode()).hexdigest()
        keys = [self._key(tools_id)] + [self._key(f"msg:{m.id}:{message_tokens(m)}") for m in messages]
        tokens = [tools_tokens(tools)] + [message_tokens(m) for m in messages]
        self.requests.append({
            "keys": keys, "tokens": tokens, "output": output_tokens,
            "input": usage.input_tokens if usage else sum(tokens),
            "cache_read": (usage.input_tokens_cache_read or 0) if usage else 0,
            "cache_write": (usage.input_tokens_cache_write or 0) if usage else 0,
        })

    def record_call(self, function: str, arguments: dict[str, Any]) -> None:
        if (function, arguments) in self.tool_calls and function not in ("notes", "submit"):
            self.redundant_calls += 1
        self.tool_calls.append((function, dict(arguments)))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_keys")
        data["tool_calls"] = [[f, a] for f, a in self.tool_calls]
        return data
