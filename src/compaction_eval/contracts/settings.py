"""Every default setting, and the one answer to "is this model an offline stand-in?".

A run's results are comparable with another's only when the settings below agree: the gate
compares `CompactionSettings` (plus the models), and every command, task and config takes
its defaults from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Shape = Literal["inline", "messages"]

DEFAULT_MODEL = "extractive/default"
"""The compaction model when none is given: the offline extractive summariser (a stand-in)."""
DEFAULT_AGENT = "scripted/default"
"""The long-horizon agent when none is given: the offline scripted agent (a stand-in)."""
DEFAULT_BUDGET = 800
"""Summary budget in tokens for the fact-recall suite."""
DEFAULT_HORIZON_BUDGET = 600
"""Summary budget of the `full` context configuration in the long-horizon worlds (small windows)."""
DEFAULT_KEEP_LAST = 4
"""Messages kept verbatim at the end of the history (never splitting a tool call from its result)."""
DEFAULT_SHAPE: Shape = "inline"
DEFAULT_HORIZON_PROMPT = "handoff"

# Providers registered by this package (and inspect's mockllm): deterministic, not LLMs.
STAND_IN_PROVIDERS = ("extractive/", "scripted/", "reader/", "mockllm/")


def is_stand_in(model: object) -> bool:
    """True for an offline stand-in provider (its numbers must be labelled as such).

    >>> is_stand_in("extractive/default"), is_stand_in("anthropic/claude-sonnet-4-5")
    (True, False)
    """
    return str(model).startswith(STAND_IN_PROVIDERS)


@dataclass(frozen=True)
class CompactionSettings:
    """How one sample is compacted; two runs are comparable only when these agree.

    Args:
        budget: summary budget in tokens (the compaction model's max_tokens, enforced on output).
        keep_last: messages kept verbatim at the end of the history.
        shape: `inline` (span inside one user message) or `messages` (span as chat messages).
        focus: an optional focus instruction passed to every prompt.
    """

    budget: int = DEFAULT_BUDGET
    keep_last: int = DEFAULT_KEEP_LAST
    shape: Shape = DEFAULT_SHAPE
    focus: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
