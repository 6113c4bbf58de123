"""Configurations by name: ours, inspect's built-ins, or a user's `module:Class`."""

from __future__ import annotations

import importlib
import inspect as pyinspect
from collections.abc import Callable
from dataclasses import dataclass

from inspect_ai.model import CompactionStrategy, Model

from compaction_eval.contracts.settings import (
    DEFAULT_HORIZON_PROMPT,
    HORIZON_COMPACTION,
    CompactionSettings,
)
from compaction_eval.horizon.policies.notes import NotesBook
from compaction_eval.horizon.policies.registry import ALL_CONFIGS, CONFIGS, Build


@dataclass(frozen=True)
class PolicySpec:
    """How to build a configuration for one world.

    Args:
        name: `baseline`, `baseline-mutated`, `eviction`, `full`, `full-no-notes`, an `inspect-*` built-in,
            or `package.module:Class` (a `CompactionStrategy` subclass; it receives
            `threshold=` if its constructor takes one).
        prompt: the candidate prompt of `full` (a name from `prompts_dir`).
        prompts_dir: where the candidate prompts live.
        compaction: how `full` compacts (budget, keep_last, focus; its span is rendered
            inline, so `shape: messages` is refused).
        output_reserve: tokens kept free for the reply.
    """

    name: str
    prompt: str = DEFAULT_HORIZON_PROMPT
    prompts_dir: str = "prompts"
    compaction: CompactionSettings = HORIZON_COMPACTION
    output_reserve: int = 512

    def __post_init__(self) -> None:
        self.compaction.require_inline("the context policies")

    @property
    def offers_notes(self) -> bool:
        return self.name == "full"


def make_policy(spec: PolicySpec, window: int, notes: NotesBook, compactor: Model | None = None) -> CompactionStrategy:
    """The strategy of `spec` for a world with `window` tokens.

    Every strategy triggers when the request would leave less than `output_reserve` tokens
    of the window (inspect's float thresholds are shares of the model's window; here the
    world's window is enforced whatever the model's own is).
    """
    threshold = window - spec.output_reserve
    if spec.name in CONFIGS:
        return CONFIGS[spec.name].build(Build(spec=spec, window=window, threshold=threshold, notes=notes, compactor=compactor))
    if ":" in spec.name:
        return _user_strategy(spec.name, threshold)
    raise ValueError(f"unknown configuration {spec.name!r}: use {', '.join(ALL_CONFIGS)} or module:Class")


def _user_strategy(ref: str, threshold: int) -> CompactionStrategy:
    module_name, _, class_name = ref.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load compaction strategy {ref!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, CompactionStrategy)):
        raise ValueError(f"{ref} is not a CompactionStrategy subclass")
    params = pyinspect.signature(cls).parameters
    make: Callable[..., CompactionStrategy] = cls  # a subclass: its own constructor, not the base's
    return make(threshold=threshold) if "threshold" in params else make()
