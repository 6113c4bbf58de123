"""`inspect eval evals/long_horizon.py -T config=full --model scripted/default`

A thin re-export of the package's task with the candidate prompts resolved from this
repository, so the task runs from any working directory. Configurations: `-T config=baseline`
(`eviction`, `full`, `baseline-mutated`, `inspect-edit`, `inspect-trim`, `inspect-summary`,
`inspect-auto`, or `module:Class`); `-T size=medium` for bigger worlds.
"""

from pathlib import Path

from inspect_ai import task

from compaction_eval.contracts.paths import from_invocation_dir
from compaction_eval.contracts.settings import DEFAULT_MODEL, HORIZON_COMPACTION
from compaction_eval.horizon.task import long_horizon as _long_horizon

ROOT = Path(__file__).resolve().parent.parent


@task
def long_horizon(
    config: str = "full",
    worlds: str | None = None,
    size: str = "small",
    prompt: str = "handoff",
    prompts_dir: str = str(ROOT / "prompts"),
    budget: int = HORIZON_COMPACTION.budget,
    keep_last: int = HORIZON_COMPACTION.keep_last,
    focus: str | None = None,
    output_reserve: int = 512,
    compactor: str | None = DEFAULT_MODEL,
):
    """Long-horizon completion of every world under one context configuration."""
    return _long_horizon(config=config, worlds=worlds, size=size, prompt=prompt, prompts_dir=from_invocation_dir(prompts_dir),
                         budget=budget, keep_last=keep_last, focus=focus, output_reserve=output_reserve, compactor=compactor)
