"""Context policies for the long-horizon suite, all inspect `CompactionStrategy` objects.

- `baseline`: append-only; on overflow the oldest messages go, head included (truncation.py);
- `baseline-mutated`: the same with a per-request timestamp in the system prompt (mutated.py);
- `eviction`: tiered eviction of stale tool results with tombstones (eviction.py);
- `full`: lossless eviction, span compaction with a candidate prompt, re-anchoring of the
  original request and a notes tool (full.py, notes.py);
- inspect's built-ins by name and a user's own strategy by `module:Class`.

`registry.CONFIGS` is the one table of names; `resolve.make_policy` builds one for a world.
"""
