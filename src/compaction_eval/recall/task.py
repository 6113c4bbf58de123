"""The fact-recall task: dataset (trace x point x prompt) -> compaction -> fact scorer."""

from __future__ import annotations

from inspect_ai import Task, task

from compaction_eval.compaction.compact import Shape
from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST
from compaction_eval.recall.dataset import recall_samples
from compaction_eval.recall.scorer import fact_recall as fact_recall_scorer
from compaction_eval.recall.solver import compact_history


@task
def fact_recall(
    traces: str | list[str] = "fixtures/traces",
    labels: str | list[str] = "labels",
    prompts: str | list[str] = "prompts",
    budget: int = DEFAULT_BUDGET,
    keep_last: int = DEFAULT_KEEP_LAST,
    shape: Shape = "inline",
    focus: str | None = None,
    judge_model: str | None = None,
    cache: bool = True,
) -> Task:
    """Fact recall of candidate compaction prompts.

    Args:
        traces: trace files or directories (trace@1 or any importable format).
        labels: labels files or directories.
        prompts: prompt templates or directories of them.
        budget: summary budget in tokens.
        keep_last: messages kept verbatim at the end of the history.
        shape: `inline` or `messages` (see compaction.compact).
        focus: optional focus instruction for every prompt.
        judge_model: optional LLM judge for meaning categories.
        cache: use inspect's generate cache.
    """
    as_list = lambda v: [v] if isinstance(v, str) else list(v)  # noqa: E731
    candidates = load_candidates(as_list(prompts))
    return Task(
        dataset=recall_samples(as_list(traces), as_list(labels), candidates),
        solver=compact_history(budget=budget, keep_last=keep_last, shape=shape, focus=focus, cache=cache),
        scorer=fact_recall_scorer(judge_model=judge_model),
    )
