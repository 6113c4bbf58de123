"""Price tables (USD per million tokens) and the prompt-cache rules of the cost model.

Anthropic's published rules: a cache write costs 1.25x the input price (5-minute TTL), a
read 0.1x; a prefix is cacheable only from a minimum length (1,024 tokens for Sonnet/Opus,
2,048 for Haiku) and a request may carry at most 4 cache breakpoints. Prices change: pass
your own table (`--prices FILE` with the same fields) rather than trusting these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class PriceTable:
    """Prices and cache rules for one model.

    Args:
        input: USD per million uncached input tokens.
        output: USD per million output tokens.
        cache_write_multiplier: price of a cache write relative to `input` (1.25).
        cache_read_multiplier: price of a cache read relative to `input` (0.1).
        ttl_seconds: how long a cached prefix lives after its last use (300).
        min_cacheable_tokens: shorter prefixes are never cached (1024).
        max_breakpoints: cache breakpoints per request (4).
    """

    input: float
    output: float
    cache_write_multiplier: float = 1.25
    cache_read_multiplier: float = 0.1
    ttl_seconds: float = 300.0
    min_cacheable_tokens: int = 1024
    max_breakpoints: int = 4


PRICES: dict[str, PriceTable] = {
    "claude-sonnet-4": PriceTable(input=3.0, output=15.0),
    "claude-opus-4": PriceTable(input=15.0, output=75.0),
    "claude-haiku-4": PriceTable(input=1.0, output=5.0, min_cacheable_tokens=2048),
}
DEFAULT_PRICE_MODEL = "claude-sonnet-4"


def price_for(model: str, table: dict[str, PriceTable] | None = None) -> tuple[str, PriceTable]:
    """The table entry whose name is contained in `model` (default: Sonnet prices)."""
    table = table or PRICES
    for name, price in table.items():
        if name in model:
            return name, price
    return DEFAULT_PRICE_MODEL, table.get(DEFAULT_PRICE_MODEL, PRICES[DEFAULT_PRICE_MODEL])


def load_prices(path: Path | str) -> dict[str, PriceTable]:
    """A JSON file `{"model-name": {"input": 3.0, "output": 15.0, ...}}`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: replace(PriceTable(input=v["input"], output=v["output"]), **{k: x for k, x in v.items() if k not in ("input", "output")})
            for name, v in data.items()}
