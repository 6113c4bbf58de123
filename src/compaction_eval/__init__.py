"""compaction-eval: what context compaction loses, measured.

The data flows one way: traces and labels -> compaction -> per-fact verdicts ->
statistics -> results.json -> report and gate.
"""

__version__ = "0.1.0"
