"""Every default setting, and the one answer to "is this model an offline stand-in?".

A run's results are comparable with another's only when the settings below agree: the gate
compares `CompactionSettings` (plus the models, `COMPARED`), read from a results file by
`recorded_settings`; every command, task and config takes its defaults from here, and every
config carries one `CompactionSettings` (`config.compaction`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from compaction_eval.contracts.problems import ContractError, Problem

Shape = Literal["inline", "messages"]
SHAPES: tuple[Shape, ...] = ("inline", "messages")

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
DEFAULT_JUDGE_CONNECTIONS = 8
"""Judge requests in flight at once when `validate-matchers` judges the gold set with a real
model (a stand-in answers in call order, one at a time)."""

# Limits of every real model call (the one model session, compaction/session.py): inspect's
# own retries are unbounded, which can hang a CI job.
DEFAULT_TIMEOUT = 120
DEFAULT_MAX_RETRIES = 4
DEFAULT_HORIZON_PROMPT = "handoff"

# Providers registered by this package (and inspect's mockllm): deterministic, not LLMs.
STAND_IN_PROVIDERS = ("extractive/", "scripted/", "reader/", "mockllm/")


def is_stand_in(model: object) -> bool:
    """True for an offline stand-in provider (its numbers must be labelled as such).

    >>> is_stand_in("extractive/default"), is_stand_in("anthropic/claude-sonnet-4-5")
    (True, False)
    """
    return str(model).startswith(STAND_IN_PROVIDERS)


RECORDED_PROVIDER = "recorded/"


def is_recorded(model: object) -> bool:
    """True for `recorded/<file or dir>`: answers replayed from a recording (offline, not a
    stand-in: who wrote them is stated with the results).

    >>> is_recorded("recorded/fixtures/recorded/llm"), is_recorded("anthropic/x")
    (True, False)
    """
    return str(model).startswith(RECORDED_PROVIDER)


@dataclass(frozen=True)
class CompactionSettings:
    """How one sample is compacted; two runs are comparable only when these agree.

    Args:
        budget: summary budget in tokens (the compaction model's max_tokens, enforced on output).
        keep_last: messages kept verbatim at the end of the history.
        shape: `inline` (span inside one user message) or `messages` (span as chat messages).
        focus: an optional focus instruction passed to every prompt.

    A value that would run and report something wrong (a budget of 0 sent to a model, a
    negative `keep_last` acting as 0) is refused, naming the command-line option:

    >>> CompactionSettings(budget=400).budget
    400
    >>> CompactionSettings(keep_last=-1)
    Traceback (most recent call last):
    ...
    compaction_eval.contracts.problems.ContractError: --keep-last: -1 is not valid: must be 0 or more messages
    """

    budget: int = DEFAULT_BUDGET
    keep_last: int = DEFAULT_KEEP_LAST
    shape: Shape = DEFAULT_SHAPE
    focus: str | None = None

    def __post_init__(self) -> None:
        for flag, value, low, what in (("--budget", self.budget, 1, "a positive number of tokens"),
                                       ("--keep-last", self.keep_last, 0, "0 or more messages")):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ContractError([Problem(flag, "", f"{value!r} is not valid: must be {what}")])
        if self.shape not in SHAPES:
            raise ContractError([Problem("--shape", "", f"{self.shape!r} is not 'inline' or 'messages'")])
        if self.focus is not None and not isinstance(self.focus, str):
            raise ContractError([Problem("--focus", "", f"{self.focus!r} is not text")])

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompactionSettings:
        """The settings of a JSON object (keys it lacks keep their defaults)."""
        return cls(**{k: data[k] for k in COMPACTION_FIELDS if k in data})

    def require_inline(self, suite: str) -> None:
        """Refuse `shape: messages` in a suite whose compaction renders the span inline
        (the long-horizon and replay policies): the setting would be silently ignored."""
        if self.shape != "inline":
            raise ContractError([Problem("--shape", "", f"{self.shape!r}: {suite} renders the span inline (shape 'messages' is the recall suite's)")])


HORIZON_COMPACTION = CompactionSettings(budget=DEFAULT_HORIZON_BUDGET)
"""The `full` configuration's settings in the long-horizon worlds and the replay (small windows)."""

COMPACTION_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(CompactionSettings))
COMPARED: tuple[str, ...] = ("model", *COMPACTION_FIELDS, "judge_model")
"""What two recall runs must share to be compared: the models and the `CompactionSettings`."""


def recorded_settings(results: Mapping[str, Any]) -> dict[str, Any]:
    """The `COMPARED` settings a results.json records, by name (None where it records none).

    Read from `config.compaction` (written since the settings travel as one value), else the
    flat `config` keys every results@1 file carries, else the document's top level (`model`).
    The gate and the report's baseline check compare runs through this function.

    >>> old = {"model": "extractive/default", "config": {"budget": 800, "keep_last": 4, "shape": "inline"}}
    >>> new = {"config": {"model": "extractive/default", "compaction": CompactionSettings().to_json()}}
    >>> recorded_settings(old) == recorded_settings(new)
    True
    """
    config = results.get("config") or {}
    nested = config.get("compaction")
    if not isinstance(nested, Mapping):
        nested = {}
    out = {}
    for key in COMPARED:
        out[key] = nested[key] if key in nested else config.get(key, results.get(key))
    return out
