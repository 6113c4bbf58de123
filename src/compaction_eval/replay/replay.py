"""Replay of a recorded trace under a context policy at a window of W tokens.

The recorded messages are appended one by one; before every recorded assistant turn (the
moments the agent would call its model) the policy compacts the context when the request
passes its threshold, exactly as the long-horizon loop does (`horizon.agent`), calling the
compaction model when the policy summarises. The assistant turns are replayed as recorded,
not regenerated. At every labelled point the context the agent would see is scored with the
recall suite's matchers: which expected facts are visible, whether the original request is
still there, tokens in context, compactions so far. The cost of the whole replay is the
cache-aware simulation of its request sequence (`horizon.cost`) plus the compaction calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, Model

from compaction_eval.compaction.transcript import render_messages
from compaction_eval.contracts.chat_tokens import (
    message_tokens,
    messages_tokens,
    tools_tokens,
)
from compaction_eval.contracts.labels import Labels
from compaction_eval.contracts.settings import HORIZON_COMPACTION, CompactionSettings
from compaction_eval.contracts.traces import Trace, fold
from compaction_eval.horizon.agent import _compact_if_needed
from compaction_eval.horizon.cost import simulate_cache, uncached_cost
from compaction_eval.horizon.ledger import Ledger
from compaction_eval.horizon.policies.notes import NotesBook
from compaction_eval.horizon.policies.resolve import PolicySpec, make_policy
from compaction_eval.horizon.prices import CACHE_RULES, PriceTable
from compaction_eval.recall.scoring import score_summary
from compaction_eval.replay.common import (
    pairing_problems,
    replay_messages,
    system_messages,
)

DEFAULT_POLICIES = ("baseline", "eviction", "full")
DEFAULT_WINDOWS = (12000, 24000)


@dataclass(frozen=True)
class ReplaySettings:
    """How traces are replayed.

    Args:
        policies: context policies (see horizon.policies.resolve: ours, `inspect-*`, module:Class).
        windows: context windows in tokens; every policy runs at every window.
        prompt, prompts_dir, compaction, output_reserve: the candidate prompt and compaction
            settings of `full`, and the tokens kept free for each reply (as in the long-horizon suite).
        seconds_per_request: simulated time between requests (cache TTL accounting).
    """

    policies: tuple[str, ...] = DEFAULT_POLICIES
    windows: tuple[int, ...] = DEFAULT_WINDOWS
    prompt: str = "handoff"
    prompts_dir: str = "prompts"
    compaction: CompactionSettings = HORIZON_COMPACTION
    output_reserve: int = 512
    seconds_per_request: float = 5.0


@dataclass
class TraceReplay:
    """One trace under one policy at one window: a sample per labelled point, and totals."""

    samples: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)


def _request_visible(trace: Trace, text: str) -> bool:
    request = fold(trace.texts[0]) if trace.messages else ""
    return bool(request) and request in fold(text)


async def replay_trace(trace: Trace, labels: Labels, policy_name: str, window: int, model: Model,
                       settings: ReplaySettings, price: PriceTable | None) -> TraceReplay:
    """Replay `trace` under `policy_name` at `window` (see module docstring)."""
    spec = PolicySpec(name=policy_name, prompt=settings.prompt, prompts_dir=settings.prompts_dir,
                      compaction=settings.compaction, output_reserve=settings.output_reserve)
    policy = make_policy(spec, window, NotesBook(), compactor=model)
    per_message, tools, protocol = replay_messages(trace)
    points = set(labels.points)
    limit = window - settings.output_reserve
    ledger = Ledger(window=window)
    history: list[ChatMessage] = system_messages(trace)
    view: list[ChatMessage] = list(history)
    prefix: list[ChatMessage] = list(history)
    out = TraceReplay()
    overflows = 0
    pairing: list[str] = []
    peak = 0

    async def compact(view: list[ChatMessage]) -> list[ChatMessage]:
        return await _compact_if_needed(policy, model, view, prefix, history, tools, limit, ledger)

    for i, chat in enumerate([*per_message, []]):
        role = trace.messages[i].get("role") if i < len(trace.messages) else None
        if i in points or role == "assistant":
            view = await compact(view)
            tokens = tools_tokens(tools) + messages_tokens(view)
            peak = max(peak, tokens)
            if i in points:
                out.samples.append(_sample(trace, labels, i, view, tokens, tokens > limit, len(ledger.compactions)))
            if role == "assistant":
                overflows += tokens > limit
                pairing += [f"request {len(ledger.requests)}: {p}" for p in pairing_problems(view)]
                ledger.record_request(view, tools, sum(message_tokens(m) for m in chat), None)
        history += chat
        view = view + chat
        if i == 0:
            prefix = list(history)
    calls = getattr(policy, "calls", [])
    known, price = price is not None, price or CACHE_RULES  # None: no known price, USD figures null
    conversation = simulate_cache(ledger.requests, price, seconds_per_request=settings.seconds_per_request)
    compaction = uncached_cost(sum(c["input_tokens"] for c in calls), sum(c["output_tokens"] for c in calls), price)
    total = conversation.add(compaction)
    out.totals = {
        "trace": trace.id, "protocol": protocol, "requests": len(ledger.requests), "compactions": len(ledger.compactions),
        "compaction_calls": len(calls), "overflows": overflows, "peak_tokens": peak, "pairing_problems": pairing,
        "cost": {**total.to_dict(), "compaction_cost_usd": round(compaction.cost_usd, 6),
                 **({} if known else {"cost_usd": None, "compaction_cost_usd": None})},
    }
    for s in out.samples:
        s["replay_cost_usd"] = round(total.cost_usd, 6) if known else None
    return out


def _sample(trace: Trace, labels: Labels, at: int, view: list[ChatMessage], tokens: int, overflow: bool, compactions: int) -> dict[str, Any]:
    text = render_messages(view)
    score = score_summary(text, labels, trace, at)
    return {
        "trace": trace.id,
        "point": at,
        "synthetic": labels.labelled_by == "generator",
        "visible_recall": round(score.recall, 4),
        "recall_by_category": {k: round(v, 4) for k, v in score.recall_by_category.items()},
        "request_visible": _request_visible(trace, text),
        "compactions": compactions,
        "context_tokens": tokens,
        "context_messages": len(view),
        "assistant_turns_visible": sum(isinstance(m, ChatMessageAssistant) for m in view),
        "overflow": overflow,
        "facts": [{"id": v.id, "category": v.category, "kept": v.kept, "matcher": v.matcher, "weight": v.weight,
                   "critical": v.critical} for v in score.facts],
    }
