"""Where a history is cut: head and tail kept verbatim, the middle span summarised."""

from __future__ import annotations

from dataclasses import dataclass

from compaction_eval.contracts.traces import Trace


@dataclass(frozen=True)
class Split:
    """The three parts of messages[0:at].

    Args:
        at: the compaction point; messages[0:at] is the history.
        head_end: messages[0:head_end] are the head (the first user message).
        tail_start: messages[tail_start:at] are the tail kept verbatim.
    """

    at: int
    head_end: int
    tail_start: int

    @property
    def middle(self) -> range:
        """What the compacted context replaces by the summary."""
        return range(self.head_end, self.tail_start)

    @property
    def summarised(self) -> range:
        """What the compaction model reads: everything before the tail, head included.

        The head stays verbatim in the context anyway, but a summariser that sees the
        request can carry intent and constraints on its own (inspect's CompactionSummary
        and Claude Code's compaction also read the whole conversation), and the summary
        alone is what survives a loop that later loses its head.
        """
        return range(0, self.tail_start)


def _opens_with_tool_result(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def split_history(trace: Trace, at: int, keep_last: int) -> Split:
    """Cut messages[0:at] into head, middle and tail.

    The head is the first user message (the system prompt travels separately). The tail is
    the last `keep_last` messages, moved back by one message when it would start with a
    tool result, so that no tool call is separated from its result.
    """
    if not 1 <= at <= len(trace.messages):
        raise ValueError(f"point {at} is outside trace {trace.id!r} ({len(trace.messages)} messages)")
    head_end = 1
    tail_start = max(head_end, at - max(keep_last, 0))
    while head_end < tail_start < at and _opens_with_tool_result(trace.messages[tail_start]):
        tail_start -= 1
    return Split(at=at, head_end=head_end, tail_start=tail_start)
