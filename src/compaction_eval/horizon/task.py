"""The long-horizon task: one sample per world, run under one context configuration."""

from __future__ import annotations

from typing import Any, cast

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from compaction_eval.contracts.settings import (
    DEFAULT_HORIZON_BUDGET,
    DEFAULT_KEEP_LAST,
    DEFAULT_MODEL,
    CompactionSettings,
)
from compaction_eval.horizon.agent import horizon_agent
from compaction_eval.horizon.scorer import horizon_checker
from compaction_eval.horizon.worlds import get_world, world_ids

DEFAULT_COMPACTOR = DEFAULT_MODEL


def horizon_dataset(worlds: list[str] | None = None, size: str = "small") -> MemoryDataset:
    """One sample per world (all 12 by default) at the given size preset."""
    samples = []
    for wid in worlds or world_ids():
        w = get_world(wid, size)
        samples.append(Sample(
            id=f"{wid}@{size}", input=w.request,
            metadata={"world": wid, "size": size, "family": w.family, "context_window": w.context_window,
                      "plan_steps": len(w.plan), "planted": w.planted},
        ))
    return MemoryDataset(samples, name="long_horizon")


def horizon_task_settings(settings: CompactionSettings) -> dict[str, Any]:
    """`long_horizon`'s arguments for `settings` (its policies render the span inline)."""
    settings.require_inline("the long-horizon suite")
    return {"budget": settings.budget, "keep_last": settings.keep_last, "focus": settings.focus}


@task
def long_horizon(
    config: str = "full",
    worlds: str | list[str] | None = None,
    size: str = "small",
    prompt: str = "handoff",
    prompts_dir: str = "prompts",
    budget: int = DEFAULT_HORIZON_BUDGET,
    keep_last: int = DEFAULT_KEEP_LAST,
    focus: str | None = None,
    output_reserve: int = 512,
    compactor: str | None = DEFAULT_COMPACTOR,
) -> Task:
    """Long-horizon completion under one context configuration.

    Args:
        config: `baseline`, `baseline-mutated`, `eviction`, `full`, `inspect-edit`,
            `inspect-trim`, `inspect-summary`, `inspect-auto` or `module:Class`.
        worlds: world ids (comma-separated or a list; default all).
        size: world size preset (`small`, `medium`, `large`).
        prompt: candidate prompt used by `full`.
        prompts_dir: directory of candidate prompts.
        budget, keep_last, focus: how `full` compacts (see `CompactionSettings`; plain task
            arguments, so inspect records them and takes them from `-T`).
        output_reserve: tokens of the window kept for each reply.
        compactor: default model of the `compactor` role (overridden by `--model-role
            compactor=...`); the offline extractive summariser unless set.
    """
    ids = worlds.split(",") if isinstance(worlds, str) else worlds
    dataset = horizon_dataset(ids, size)
    # horizon_dataset gives every sample its metadata
    longest = max(cast(dict[str, Any], s.metadata)["plan_steps"] for s in dataset)
    max_steps = 4 * longest + 8
    return Task(
        dataset=dataset,
        solver=horizon_agent(config=config, prompt=prompt, prompts_dir=prompts_dir, budget=budget, keep_last=keep_last, focus=focus,
                             output_reserve=output_reserve),
        scorer=horizon_checker(),
        # The loop stops itself at max_steps; the limit is the guard against a runaway sample
        # (each step adds an assistant message, its tool results and possibly a note).
        message_limit=4 * max_steps + 8,
        model_roles={"compactor": compactor} if compactor else None,
        name=f"long_horizon_{config.replace(':', '_').replace('.', '_')}",
        metadata={"config": config, "size": size, "prompt": prompt},
    )
