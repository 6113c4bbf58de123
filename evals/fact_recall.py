"""`inspect eval evals/fact_recall.py --model extractive/default`

A thin re-export of the package's task with paths resolved from this repository, so the
task runs from any working directory; relative `-T` paths are read from the working directory. Override with `-T traces=... -T labels=...`.
"""

from pathlib import Path

from inspect_ai import task

from compaction_eval.contracts.paths import DEFAULTS, from_invocation_dir
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST, DEFAULT_SHAPE
from compaction_eval.recall.task import fact_recall as _fact_recall

ROOT = Path(__file__).resolve().parent.parent


def _default(kind: str) -> list[str]:
    """The default corpus every command shares (contracts.paths.DEFAULTS), in this repository."""
    return [str(ROOT / name) for name in DEFAULTS[kind]]


@task
def fact_recall(
    traces: str | list[str] | None = None,
    labels: str | list[str] | None = None,
    prompts: str | list[str] | None = None,
    budget: int = DEFAULT_BUDGET,
    keep_last: int = DEFAULT_KEEP_LAST,
    shape: str = DEFAULT_SHAPE,
    focus: str | None = None,
    judge_model: str | None = None,
    cache: bool = False,
):
    """Fact recall of every candidate prompt on the repository's labelled corpus."""
    return _fact_recall(
        traces=from_invocation_dir(traces) if traces else _default("traces"),
        labels=from_invocation_dir(labels) if labels else _default("labels"),
        prompts=from_invocation_dir(prompts) if prompts else _default("prompts"), budget=budget, keep_last=keep_last,
        shape=shape, focus=focus, judge_model=judge_model, cache=cache,
    )
