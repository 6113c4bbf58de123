"""compaction-eval: what context compaction loses, measured.

The data flows one way: traces and labels -> compaction -> per-fact verdicts ->
statistics -> results.json -> report and gate. The public API is `__all__` below; names
are imported on first use, so `import compaction_eval` stays fast.

>>> import compaction_eval as ce
>>> ce.is_stand_in("extractive/default")
True
>>> ce.canonical_number("1,024")
'1024'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it
_EXPORTS = {
    "load_trace": "compaction_eval.api",
    "load_labels": "compaction_eval.api",
    "load_prompt": "compaction_eval.api",
    "compact": "compaction_eval.api",
    "score_summary": "compaction_eval.api",
    "run_recall": "compaction_eval.api",
    "read_run": "compaction_eval.api",
    "compare_runs": "compaction_eval.api",
    "gate_runs": "compaction_eval.api",
    "CompactionSettings": "compaction_eval.contracts.settings",
    "is_stand_in": "compaction_eval.contracts.settings",
    "ContractError": "compaction_eval.contracts.problems",
    "Problem": "compaction_eval.contracts.problems",
    "Trace": "compaction_eval.contracts.traces",
    "Labels": "compaction_eval.contracts.labels",
    "Fact": "compaction_eval.contracts.labels",
    "Candidate": "compaction_eval.contracts.prompts",
    "RecallConfig": "compaction_eval.recall.run",
    "bootstrap_mean_ci": "compaction_eval.stats.bootstrap",
    "canonical_number": "compaction_eval.recall.matching.normalize",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'compaction_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
