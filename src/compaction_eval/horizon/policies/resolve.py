"""Configurations by name: ours, inspect's built-ins, or a user's `module:Class`."""

from __future__ import annotations

import importlib
import inspect as pyinspect
from dataclasses import dataclass
from pathlib import Path

from inspect_ai.model import (
    CompactionAuto,
    CompactionEdit,
    CompactionStrategy,
    CompactionSummary,
    CompactionTrim,
    Model,
)

from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.horizon.policies.eviction import TieredEviction
from compaction_eval.horizon.policies.full import FullCompaction
from compaction_eval.horizon.policies.mutated import MutatedPrefixBaseline
from compaction_eval.horizon.policies.notes import NotesBook
from compaction_eval.horizon.policies.truncation import BaselineTruncation

DEFAULT_CONFIGS = ("baseline", "eviction", "full")
BUILTIN_CONFIGS = ("inspect-edit", "inspect-trim", "inspect-summary", "inspect-auto")
OURS = ("baseline", "baseline-mutated", "eviction", "full", "full-no-notes")


@dataclass(frozen=True)
class PolicySpec:
    """How to build a configuration for one world.

    Args:
        name: `baseline`, `baseline-mutated`, `eviction`, `full`, `full-no-notes`, an `inspect-*` built-in,
            or `package.module:Class` (a `CompactionStrategy` subclass; it receives
            `threshold=` if its constructor takes one).
        prompt: the candidate prompt of `full` (a name from `prompts_dir`).
        prompts_dir: where the candidate prompts live.
        budget: the summary budget of `full`.
        output_reserve: tokens kept free for the reply.
    """

    name: str
    prompt: str = "handoff"
    prompts_dir: str = "prompts"
    budget: int = 600
    output_reserve: int = 512

    @property
    def offers_notes(self) -> bool:
        return self.name == "full"


def known_config(name: str) -> bool:
    return name in OURS or name in BUILTIN_CONFIGS or ":" in name


def make_policy(spec: PolicySpec, window: int, notes: NotesBook, compactor: Model | None = None) -> CompactionStrategy:
    """The strategy of `spec` for a world with `window` tokens.

    Every strategy triggers when the request would leave less than `output_reserve` tokens
    of the window (inspect's float thresholds are shares of the model's window; here the
    world's window is enforced whatever the model's own is).
    """
    threshold = window - spec.output_reserve
    name = spec.name
    if name == "baseline":
        return BaselineTruncation(window=window, output_reserve=spec.output_reserve)
    if name == "baseline-mutated":
        return MutatedPrefixBaseline(window=window, output_reserve=spec.output_reserve)
    if name == "eviction":
        return TieredEviction(window=window, output_reserve=spec.output_reserve)
    if name in ("full", "full-no-notes"):
        # `full-no-notes` is the ablation of the notes tool: what summary + anchor keep alone.
        return FullCompaction(window=window, candidate=_candidate(spec), notes=notes, budget=spec.budget,
                              output_reserve=spec.output_reserve, compactor=compactor)
    if name == "inspect-edit":
        return CompactionEdit(threshold=threshold)
    if name == "inspect-trim":
        return CompactionTrim(threshold=threshold)
    if name == "inspect-summary":
        return CompactionSummary(threshold=threshold, model=compactor)
    if name == "inspect-auto":
        # Native compaction needs a provider that has it; otherwise inspect falls back to a
        # summary by the task's model.
        return CompactionAuto(threshold=threshold)
    if ":" in name:
        return _user_strategy(name, threshold)
    raise ValueError(f"unknown configuration {name!r}: use {', '.join(OURS + BUILTIN_CONFIGS)} or module:Class")


def _candidate(spec: PolicySpec):
    for c in load_candidates([Path(spec.prompts_dir)]):
        if c.name == spec.prompt:
            return c
    raise ValueError(f"no candidate prompt named {spec.prompt!r} in {spec.prompts_dir}")


def _user_strategy(ref: str, threshold: int) -> CompactionStrategy:
    module_name, _, class_name = ref.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load compaction strategy {ref!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, CompactionStrategy)):
        raise ValueError(f"{ref} is not a CompactionStrategy subclass")
    params = pyinspect.signature(cls).parameters
    return cls(threshold=threshold) if "threshold" in params else cls()
