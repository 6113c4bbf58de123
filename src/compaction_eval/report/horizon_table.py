"""Plain-text tables of a horizon run (one row per configuration, then the ablation)."""

from __future__ import annotations

from typing import Any


def format_horizon(results: dict[str, Any]) -> str:
    lines = []
    who = results["agent"]
    if results.get("offline_stand_in"):
        who += " (scripted agent, not an LLM: completion measures what the context keeps, not reasoning)"
    lines.append(f"Long-horizon completion: {who}; worlds: {results['n_worlds']} ({results['size']}); compactor: {results.get('compactor')}")
    head = f"{'config':<18} {'completion (95% CI)':<22} {'input tok':>10} {'compact %':>9} {'calls':>6} {'redund':>6} {'overflow':>8} {'cache hit':>9} {'cost $':>8} {'p50 s':>6} {'p95 s':>6}"
    lines += [head, "-" * len(head)]
    for c in results["configs"]:
        ci = f"{c['completion_rate']:.2f} [{c['completion_ci'][0]:.2f}, {c['completion_ci'][1]:.2f}]"
        lines.append(
            f"{c['config']:<18} {ci:<22} {c['input_tokens']:>10,} {100 * c['compaction_share']:>8.1f}% {c['model_calls']:>6} "
            f"{c['redundant_calls']:>6} {c['overflow_failures']:>8} {100 * c['cache_hit_rate']:>8.1f}% {usd(c['cost_usd']):>8} "
            f"{c['wall_p50']:>6.2f} {c['wall_p95']:>6.2f}"
        )
    lines.append(cost_line(results["cost_model"]))
    ab = results.get("ablation")
    if ab:
        lines += ["", "Cache vs compaction ablation (same runs):",
                  f"{'arm':<4} {'setting':<32} {'input tok':>10} {'cache hit':>9} {'cost $':>8} {'completion':>10}"]
        for r in ab["rows"]:
            lines.append(f"({r['arm']}) {r['label']:<32} {r['input_tokens']:>10,} {100 * r['cache_hit_rate']:>8.1f}% {usd(r['cost_usd']):>8} {r['completion_rate']:>10.2f}")
        if ab["compaction_saves"] is not None:
            lines.append(f"compaction changes cost by {-100 * ab['compaction_saves']:+.0f}% vs (a); a mutated prefix costs "
                         f"{ab['mutation_cost_factor']:.2f}x (a) over whole runs, {ab['mutation_cost_factor_pre_compaction']:.2f}x "
                         "before the first overflow (after it, truncation already moves the prefix every request)")
    return "\n".join(lines)


def usd(value: Any, digits: int = 3) -> str:
    """A USD figure for a table; "unknown" when the model has no known price."""
    return "unknown" if value is None else f"{value:.{digits}f}"


def cost_line(cost_model: dict[str, Any]) -> str:
    """How costs were priced: the entry, the stand-in note, or that the price is unknown."""
    source = cost_model.get("source") or "cost"
    if cost_model.get("price_known") is False:
        return f"cost: unknown ({cost_model.get('price_note') or 'no price for this model'})"
    line = f"cost: {source} with {cost_model.get('price_model')} prices"
    return line + (f"; {cost_model['price_note']}" if cost_model.get("price_note") else "")
