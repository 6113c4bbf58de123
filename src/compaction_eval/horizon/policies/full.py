"""`full`: lossless eviction, then compaction of the middle span with a candidate prompt,
re-anchoring of the original request verbatim, and the notes tool.

On overflow: (1) redundant and superseded tool results are tombstoned (nothing is lost);
(2) if the request is still over the target, the middle span is summarised by the compactor
model with a candidate prompt from `prompts/` within a token budget (the summary is cut to
the budget whatever the model returns); (3) the compacted context is the head (system prompt
and original request), one user message with the summary, the original request again
verbatim and the notes, then the tail (the last messages, verbatim, never starting with a
tool result). Stale results are summarised rather than tombstoned first, so the summariser
reads what it is asked to keep.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    CompactionStrategy,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.tool import ToolInfo

from compaction_eval.compaction.cache import generate_cached
from compaction_eval.compaction.compact import ANCHOR_LABEL, SUMMARY_LABEL
from compaction_eval.compaction.transcript import render_messages
from compaction_eval.contracts.chat_tokens import messages_tokens, tools_tokens
from compaction_eval.contracts.prompts import Candidate
from compaction_eval.contracts.settings import DEFAULT_HORIZON_BUDGET, DEFAULT_KEEP_LAST
from compaction_eval.contracts.tokens import count_tokens, truncate_tokens
from compaction_eval.horizon.policies.common import (
    head_length,
    largest_tool_output,
    new_id,
)
from compaction_eval.horizon.policies.eviction import TieredEviction
from compaction_eval.horizon.policies.notes import NotesBook

MIN_BUDGET = 120


class FullCompaction(CompactionStrategy):
    """Eviction + span compaction + re-anchoring + notes (see module docstring).

    Args:
        window: the context window in tokens.
        candidate: the compaction prompt.
        notes: the sample's notes (the suite gives the agent a `notes` tool writing to it).
        budget: the summary budget in tokens (lowered when the window needs it).
        keep_last: messages of the tail kept verbatim.
        focus: an optional focus instruction passed to the prompt.
        output_reserve: tokens kept free for the reply.
        compactor: the summarising model (default: the `compactor` role, else the task model).
    """

    def __init__(self, *, window: int, candidate: Candidate, notes: NotesBook, budget: int = DEFAULT_HORIZON_BUDGET, keep_last: int = DEFAULT_KEEP_LAST,
                 focus: str | None = None, output_reserve: int = 512, compactor: str | Model | None = None) -> None:
        super().__init__(type="summary", threshold=window - output_reserve, memory=False)
        self.window = window
        self.candidate = candidate
        self.notes = notes
        self.budget = budget
        self.keep_last = keep_last
        self.focus = focus
        self.output_reserve = output_reserve
        self.compactor = compactor
        self.eviction = TieredEviction(window=window, output_reserve=output_reserve, tiers=("redundant", "superseded"))
        self.calls: list[dict[str, int]] = []  # usage of each compaction call

    def _repr_params_(self) -> dict[str, Any]:
        return {**super()._repr_params_(), "window": self.window, "prompt": self.candidate.name, "budget": self.budget, "keep_last": self.keep_last}

    async def compact(self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        target = self.window - self.output_reserve - largest_tool_output(messages) - tools_tokens(tools)
        view = self.eviction.evict(messages, target)
        if messages_tokens(view) <= target:
            return view, None
        return await self.summarise(view, target), None

    async def summarise(self, messages: list[ChatMessage], target: int) -> list[ChatMessage]:
        head_end = head_length(messages)
        tail_start = max(head_end, len(messages) - self.keep_last)
        while head_end < tail_start < len(messages) and isinstance(messages[tail_start], ChatMessageTool):
            tail_start -= 1
        request = next((m.text for m in reversed(messages[:head_end]) if isinstance(m, ChatMessageUser)), "")
        anchor = f"{ANCHOR_LABEL}\n{request}"
        notes = self.notes.render()
        overhead = messages_tokens(messages[:head_end]) + count_tokens(anchor) + count_tokens(notes) + 16
        # `keep_last` counts messages, not tokens: with large tool outputs the tail alone can
        # overflow, so shorten it (to the next assistant turn) until a minimal summary fits.
        while overhead + messages_tokens(messages[tail_start:]) + MIN_BUDGET > target:
            nxt = next((i for i in range(tail_start + 1, len(messages)) if isinstance(messages[i], ChatMessageAssistant)), None)
            if nxt is None:
                break
            tail_start = nxt
        head, middle, tail = messages[:head_end], messages[head_end:tail_start], messages[tail_start:]
        if not middle:
            return messages
        fixed = overhead + messages_tokens(tail)
        budget = max(MIN_BUDGET, min(self.budget, target - fixed))
        summary = await self._summary(middle, budget)
        parts = [f"{SUMMARY_LABEL}\n{summary}", anchor] + ([notes] if notes else [])
        compacted = ChatMessageUser(id=new_id(), content="\n\n".join(parts), metadata={"summary": True})
        return [*head, compacted, *tail]

    async def _summary(self, span: list[ChatMessage], budget: int) -> str:
        model = self.compactor if isinstance(self.compactor, Model) else get_model(self.compactor, role="compactor") if self.compactor else get_model(role="compactor")
        prompt = self.candidate.render(budget=budget, span=render_messages(span), focus=self.focus)
        output = await generate_cached(model, [ChatMessageUser(content=prompt)], config=GenerateConfig(max_tokens=budget))
        if output.error:
            raise RuntimeError(f"compaction model error: {output.error}")
        text = output.completion.strip()
        usage = output.usage
        self.calls.append({
            "input_tokens": usage.input_tokens if usage else count_tokens(prompt),
            "output_tokens": usage.output_tokens if usage else count_tokens(text),
            "span_tokens": messages_tokens(span),
        })
        return truncate_tokens(text, budget) if count_tokens(text) > budget else text
