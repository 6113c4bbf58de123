"""`inspect eval evals/fact_recall.py --model extractive/default`

A thin re-export of the package's task with paths resolved from this repository, so the
task runs from any working directory; relative `-T` paths are read from the working directory. Override with `-T traces=... -T labels=...`.
"""

from pathlib import Path

from inspect_ai import task

from compaction_eval.contracts.paths import from_invocation_dir
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST, DEFAULT_SHAPE
from compaction_eval.recall.task import fact_recall as _fact_recall

ROOT = Path(__file__).resolve().parent.parent


@task
def fact_recall(
    traces: str = str(ROOT / "fixtures" / "traces"),
    labels: str = str(ROOT / "labels"),
    prompts: str = str(ROOT / "prompts"),
    budget: int = DEFAULT_BUDGET,
    keep_last: int = DEFAULT_KEEP_LAST,
    shape: str = DEFAULT_SHAPE,
    focus: str | None = None,
    judge_model: str | None = None,
    cache: bool = False,
):
    """Fact recall of every candidate prompt on the repository's labelled corpus."""
    return _fact_recall(
        traces=from_invocation_dir(traces), labels=from_invocation_dir(labels), prompts=from_invocation_dir(prompts), budget=budget, keep_last=keep_last,
        shape=shape, focus=focus, judge_model=judge_model, cache=cache,
    )
