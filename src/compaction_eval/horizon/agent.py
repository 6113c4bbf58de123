"""The agent loop of the long-horizon suite: generate, run tools, compact on overflow.

It mirrors what `react(compaction=...)` and inspect's compaction orchestrator do (compact the
input before each generate once it passes the strategy's threshold, keep the compacted view
and append new messages to it, re-insert the prefix for strategies that preserve it, append
a summary message to the history), with three differences the suite needs:

- a strategy with `preserve_prefix = False` really loses its head: inspect re-inserts the
  system prompt in every case, so the naive truncating loop (`baseline`) cannot be built on
  `react()` unchanged;
- the world's context window is enforced whatever the model's own window: a request that
  still does not fit after compaction ends the sample as an overflow failure;
- every request is recorded block by block (horizon.ledger) for the cache-aware cost model.

The history (`state.messages`) is append-only; the policy decides what the model is sent.
"""

from __future__ import annotations

import time
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    CompactionStrategy,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolInfo

from compaction_eval.compaction.cache import generate_cached
from compaction_eval.contracts.chat_tokens import message_tokens, tools_tokens
from compaction_eval.contracts.settings import DEFAULT_HORIZON_BUDGET, DEFAULT_KEEP_LAST, CompactionSettings
from compaction_eval.horizon.ledger import STORE_KEY, Ledger
from compaction_eval.horizon.policies.notes import NOTES_TOOL, NotesBook
from compaction_eval.horizon.policies.resolve import PolicySpec, make_policy
from compaction_eval.horizon.tools import SUBMIT_TOOL, world_tools
from compaction_eval.horizon.worlds import World, get_world

MAX_COMPACTION_PASSES = 3
CONTINUE = "Continue with the task using the tools; call submit(answer) when you are done."


@solver
def horizon_agent(config: str = "full", prompt: str = "handoff", prompts_dir: str = "prompts", budget: int = DEFAULT_HORIZON_BUDGET,
                  keep_last: int = DEFAULT_KEEP_LAST, focus: str | None = None, output_reserve: int = 512, max_steps: int | None = None) -> Solver:
    """Run the sample's world under one context configuration.

    Args:
        config: the configuration (see policies.resolve).
        prompt: candidate prompt of `full`.
        prompts_dir: directory of candidate prompts.
        budget, keep_last, focus: how `full` compacts (one `CompactionSettings`).
        output_reserve: tokens of the window kept for each reply (also `max_tokens`).
        max_steps: model calls before giving up (default: 4 x plan length + 8).
    """
    settings = CompactionSettings(budget=budget, keep_last=keep_last, focus=focus)
    spec = PolicySpec(name=config, prompt=prompt, prompts_dir=prompts_dir, compaction=settings, output_reserve=output_reserve)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        world = get_world(state.metadata["world"], state.metadata["size"])
        notes = NotesBook()
        model = get_model()
        policy = make_policy(spec, world.context_window, notes, compactor=get_model(role="compactor"))
        tools = world_tools(world) + ([NOTES_TOOL] if spec.offers_notes else []) + [SUBMIT_TOOL]
        ledger = await run_loop(world, policy, model, tools, notes, state.messages,
                                output_reserve=output_reserve, max_steps=max_steps or 4 * len(world.plan) + 8)
        state.store.set(STORE_KEY, ledger.to_dict())
        state.output = ModelOutput.from_content(model=str(model), content=ledger.answer or "")
        return state

    return solve


def initial_messages(world: World) -> list[ChatMessage]:
    return [ChatMessageSystem(content=world.system, source="input"), ChatMessageUser(content=world.request, source="input")]


async def run_loop(world: World, policy: CompactionStrategy, model: Model, tools: list[ToolInfo], notes: NotesBook,
                   history: list[ChatMessage], *, output_reserve: int, max_steps: int) -> Ledger:
    """Run one world to submission, overflow or `max_steps`; `history` is filled in place."""
    started = time.perf_counter()
    ledger = Ledger(window=world.context_window)
    if not history or not any(isinstance(m, ChatMessageSystem) for m in history):
        history[:] = initial_messages(world)
    prefix = list(history)
    view = list(history)
    limit = world.context_window - output_reserve
    tool_cost = tools_tokens(tools)
    for step in range(max_steps):
        view = await _compact_if_needed(policy, model, view, prefix, history, tools, limit, ledger)
        request = policy.rewrite_request(view, step) if hasattr(policy, "rewrite_request") else view
        if tool_cost + sum(message_tokens(m) for m in request) > limit:
            ledger.overflow = True
            ledger.stop_reason = "overflow"
            break
        output = await generate_cached(model, _joined_user_turns(request), tools=tools, config=GenerateConfig(max_tokens=output_reserve))
        message = output.message
        ledger.record_request(request, tools, message_tokens(message), output.usage)
        history.append(message)
        view.append(message)
        if not message.tool_calls:
            nudge = ChatMessageUser(content=CONTINUE)
            history.append(nudge)
            view.append(nudge)
            continue
        for call in message.tool_calls:
            ledger.record_call(call.function, call.arguments)
            if call.function == "submit":
                ledger.answer = str(call.arguments.get("answer", ""))
                result = "Answer submitted."
            elif call.function == "notes" and any(t.name == "notes" for t in tools):
                result = notes.add(str(call.arguments.get("text", "")))
            else:
                result = world.call(call.function, call.arguments)
            tool_message = ChatMessageTool(content=result, tool_call_id=call.id, function=call.function)
            history.append(tool_message)
            view.append(tool_message)
        if ledger.answer is not None:
            ledger.stop_reason = "submitted"
            break
    else:
        ledger.stop_reason = "max_steps"
    ledger.wall_seconds = time.perf_counter() - started
    return ledger


async def _compact_if_needed(policy: CompactionStrategy, model: Model, view: list[ChatMessage], prefix: list[ChatMessage],
                             history: list[ChatMessage], tools: list[ToolInfo], limit: int, ledger: Ledger) -> list[ChatMessage]:
    threshold = int(policy.threshold) if not isinstance(policy.threshold, float) or policy.threshold > 1 else int(policy.threshold * limit)
    before = tools_tokens(tools) + sum(message_tokens(m) for m in view)
    if before <= min(threshold, limit):
        return view
    current = view
    for _ in range(MAX_COMPACTION_PASSES):
        outcome = await policy.compact_outcome(model, list(current), tools)
        current = _with_prefix(outcome.input, prefix) if outcome.preserve_prefix else list(outcome.input)
        if outcome.message is not None:
            history.append(outcome.message)
        after = tools_tokens(tools) + sum(message_tokens(m) for m in current)
        if after <= min(threshold, limit):
            break
    ledger.compactions.append({"step": len(ledger.requests), "strategy": type(policy).__name__, "tokens_before": before, "tokens_after": after,
                               "messages_before": len(view), "messages_after": len(current)})
    return current


def _with_prefix(messages: list[ChatMessage], prefix: list[ChatMessage]) -> list[ChatMessage]:
    """Re-insert prefix messages a strategy dropped (as inspect's orchestrator does)."""
    ids = {m.id for m in messages}
    missing = [m for m in prefix if m.id not in ids]
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], ChatMessageSystem):
        lead += 1
    return [*[m for m in missing if isinstance(m, ChatMessageSystem)], *messages[:lead],
            *[m for m in missing if not isinstance(m, ChatMessageSystem)], *messages[lead:]]


def usage_summary(ledger: dict[str, Any]) -> dict[str, int]:
    """Totals of a recorded ledger: agent input/output tokens and reported cache tokens."""
    reqs = ledger["requests"]
    return {
        "input_tokens": sum(r["input"] + r["cache_read"] + r["cache_write"] for r in reqs),
        "output_tokens": sum(r["output"] for r in reqs),
        "cache_read_tokens": sum(r["cache_read"] for r in reqs),
        "cache_write_tokens": sum(r["cache_write"] for r in reqs),
    }


def _joined_user_turns(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Consecutive user messages (the request, then a summary) joined as inspect would join
    them, but without the random message ids inspect records in `combined_from`: those
    are part of its generate-cache key and would make every rerun miss the cache."""
    out: list[ChatMessage] = []
    for m in messages:
        prev = out[-1] if out else None
        if isinstance(m, ChatMessageUser) and isinstance(prev, ChatMessageUser) and isinstance(m.content, str) and isinstance(prev.content, str):
            out[-1] = ChatMessageUser(id=prev.id, content=f"{prev.content}\n{m.content}", metadata={**(prev.metadata or {}), **(m.metadata or {})} or None)
        else:
            out.append(m)
    return out
