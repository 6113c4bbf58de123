"""What inspect finds through the `inspect_ai` entry point (pyproject.toml).

- the offline providers: `--model extractive/default`, `--model scripted/default`;
- the tasks: `inspect eval compaction_eval/fact_recall` and `compaction_eval/long_horizon`,
  with `-T` arguments as in `compaction_eval.recall.task.fact_recall` and
  `compaction_eval.horizon.task.long_horizon` (relative paths are read from the working
  directory; the default inputs are the project's or the package's, see contracts/paths.py).

inspect loads this module whenever it creates a model, in every process and for every eval
(ours or not), so it stays cheap: the task modules (scorers, scikit-learn) are imported only
when one of these tasks is created.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task

import compaction_eval.standins.registry  # noqa: F401  (registers the providers)


@task(name="fact_recall")
def fact_recall(**task_args: Any) -> Task:
    """Fact recall of candidate compaction prompts (arguments: compaction_eval.recall.task)."""
    from compaction_eval.recall.task import fact_recall as build

    return build(**task_args)


@task(name="long_horizon")
def long_horizon(**task_args: Any) -> Task:
    """Long-horizon completion under one context configuration (compaction_eval.horizon.task)."""
    from compaction_eval.horizon.task import long_horizon as build

    return build(**task_args)
