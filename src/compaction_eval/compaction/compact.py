"""Compact one sample: head + labelled summary + re-anchored intent + tail."""

from __future__ import annotations

from dataclasses import dataclass

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model, ModelOutput

from compaction_eval.compaction.cache import generate_cached, off_the_loop, use_generate_cache
from compaction_eval.compaction.render import (
    render_message_text,
    render_span_text,
    to_chat_messages,
)
from compaction_eval.compaction.split import Split, split_history
from compaction_eval.contracts.prompts import Candidate
from compaction_eval.contracts.settings import DEFAULT_KEEP_LAST, DEFAULT_SHAPE, Shape
from compaction_eval.contracts.tokens import count_tokens, truncate_tokens
from compaction_eval.contracts.traces import Trace

SUMMARY_LABEL = "[Summary of the earlier conversation, written by the compaction model]"
ANCHOR_LABEL = "[Original request, verbatim]"


@dataclass
class Compacted:
    """The result of compacting one sample with one prompt.

    Args:
        summary: the model's summary, cut to the budget.
        context: the whole compacted context as text (head, summary, anchor, tail).
        split: where the history was cut.
        span_tokens: tokens of the messages the model summarised (split.summarised).
        summary_tokens: tokens of `summary` (at most the budget).
        raw_summary_tokens: tokens the model produced before the budget was enforced.
        history_tokens: tokens of messages[0:at] plus the system prompt.
        context_tokens: tokens of `context`.
        input_tokens, output_tokens: the model's reported usage for the call.
        cache_read_tokens, cache_write_tokens: prompt-cache usage, when reported.
    """

    summary: str
    context: str
    split: Split
    span_tokens: int
    summary_tokens: int
    raw_summary_tokens: int
    history_tokens: int
    context_tokens: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def budget_truncated(self) -> bool:
        return self.raw_summary_tokens > self.summary_tokens


def build_request(
    trace: Trace, split: Split, candidate: Candidate, *, budget: int, shape: Shape, focus: str | None
) -> list:
    """The messages sent to the compaction model for one sample."""
    span = [trace.messages[i] for i in split.summarised]
    if shape == "inline":
        return [ChatMessageUser(content=candidate.render(budget=budget, span=render_span_text(span), focus=focus))]
    # Conversation first and identical across prompts, instruction last: the provider's
    # prompt cache can serve the whole prefix when several prompts compact the same span.
    prefix = [ChatMessageSystem(content=trace.system)] if trace.system else []
    return [*prefix, *to_chat_messages(span), ChatMessageUser(content=candidate.render(budget=budget, focus=focus))]


def assemble_context(trace: Trace, split: Split, summary: str) -> str:
    """Head + labelled summary + re-anchored original intent + tail, as text."""
    head = [trace.messages[i] for i in range(split.head_end)]
    tail = [trace.messages[i] for i in range(split.tail_start, split.at)]
    parts = []
    if trace.system:
        parts.append("[system]\n" + trace.system)
    parts += [render_message_text(m) for m in head]
    parts.append(f"{SUMMARY_LABEL}\n{summary}")
    parts.append(f"{ANCHOR_LABEL}\n{trace.texts[0]}")
    parts += [render_message_text(m) for m in tail]
    return "\n\n".join(parts)


async def compact_sample(
    model: Model,
    trace: Trace,
    at: int,
    candidate: Candidate,
    *,
    budget: int,
    keep_last: int = DEFAULT_KEEP_LAST,
    shape: Shape = DEFAULT_SHAPE,
    focus: str | None = None,
    cache: bool = False,
) -> Compacted:
    """Summarise messages[0:at] up to the tail with `candidate` and assemble the context.

    Args:
        model: the compaction model.
        trace: the trace.
        at: the compaction point.
        candidate: the prompt.
        budget: summary budget in tokens, sent as `max_tokens` and enforced on the output
            (a provider may overshoot or count differently).
        keep_last: messages kept verbatim at the end.
        shape: `inline` renders the span into the prompt; `messages` sends the span as
            messages with the instruction last.
        focus: an optional extra instruction for the prompt.
        cache: use inspect's generate cache and the answer journal (reruns with nothing
            changed, and reruns after a kill, cost nothing for the calls already answered).
    """
    # With a paid model, the CPU work around the call runs off the event loop so that
    # answers arriving for other samples are received and journaled without waiting.
    paid = cache and use_generate_cache(model)
    split, request = await off_the_loop(_prepare, trace, at, candidate, keep_last, budget, shape, focus, paid=paid)
    output = await generate_cached(model, request, config=GenerateConfig(max_tokens=budget), cache=cache)
    if output.error:
        raise RuntimeError(f"compaction model error on {trace.id}@{at}: {output.error}")
    return await off_the_loop(_compacted, trace, at, split, budget, output, paid=paid)


def _prepare(trace: Trace, at: int, candidate: Candidate, keep_last: int, budget: int, shape: Shape,
             focus: str | None) -> tuple[Split, list]:
    split = split_history(trace, at, keep_last)
    return split, build_request(trace, split, candidate, budget=budget, shape=shape, focus=focus)


def _compacted(trace: Trace, at: int, split: Split, budget: int, output: ModelOutput) -> Compacted:
    raw = output.completion.strip()
    raw_tokens = count_tokens(raw)
    summary = truncate_tokens(raw, budget) if raw_tokens > budget else raw
    context = assemble_context(trace, split, summary)
    usage = output.usage
    return Compacted(
        summary=summary,
        context=context,
        split=split,
        span_tokens=sum(trace.token_counts[i] for i in split.summarised),
        summary_tokens=count_tokens(summary),
        raw_summary_tokens=raw_tokens,
        history_tokens=count_tokens(trace.system) + sum(trace.token_counts[:at]),
        context_tokens=count_tokens(context),
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        cache_read_tokens=(usage.input_tokens_cache_read or 0) if usage else 0,
        cache_write_tokens=(usage.input_tokens_cache_write or 0) if usage else 0,
    )
