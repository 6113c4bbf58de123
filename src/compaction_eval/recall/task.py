"""The fact-recall task: dataset (trace x point x prompt) -> compaction -> fact scorer."""

from __future__ import annotations

from inspect_ai import Task, task

from compaction_eval.contracts.paths import resolve_inputs
from compaction_eval.contracts.prompts import load_candidates, require_span
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST, DEFAULT_SHAPE, CompactionSettings, Shape
from compaction_eval.recall.dataset import recall_samples
from compaction_eval.recall.scorer import fact_recall as fact_recall_scorer
from compaction_eval.recall.solver import compact_history


@task
def fact_recall(
    traces: str | list[str] | None = None,
    labels: str | list[str] | None = None,
    prompts: str | list[str] | None = None,
    budget: int = DEFAULT_BUDGET,
    keep_last: int = DEFAULT_KEEP_LAST,
    shape: Shape = DEFAULT_SHAPE,
    focus: str | None = None,
    judge_model: str | None = None,
    cache: bool = True,
    points: str | list[str] | None = None,
) -> Task:
    """Fact recall of candidate compaction prompts.

    Args:
        traces: trace files or directories (trace@1 or any importable format); default:
            the project's fixtures/traces, or the package's copy outside a project.
        labels: labels files or directories (default: labels, likewise).
        prompts: prompt templates or directories of them (default: prompts, likewise).
        budget: summary budget in tokens.
        keep_last: messages kept verbatim at the end of the history.
        shape: `inline` or `messages` (see compaction.compact).
        focus: optional focus instruction for every prompt.
        judge_model: optional LLM judge: it decides every fact (the judge tier).
        cache: use inspect's generate cache.
        points: only these samples (`TRACE@AT`, labelled points); default every labelled point.

    The compaction settings are plain task arguments (inspect records them in its log and
    takes them from `-T`); they become one `CompactionSettings` here, checked before anything runs.
    """
    def as_list(value: str | list[str] | None, kind: str) -> list[str]:
        given = [value] if isinstance(value, str) else value
        return [str(p) for p in resolve_inputs(given, kind)]

    settings = CompactionSettings(budget=budget, keep_last=keep_last, shape=shape, focus=focus)
    candidates = load_candidates(as_list(prompts, "prompts"))
    require_span(candidates, settings.shape)
    return Task(
        dataset=recall_samples(as_list(traces, "traces"), as_list(labels, "labels"), candidates,
                               points=[points] if isinstance(points, str) else list(points or [])),
        solver=compact_history(**settings.to_json(), cache=cache),
        scorer=fact_recall_scorer(judge_model=judge_model),
    )
