"""`baseline-mutated`: the baseline with a timestamp in the system prompt of every request.

A common mistake (a clock, a request id or a changing tool list at the top of the prompt)
that invalidates the provider's prompt cache on every call: the cache ablation uses it to
show what a mutated prefix costs against a stable one.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from inspect_ai.model import ChatMessage, ChatMessageSystem

from compaction_eval.horizon.policies.common import new_id
from compaction_eval.horizon.policies.truncation import BaselineTruncation

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


class MutatedPrefixBaseline(BaselineTruncation):
    """`BaselineTruncation` whose requests carry `Current time: ...` in the system prompt.

    Args:
        window, output_reserve: as for `BaselineTruncation`.
        seconds_per_step: simulated time between requests (deterministic, not wall time).
    """

    def __init__(self, *, window: int, output_reserve: int = 512, seconds_per_step: float = 7.0) -> None:
        super().__init__(window=window, output_reserve=output_reserve)
        self.seconds_per_step = seconds_per_step

    def rewrite_request(self, messages: list[ChatMessage], step: int) -> list[ChatMessage]:
        """The request actually sent at `step`: the system prompt stamped with the time."""
        stamp = (EPOCH + timedelta(seconds=step * self.seconds_per_step)).isoformat(timespec="seconds")
        return [
            ChatMessageSystem(id=new_id(), content=f"Current time: {stamp}\n\n{m.text}") if isinstance(m, ChatMessageSystem) else m
            for m in messages
        ]
