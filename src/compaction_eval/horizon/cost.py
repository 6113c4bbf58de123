"""Prompt-cache-aware cost of a run, simulated from the exact request sequence.

A request is its blocks (tool definitions, then messages) with token counts and a key per
distinct block. The simulation follows the provider's rules as documented for Anthropic:

- breakpoints (at most `max_breakpoints`): after the system prompt (tools + system), on the
  last message, and on the second-to-last and third-to-last messages while there are
  breakpoints left, which is how a client typically marks an agent conversation;
- a breakpoint writes the prefix up to it into the cache if that prefix is at least
  `min_cacheable_tokens` long; a later request reads the longest cached prefix it starts
  with (checked at each block boundary up to 20 blocks before each of its breakpoints);
- a cached prefix lives `ttl_seconds` after its last write or read;
- tokens read from the cache cost `cache_read_multiplier` x input, the tokens after it up to
  the last breakpoint are written at `cache_write_multiplier` x input, the rest is input.

Time between requests is simulated (`seconds_per_request`), not wall time, so the result
is deterministic. When a provider reports cache tokens (a real run), `reported_cost` prices
what it reported instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compaction_eval.horizon.prices import PriceTable

LOOKBACK_BLOCKS = 20


@dataclass
class CostBreakdown:
    """Token classes and their cost in USD."""

    input_tokens: int = 0  # every input token sent (uncached + cache read + cache write)
    uncached_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def cache_hit_rate(self) -> float:
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    def add(self, other: "CostBreakdown") -> "CostBreakdown":
        return CostBreakdown(*(getattr(self, f) + getattr(other, f) for f in
                               ("input_tokens", "uncached_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "cost_usd")))

    def to_dict(self) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "uncached_tokens": self.uncached_tokens,
                "cache_read_tokens": self.cache_read_tokens, "cache_write_tokens": self.cache_write_tokens,
                "output_tokens": self.output_tokens, "cache_hit_rate": round(self.cache_hit_rate, 4),
                "cost_usd": round(self.cost_usd, 6)}


def _price(p: PriceTable, uncached: int, read: int, write: int, output: int) -> float:
    return (uncached * p.input + read * p.input * p.cache_read_multiplier + write * p.input * p.cache_write_multiplier
            + output * p.output) / 1e6


def breakpoints(n_blocks: int, system_block: int | None, max_breakpoints: int) -> list[int]:
    """Block indices (inclusive) that carry a breakpoint, ascending."""
    marks: list[int] = []
    if system_block is not None and max_breakpoints > 0:
        marks.append(system_block)
    for back in (1, 2, 3):
        i = n_blocks - back
        if i >= 0 and len(marks) < max_breakpoints and i not in marks:
            marks.append(i)
    return sorted(set(marks))


def simulate_cache(requests: list[dict[str, Any]], price: PriceTable, *, seconds_per_request: float = 5.0,
                   system_block: int | None = 1) -> CostBreakdown:
    """Replay `requests` (ledger records: `keys`, `tokens`, `output`) against a prompt cache.

    Args:
        requests: in order, each with block `keys`, block `tokens` and `output` tokens.
        price: prices and cache rules.
        seconds_per_request: simulated time between requests (TTL accounting).
        system_block: index of the block ending the stable head (tools=0, system=1), or None.
    """
    cache: dict[int, float] = {}  # prefix fingerprint -> expiry time
    total = CostBreakdown()
    for n, req in enumerate(requests):
        now = n * seconds_per_request
        keys, tokens = req["keys"], req["tokens"]
        prefix_ids: list[int] = []
        cumulative: list[int] = []
        running = 0
        fingerprint = 0
        for k, t in zip(keys, tokens, strict=True):
            # A rolling fingerprint of the prefix: equal prefixes, equal fingerprints.
            fingerprint = hash((fingerprint, k))
            prefix_ids.append(fingerprint)
            running += t
            cumulative.append(running)
        sys_bp = system_block if system_block is not None and system_block < len(keys) else None
        marks = breakpoints(len(keys), sys_bp, price.max_breakpoints)
        read_end = -1
        checkable = sorted({i for m in marks for i in range(max(0, m - LOOKBACK_BLOCKS), m + 1)}, reverse=True)
        for i in checkable:
            fp = prefix_ids[i]
            if cache.get(fp, -1.0) >= now and cumulative[i] >= price.min_cacheable_tokens:
                read_end = i
                cache[fp] = now + price.ttl_seconds
                break
        read = cumulative[read_end] if read_end >= 0 else 0
        write = 0
        for m in marks:
            if cumulative[m] >= price.min_cacheable_tokens:
                cache[prefix_ids[m]] = now + price.ttl_seconds
        last_written = max((m for m in marks if cumulative[m] >= price.min_cacheable_tokens), default=-1)
        if last_written > read_end:
            write = cumulative[last_written] - read
        uncached = running - read - write
        out = int(req.get("output", 0))
        total = total.add(CostBreakdown(running, uncached, read, write, out, _price(price, uncached, read, write, out)))
    return total


def uncached_cost(input_tokens: int, output_tokens: int, price: PriceTable) -> CostBreakdown:
    """Cost of calls that are not part of the cached conversation (compaction calls)."""
    return CostBreakdown(input_tokens, input_tokens, 0, 0, output_tokens, _price(price, input_tokens, 0, 0, output_tokens))


def reported_cost(requests: list[dict[str, Any]], price: PriceTable) -> CostBreakdown:
    """Cost of what a provider reported (`input` uncached, `cache_read`, `cache_write`)."""
    total = CostBreakdown()
    for r in requests:
        uncached, read, write, out = r["input"], r["cache_read"], r["cache_write"], r["output"]
        total = total.add(CostBreakdown(uncached + read + write, uncached, read, write, out, _price(price, uncached, read, write, out)))
    return total
