"""Long-horizon worlds: deterministic simulated workspaces with tools, a reference plan and
a checker. See `model.World`; the families are `build`, `audit` and `query`."""

from compaction_eval.horizon.worlds.model import PlanStep, World
from compaction_eval.horizon.worlds.registry import SIZES, get_world, world_ids

__all__ = ["World", "PlanStep", "SIZES", "get_world", "world_ids"]
