"""Cache-vs-compaction ablation: (a) no compaction, stable prefix (`baseline`); (b) compaction,
stable prefix (`full`); (c) no compaction, mutated prefix (`baseline-mutated`).

It answers two questions from the same runs: did prompt caching already make compaction
unnecessary (is (a) as cheap as (b)?), and what does a mutated prefix cost ((c) / (a))?
Once the naive loop overflows, its own truncation shifts the prefix on every request, so the
ablation also prices the phase before the first compaction, where only the stamp differs.
"""

from __future__ import annotations

from typing import Any

ARMS = (
    ("a", "baseline", "no compaction, stable prefix"),
    ("b", "full", "compaction, stable prefix"),
    ("c", "baseline-mutated", "no compaction, mutated prefix"),
)


def cache_ablation(configs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ablation rows from per-configuration summaries (None if an arm was not run)."""
    by_name = {c["config"]: c for c in configs}
    if not all(name in by_name for _, name, _ in ARMS):
        return None
    rows = []
    for arm, name, label in ARMS:
        c = by_name[name]
        rows.append({
            "arm": arm, "config": name, "label": label,
            "input_tokens": c["input_tokens"] + c["compaction_tokens"],
            "cache_read_tokens": c["cache_read_tokens"],
            "cache_hit_rate": c["cache_hit_rate"],
            "cost_usd": c["cost_usd"],
            "completion_rate": c["completion_rate"],
            "pre_compaction_cost_usd": c["pre_compaction"]["cost_usd"],
            "pre_compaction_cache_hit_rate": c["pre_compaction"]["cache_hit_rate"],
        })
    a, b, c = rows
    if any(r["cost_usd"] is None or r["pre_compaction_cost_usd"] is None for r in rows):  # no known price
        return {"rows": rows, "compaction_saves": None, "mutation_cost_factor": None, "mutation_cost_factor_pre_compaction": None}
    return {
        "rows": rows,
        "compaction_saves": (a["cost_usd"] - b["cost_usd"]) / a["cost_usd"] if a["cost_usd"] else 0.0,
        "mutation_cost_factor": c["cost_usd"] / a["cost_usd"] if a["cost_usd"] else 0.0,
        # Before the first overflow both baselines send the same requests but for the stamp:
        # the pure price of a mutated prefix, apart from what truncation does to the cache.
        "mutation_cost_factor_pre_compaction": (c["pre_compaction_cost_usd"] / a["pre_compaction_cost_usd"]
                                                if a["pre_compaction_cost_usd"] else 0.0),
    }
