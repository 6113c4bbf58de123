"""Long-horizon worlds: deterministic simulated workspaces with tools, a reference plan and
a checker. See `model.World`; the families are `build`, `audit` and `query`."""

from .model import PlanStep, World
from .registry import SIZES, get_world, world_ids

__all__ = ["World", "PlanStep", "SIZES", "get_world", "world_ids"]
