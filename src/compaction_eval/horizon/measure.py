"""Per-sample and per-configuration measurements from inspect logs of the long-horizon task."""

from __future__ import annotations

from typing import Any

import numpy as np

from compaction_eval.horizon.cost import (
    CostBreakdown,
    reported_cost,
    simulate_cache,
    uncached_cost,
)
from compaction_eval.horizon.ledger import STORE_KEY
from compaction_eval.horizon.prices import CACHE_RULES, PriceTable
from compaction_eval.stats.bootstrap import bootstrap_mean_ci

SCORER = "horizon_checker"
COST_PARTS = ("uncached", "cache_write", "cache_read", "output", "compaction")


def sample_record(sample: Any, price: PriceTable | None, *, seconds_per_request: float) -> dict[str, Any]:
    """One sample's measurements (see horizon.json `configs[].samples[]`).

    `price` None: the model has no known price; token classes are simulated with the default
    cache rules and every USD figure is None (null in JSON, "unknown" when shown).
    """
    known = price is not None
    price = price or CACHE_RULES
    ledger = sample.store.get(STORE_KEY) or {"requests": [], "compactions": [], "window": 0}
    score = (sample.scores or {}).get(SCORER)
    value = score.value if score is not None and isinstance(score.value, dict) else {}
    verdict = (score.metadata or {}).get("verdict", {}) if score is not None else {}
    reqs = ledger["requests"]
    agent_in = sum(r["input"] + r["cache_read"] + r["cache_write"] for r in reqs)
    agent_out = sum(r["output"] for r in reqs)
    model_events = [e for e in (sample.events or []) if getattr(e, "event", None) == "model"]
    all_in = sum(_sent(e.output.usage) for e in model_events if e.output and e.output.usage)
    all_out = sum(e.output.usage.output_tokens for e in model_events if e.output and e.output.usage)
    compaction_calls = max(0, len(model_events) - len(reqs))
    comp_in, comp_out = max(0, all_in - agent_in), max(0, all_out - agent_out)
    reported = any(r["cache_read"] or r["cache_write"] for r in reqs)
    conversation = reported_cost(reqs, price) if reported else simulate_cache(reqs, price, seconds_per_request=seconds_per_request)
    compaction = uncached_cost(comp_in, comp_out, price)
    # The phase before the first compaction: every configuration's prefix is still intact
    # there, so the cache ablation can price a mutated prefix apart from truncation.
    first = min((c.get("step", len(reqs)) for c in ledger.get("compactions", [])), default=len(reqs))
    stable = simulate_cache(reqs[:first], price, seconds_per_request=seconds_per_request)
    peak = max((sum(r["tokens"]) for r in reqs), default=0)
    window = ledger.get("window") or 0
    billed = agent_in + agent_out + comp_in + comp_out
    return {
        "world": sample.metadata.get("world"),
        "family": sample.metadata.get("family"),
        "size": sample.metadata.get("size"),
        "completed": bool(value.get("completed", 0.0)),
        "format_ok": bool(value.get("format_ok", 0.0)),
        "fields": verdict.get("fields", {}),
        "violations": verdict.get("violations", []),
        "answer": ledger.get("answer"),
        "stop_reason": ledger.get("stop_reason"),
        "steps": len(reqs),
        "model_calls": len(model_events),
        "input_tokens": agent_in,
        "output_tokens": agent_out,
        "uncached_tokens": conversation.uncached_tokens,
        "cache_read_tokens": conversation.cache_read_tokens,
        "cache_write_tokens": conversation.cache_write_tokens,
        # resident context of each agent request (tools + messages), in order: the growth curve
        "step_tokens": [int(sum(r["tokens"])) for r in reqs],
        "cost_breakdown": cost_breakdown(conversation, compaction, price) if known else None,
        "compaction_events": len(ledger.get("compactions", [])),
        "compaction_calls": compaction_calls,
        "compaction_input_tokens": comp_in,
        "compaction_output_tokens": comp_out,
        "compaction_share": (comp_in + comp_out) / billed if billed else 0.0,
        "peak_tokens": peak,
        "peak_occupancy": peak / window if window else 0.0,
        "window": window,
        "overflow": bool(ledger.get("overflow")),
        "redundant_calls": ledger.get("redundant_calls", 0),
        "wall_seconds": ledger.get("wall_seconds", 0.0),
        "cost_usd": conversation.cost_usd + compaction.cost_usd if known else None,
        "cost_source": "reported" if reported else "simulated",
        "cache_hit_rate": conversation.cache_hit_rate,
        "pre_compaction": {"requests": first, **stable.to_dict(), **({} if known else {"cost_usd": None})},
    }


def cost_breakdown(conversation: CostBreakdown, compaction: CostBreakdown, price: PriceTable) -> dict[str, float]:
    """USD by token class: the conversation's uncached input, cache writes, cache reads and
    output, and the compaction calls (all their input and output). Sums to the sample's cost."""
    per_in = price.input / 1e6
    return {
        "uncached": conversation.uncached_tokens * per_in,
        "cache_write": conversation.cache_write_tokens * per_in * price.cache_write_multiplier,
        "cache_read": conversation.cache_read_tokens * per_in * price.cache_read_multiplier,
        "output": conversation.output_tokens * price.output / 1e6,
        "compaction": compaction.cost_usd,
    }


def _sent(usage: Any) -> int:
    """Input tokens a call sent: uncached plus cache reads and writes."""
    return usage.input_tokens + (usage.input_tokens_cache_read or 0) + (usage.input_tokens_cache_write or 0)


def config_summary(config: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate one configuration (completion with a 95% bootstrap interval over worlds)."""
    completed = [1.0 if s["completed"] else 0.0 for s in samples]
    lo, hi = bootstrap_mean_ci(completed)
    wall = [s["wall_seconds"] for s in samples]
    tot = lambda key: int(sum(s[key] for s in samples))  # noqa: E731
    billed = tot("input_tokens") + tot("output_tokens") + tot("compaction_input_tokens") + tot("compaction_output_tokens")
    # sample input_tokens is everything sent (uncached + cache read + cache write), so the rate
    # stays in [0, 1] when a provider reports uncached input apart from cache reads and writes
    cache = CostBreakdown(input_tokens=tot("input_tokens"), cache_read_tokens=tot("cache_read_tokens"))
    return {
        "config": config,
        "n": len(samples),
        "completion_rate": float(np.mean(completed)) if completed else 0.0,
        "completion_ci": [lo, hi],
        "steps": tot("steps"),
        "model_calls": tot("model_calls"),
        "input_tokens": tot("input_tokens"),
        "output_tokens": tot("output_tokens"),
        "uncached_tokens": tot("uncached_tokens"),
        "cache_read_tokens": tot("cache_read_tokens"),
        "cache_write_tokens": tot("cache_write_tokens"),
        "cache_hit_rate": cache.cache_hit_rate,
        "compaction_calls": tot("compaction_calls"),
        "compaction_tokens": tot("compaction_input_tokens") + tot("compaction_output_tokens"),
        "compaction_share": (tot("compaction_input_tokens") + tot("compaction_output_tokens")) / billed if billed else 0.0,
        "peak_tokens": max((s["peak_tokens"] for s in samples), default=0),
        "peak_occupancy": max((s["peak_occupancy"] for s in samples), default=0.0),
        "overflow_failures": sum(1 for s in samples if s["overflow"]),
        "redundant_calls": tot("redundant_calls"),
        "wall_p50": float(np.percentile(wall, 50)) if wall else 0.0,
        "wall_p95": float(np.percentile(wall, 95)) if wall else 0.0,
        "cost_usd": _usd_sum(s["cost_usd"] for s in samples),
        "pre_compaction": _pre_compaction(samples),
        "cost_breakdown": (None if any(s.get("cost_breakdown") is None for s in samples) else
                           {k: float(sum(s["cost_breakdown"][k] for s in samples)) for k in COST_PARTS}),
        "samples": samples,
    }


def _pre_compaction(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("requests", "input_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")
    total: dict[str, Any] = {k: sum(s["pre_compaction"][k] for s in samples) for k in keys if k != "cost_usd"}
    total["cost_usd"] = _usd_sum(s["pre_compaction"]["cost_usd"] for s in samples)
    total["cache_hit_rate"] = total["cache_read_tokens"] / total["input_tokens"] if total["input_tokens"] else 0.0
    return total


def _usd_sum(values: Any) -> float | None:
    """A sum of USD figures; None (unknown) when any of them is unknown."""
    values = list(values)
    return None if any(v is None for v in values) else float(sum(values))
