"""The table of context configurations: name -> what it is and how to build it.

Built-ins and inspect's strategies are entries of the same table a user's strategy joins
(`module:Class`); help texts, validation and the runner all read it. Building imports
inspect, so each builder imports what it needs when called: reading the table is cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Build:
    """What a builder gets for one world.

    Args:
        spec: the PolicySpec (name, prompt, prompts_dir, compaction, output_reserve).
        window: the world's context window in tokens.
        threshold: tokens at which a strategy triggers (window minus the output reserve).
        notes: the world's NotesBook (used by `full`).
        compactor: the compactor-role model, or None for the task's model.
    """

    spec: Any
    window: int
    threshold: int
    notes: Any
    compactor: Any


@dataclass(frozen=True)
class Config:
    """One context configuration.

    Args:
        name: what users pass to `--configs`.
        description: one line for help texts and reports.
        build: Build -> an inspect CompactionStrategy.
        in_run: part of `compaction-eval run` (fast offline); `horizon` runs every entry.
    """

    name: str
    description: str
    build: Callable[[Build], Any]
    in_run: bool = True


def _baseline(b: Build) -> Any:
    from compaction_eval.horizon.policies.truncation import BaselineTruncation

    return BaselineTruncation(window=b.window, output_reserve=b.spec.output_reserve)


def _baseline_mutated(b: Build) -> Any:
    from compaction_eval.horizon.policies.mutated import MutatedPrefixBaseline

    return MutatedPrefixBaseline(window=b.window, output_reserve=b.spec.output_reserve)


def _eviction(b: Build) -> Any:
    from compaction_eval.horizon.policies.eviction import TieredEviction

    return TieredEviction(window=b.window, output_reserve=b.spec.output_reserve)


def _full(b: Build) -> Any:
    from compaction_eval.horizon.policies.full import FullCompaction

    settings = b.spec.compaction
    return FullCompaction(window=b.window, candidate=_candidate(b.spec), notes=b.notes, budget=settings.budget, keep_last=settings.keep_last,
                          focus=settings.focus, output_reserve=b.spec.output_reserve, compactor=b.compactor)


def _candidate(spec: Any) -> Any:
    """The candidate prompt `full` compacts with."""
    from compaction_eval.contracts.prompts import load_candidates

    for c in load_candidates([Path(spec.prompts_dir)]):
        if c.name == spec.prompt:
            return c
    raise ValueError(f"no candidate prompt named {spec.prompt!r} in {spec.prompts_dir}")


def _inspect_edit(b: Build) -> Any:
    from inspect_ai.model import CompactionEdit

    return CompactionEdit(threshold=b.threshold)


def _inspect_trim(b: Build) -> Any:
    from inspect_ai.model import CompactionTrim

    return CompactionTrim(threshold=b.threshold)


def _inspect_summary(b: Build) -> Any:
    from inspect_ai.model import CompactionSummary

    return CompactionSummary(threshold=b.threshold, model=b.compactor)


def _inspect_auto(b: Build) -> Any:
    from inspect_ai.model import CompactionAuto

    # Native compaction needs a provider that has it; otherwise inspect falls back to a
    # summary by the task's model.
    return CompactionAuto(threshold=b.threshold)


CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("baseline", "append-only; on overflow the oldest messages go, head included", _baseline),
        Config("eviction", "tiered eviction of stale tool results (tombstones keep tool-call pairing)", _eviction),
        Config("full", "eviction + compaction of the middle with a candidate prompt + re-anchoring + notes tool", _full),
        # The ablation of the notes tool: what summary + anchor keep alone.
        Config("full-no-notes", "`full` without the notes tool", _full, in_run=False),
        Config("baseline-mutated", "`baseline` with a per-request timestamp in the system prompt (cache ablation)", _baseline_mutated),
        Config("inspect-edit", "inspect's CompactionEdit (clears old tool results)", _inspect_edit),
        Config("inspect-trim", "inspect's CompactionTrim (drops the oldest messages after the prefix)", _inspect_trim),
        Config("inspect-summary", "inspect's CompactionSummary (the compactor summarises the history)", _inspect_summary, in_run=False),
        Config("inspect-auto", "inspect's CompactionAuto (native compaction, else a summary by the task's model)", _inspect_auto, in_run=False),
    )
}
ALL_CONFIGS = tuple(CONFIGS)
RUN_CONFIGS = tuple(name for name, c in CONFIGS.items() if c.in_run)
DEFAULT_CONFIGS = ("baseline", "eviction", "full")


def known_config(name: str) -> bool:
    """A table entry, or a user's `package.module:Class`."""
    return name in CONFIGS or ":" in name


def config_help() -> str:
    """One line per configuration, for help texts."""
    return "; ".join(f"{c.name}: {c.description}" for c in CONFIGS.values()) + "; or package.module:Class"
