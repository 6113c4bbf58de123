"""`inspect eval evals/fact_recall.py --model extractive/default`

A thin re-export of the package's task with paths resolved from this repository, so the
task runs from any working directory; relative `-T` paths are read from the working directory. Override with `-T traces=... -T labels=...`.
"""

import os
from pathlib import Path

from inspect_ai import task

from compaction_eval.recall.task import fact_recall as _fact_recall

ROOT = Path(__file__).resolve().parent.parent


def _from_cwd(path):
    """A relative `-T` path read from the directory `inspect eval` was started in: inspect
    creates tasks from a file with that file's folder as working directory, and the shell's
    $PWD still names where the user was."""
    if isinstance(path, (list, tuple)):
        return [_from_cwd(x) for x in path]
    p = Path(path)
    if p.is_absolute():
        return path
    start = os.environ.get("PWD")
    base = Path(start) if start and Path(start).is_dir() else Path.cwd()
    return str(base / p)


@task
def fact_recall(
    traces: str = str(ROOT / "fixtures" / "traces"),
    labels: str = str(ROOT / "labels"),
    prompts: str = str(ROOT / "prompts"),
    budget: int = 800,
    keep_last: int = 4,
    shape: str = "inline",
    focus: str | None = None,
    judge_model: str | None = None,
    cache: bool = False,
):
    """Fact recall of every candidate prompt on the repository's labelled corpus."""
    return _fact_recall(
        traces=_from_cwd(traces), labels=_from_cwd(labels), prompts=_from_cwd(prompts), budget=budget, keep_last=keep_last,
        shape=shape, focus=focus, judge_model=judge_model, cache=cache,
    )
