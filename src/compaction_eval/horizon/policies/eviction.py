"""`eviction`: tiered eviction of stale tool results, with tombstones.

Tiers, in order (each one evicts oldest first until the request is under the target):

1. redundant: a result whose exact call (tool and arguments) was made again later;
2. superseded: a result of the same tool on the same target (path, query, pattern) with
   other arguments, followed by a newer one;
3. unreferenced stale: older results that nothing later (assistant text, tool arguments,
   notes) refers to by a path or identifier they contain;
4. referenced stale: the rest, oldest first;
5. recent: the latest `keep_recent` results, oldest first, but never the very last result
   (the agent has not read it yet), when a window holds fewer outputs than `keep_recent`.

Redundant and superseded results go first because evicting them loses nothing. The head
(system prompt and original request) is never evicted, nor the latest `keep_recent` results.
A tombstone replaces the content and keeps `tool_call_id`, so every call keeps its result.
The target leaves room for one more step: the window minus the reply reserve minus the
largest tool output seen, not a percentage.
"""

from __future__ import annotations

import json
import re
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    CompactionStrategy,
    Model,
)
from inspect_ai.tool import ToolInfo

from compaction_eval.contracts.chat_tokens import message_tokens, tools_tokens
from compaction_eval.horizon.policies.common import (
    head_length,
    largest_tool_output,
    new_id,
)

TOMBSTONE = "[evicted by the context policy: result of {call}, {tokens} tokens. Call the tool again to see it.]"
_DISTINCTIVE = re.compile(r"[\w.-]+/[\w./-]+|\b[A-Za-z_]*\d[\w-]{3,}\b")
TIERS = ("redundant", "superseded", "unreferenced", "referenced", "recent")


def is_tombstone(message: ChatMessage) -> bool:
    return isinstance(message, ChatMessageTool) and bool((message.metadata or {}).get("evicted"))


class TieredEviction(CompactionStrategy):
    """Tiered eviction of stale tool results (see module docstring).

    Args:
        window: the context window in tokens.
        output_reserve: tokens kept free for the reply.
        keep_recent: the latest tool results never evicted.
        tiers: which tiers may be used (all by default; `full` uses the lossless ones).
    """

    def __init__(self, *, window: int, output_reserve: int = 512, keep_recent: int = 2, tiers: tuple[str, ...] = TIERS) -> None:
        super().__init__(type="edit", threshold=window - output_reserve, memory=False)
        self.window = window
        self.output_reserve = output_reserve
        self.keep_recent = keep_recent
        self.tiers = tiers
        self.evicted_by_tier: dict[str, int] = {t: 0 for t in TIERS}

    def _repr_params_(self) -> dict[str, Any]:
        return {**super()._repr_params_(), "window": self.window, "keep_recent": self.keep_recent, "tiers": list(self.tiers)}

    def target(self, messages: list[ChatMessage]) -> int:
        """Tokens the request should get under: room for the largest tool output seen."""
        return self.window - self.output_reserve - largest_tool_output(messages)

    async def compact(self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        return self.evict(messages, self.target(messages) - tools_tokens(tools)), None

    def evict(self, messages: list[ChatMessage], limit: int) -> list[ChatMessage]:
        """`messages` with results tombstoned, tier by tier, until within `limit` tokens."""
        out = list(messages)
        total = sum(message_tokens(m) for m in out)
        if total <= limit:
            return out
        calls = {c.id: (c.function, c.arguments) for m in out if isinstance(m, ChatMessageAssistant) for c in m.tool_calls or []}
        head = head_length(out)
        results = [i for i, m in enumerate(out) if isinstance(m, ChatMessageTool) and i >= head and not is_tombstone(m)]
        protected = set(results[-self.keep_recent:]) if self.keep_recent else set()
        ranked = _rank(out, results, protected, calls)
        for tier in self.tiers:
            for i in ranked[tier]:
                if total <= limit:
                    return out
                m = out[i]
                assert isinstance(m, ChatMessageTool)  # `results` indexes tool messages only
                function, args = calls.get(m.tool_call_id or "", (m.function or "tool", {}))
                tokens = message_tokens(m)
                out[i] = ChatMessageTool(
                    id=new_id(), tool_call_id=m.tool_call_id, function=m.function,
                    content=TOMBSTONE.format(call=f"{function}({json.dumps(args, sort_keys=True)})", tokens=tokens),
                    metadata={"evicted": True, "tier": tier},
                )
                total += message_tokens(out[i]) - tokens
                self.evicted_by_tier[tier] += 1
        return out


def _target_of(args: dict[str, Any]) -> str:
    for key in ("path", "sql", "pattern"):
        if key in args:
            return str(args[key])
    return json.dumps(args, sort_keys=True)


def _rank(messages: list[ChatMessage], results: list[int], protected: set[int], calls: dict[str, tuple[str, dict]]) -> dict[str, list[int]]:
    """Eviction candidates by tier, oldest first; each result lands in its first tier."""
    tiers: dict[str, list[int]] = {t: [] for t in TIERS}
    tiers["recent"] = sorted(protected)[:-1]
    signature = {i: calls.get(getattr(messages[i], "tool_call_id", None) or "", ("", {})) for i in results}
    for n, i in enumerate(results):
        if i in protected:
            continue
        function, args = signature[i]
        later = [signature[j] for j in results[n + 1:]]
        if any(f == function and a == args for f, a in later):
            tiers["redundant"].append(i)
        elif any(f == function and _target_of(a) == _target_of(args) for f, a in later):
            tiers["superseded"].append(i)
        elif not _referenced(messages, i, args):
            tiers["unreferenced"].append(i)
        else:
            tiers["referenced"].append(i)
    return tiers


def _referenced(messages: list[ChatMessage], index: int, own_args: dict[str, Any]) -> bool:
    """Does anything the agent wrote after this result mention a path or ID found in it?"""
    own = " ".join(str(v) for v in own_args.values())
    tokens = {t for t in _DISTINCTIVE.findall(messages[index].text) if t not in own}
    if not tokens:
        return False
    for m in messages[index + 1:]:
        if isinstance(m, ChatMessageAssistant):
            later = m.text + " " + " ".join(json.dumps(c.arguments) for c in m.tool_calls or [])
            if any(t in later for t in tokens):
                return True
    return False
