"""Solver: compact the sample's history at its point with its prompt."""

from __future__ import annotations

from dataclasses import asdict

from inspect_ai.model import ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from compaction_eval.compaction.cache import off_the_loop, use_generate_cache
from compaction_eval.compaction.compact import compact_sample
from compaction_eval.contracts.prompts import Candidate
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST, DEFAULT_SHAPE, Shape
from compaction_eval.contracts.traces import Trace
from compaction_eval.recall.loading import candidate_at, trace_at

STORE_KEY = "compacted"


def _inputs(trace_path: str, prompt_path: str, fields: tuple[str, ...]) -> tuple[Trace, Candidate]:
    return trace_at(trace_path), candidate_at(prompt_path, fields)


@solver
def compact_history(budget: int = DEFAULT_BUDGET, keep_last: int = DEFAULT_KEEP_LAST, shape: Shape = DEFAULT_SHAPE, focus: str | None = None, cache: bool = True) -> Solver:
    """Compact messages[0:point] of the sample's trace with the sample's prompt.

    Args:
        budget: summary budget in tokens (enforced).
        keep_last: messages kept verbatim at the end of the history.
        shape: `inline` (span in the prompt) or `messages` (span as messages, instruction last).
        focus: optional focus instruction passed to every prompt.
        cache: use inspect's generate cache.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        # The "compactor" role lets a user bill compaction to a different model than the
        # task's; unset, it is the task's model.
        model = get_model(role="compactor")
        # with a paid model, reading inputs runs off the event loop (see compact_sample)
        paid = cache and use_generate_cache(model)
        trace, candidate = await off_the_loop(_inputs, meta["trace_path"], meta["prompt_path"], tuple(meta["prompt_fields"]), paid=paid)
        compacted = await compact_sample(
            model, trace, meta["point"], candidate, budget=budget, keep_last=keep_last, shape=shape, focus=focus, cache=cache
        )
        record = asdict(compacted)
        record["split"] = {"head_end": compacted.split.head_end, "tail_start": compacted.split.tail_start}
        record.update(budget=budget, shape=shape, keep_last=keep_last, model=str(model))
        state.store.set(STORE_KEY, record)
        state.output = ModelOutput.from_content(model=str(model), content=compacted.summary)
        return state

    return solve
