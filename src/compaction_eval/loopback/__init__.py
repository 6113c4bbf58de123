"""A loopback server that speaks the Anthropic Messages API, for tests and development.

`LoopbackServer` answers `POST /v1/messages` (JSON or server-sent events), `count_tokens`
and the batch endpoints deterministically (compaction requests get the extractive
summariser's answer), reports prompt-cache usage from a prefix-cache model, and injects
faults on demand. Start it with `python -m compaction_eval.loopback --port N`.
"""

from compaction_eval.loopback.cache_model import PrefixCache, Usage, billed_input
from compaction_eval.loopback.faults import FAULT_KINDS, Fault, FaultPlan
from compaction_eval.loopback.server import LoopbackServer

__all__ = ["FAULT_KINDS", "Fault", "FaultPlan", "LoopbackServer", "PrefixCache", "Usage", "billed_input"]
