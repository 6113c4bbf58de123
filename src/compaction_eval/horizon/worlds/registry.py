"""All worlds by id and size preset. Generation is deterministic and cached per process."""

from __future__ import annotations

from functools import lru_cache

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.horizon.worlds import audit, build, query
from compaction_eval.horizon.worlds.model import World

# Size presets: lines per generated file/table and the context window the suite enforces.
# `small` keeps the offline `run` fast; `large` has 2,000-line files (~25k tokens a read).
SIZES: dict[str, dict[str, int]] = {
    "small": {"lines": 90, "window": 6_000},
    "medium": {"lines": 400, "window": 24_000},
    "large": {"lines": 2_000, "window": 100_000},
}
FAMILIES = {"build": build.make, "audit": audit.make, "query": query.make}
PER_FAMILY = 4


def world_ids() -> list[str]:
    """Every world id, family by family (`build-01` ... `query-04`)."""
    return [f"{family}-{i + 1:02d}" for family in FAMILIES for i in range(PER_FAMILY)]


@lru_cache(maxsize=64)
def get_world(world_id: str, size: str = "small") -> World:
    """The world `world_id` generated at `size`."""
    if size not in SIZES:
        raise ContractError([Problem("--size", "", f"unknown world size {size!r}: use one of {', '.join(SIZES)}")])
    family, _, number = world_id.partition("-")
    if family not in FAMILIES or not number.isdigit() or not 1 <= int(number) <= PER_FAMILY:
        raise ContractError([Problem("--worlds", "", f"unknown world {world_id!r}: known are {', '.join(world_ids())}")])
    preset = SIZES[size]
    return FAMILIES[family](int(number) - 1, size, preset["lines"], preset["window"])
