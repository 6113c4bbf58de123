"""Price tables (USD per million tokens) and the prompt-cache rules of the cost model.

One table keyed by `provider/model`, the names inspect uses (`anthropic/claude-sonnet-4-5`,
`openai/gpt-4.1`, `google/gemini-2.5-pro`). A model is priced by the entry that its name
starts with, followed by nothing or by a date/version suffix (`-20250929`, `-2024-08-06`,
`-001`, `@20250514`, `-latest`), the longest such entry winning: `claude-opus-4-20250514` is
`claude-opus-4`, but a `claude-opus-4-6` the table does not know is *unknown*, never a guess
from a neighbour. An unknown model's cost is `None` (null in JSON, "unknown" in tables and
the report); `--prices FILE` (same fields; keys `provider/model` or a bare model name that
matches any provider) replaces the table, `--price-model NAME` picks an entry.

Offline stand-ins (`extractive/…`, `scripted/…`, `reader/…`) have no price of their own:
they are priced as `--price-model`, by default REFERENCE_PRICE_MODEL, and every output that
shows their cost says so (`Pricing.note`).

Sources (list prices, standard tier, prompts up to 200k tokens; recorded in January 2026 from
the providers' public pricing pages, not fetched at run time; prices change, so check them
or pass `--prices`):
- Anthropic (claude.com/pricing, docs "Prompt caching"): a cache write (5-minute TTL) costs
  1.25x input, a read 0.1x; at most 4 breakpoints; minimum cacheable prefix 1,024 tokens
  (Sonnet 4/4.5, Opus 4/4.1, Sonnet 3.7), 2,048 (Haiku 3/3.5), 4,096 (Opus 4.5, Haiku 4.5).
- OpenAI (platform.openai.com/docs/pricing, guide "Prompt caching"): caching is automatic
  from 1,024 tokens with no write surcharge; cached input is 0.5x (gpt-4o, o1, o3-mini),
  0.25x (gpt-4.1, o3, o4-mini) or 0.1x (gpt-5) of input.
- Google (ai.google.dev/gemini-api/docs/pricing, "Context caching"): implicit caching of
  Gemini 2.x models from 1,024 tokens (2,048 for 2.5 Pro), cached input 0.25x, no write
  surcharge; cache storage fees of explicit caches are not modelled.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import is_stand_in
from compaction_eval.contracts.traces import parse_json_text


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


def _anthropic(inp: float, out: float, min_cacheable: int = 1024) -> PriceTable:
    return PriceTable(input=inp, output=out, min_cacheable_tokens=min_cacheable)


def _auto_cache(inp: float, out: float, read: float, min_cacheable: int = 1024) -> PriceTable:
    """A provider that caches prefixes by itself: no write surcharge."""
    return PriceTable(input=inp, output=out, cache_write_multiplier=1.0, cache_read_multiplier=read,
                      min_cacheable_tokens=min_cacheable)


PRICES: dict[str, PriceTable] = {
    # Anthropic
    "anthropic/claude-opus-4-5": _anthropic(5.0, 25.0, 4096),
    "anthropic/claude-opus-4-1": _anthropic(15.0, 75.0),
    "anthropic/claude-opus-4": _anthropic(15.0, 75.0),
    "anthropic/claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "anthropic/claude-sonnet-4": _anthropic(3.0, 15.0),
    "anthropic/claude-haiku-4-5": _anthropic(1.0, 5.0, 4096),
    "anthropic/claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "anthropic/claude-3-5-haiku": _anthropic(0.80, 4.0, 2048),
    "anthropic/claude-3-haiku": _anthropic(0.25, 1.25, 2048),
    "anthropic/claude-3-opus": _anthropic(15.0, 75.0),
    # OpenAI
    "openai/gpt-4o": _auto_cache(2.50, 10.0, 0.5),
    "openai/gpt-4o-mini": _auto_cache(0.15, 0.60, 0.5),
    "openai/gpt-4.1": _auto_cache(2.0, 8.0, 0.25),
    "openai/gpt-4.1-mini": _auto_cache(0.40, 1.60, 0.25),
    "openai/gpt-4.1-nano": _auto_cache(0.10, 0.40, 0.25),
    "openai/gpt-5": _auto_cache(1.25, 10.0, 0.1),
    "openai/gpt-5-mini": _auto_cache(0.25, 2.0, 0.1),
    "openai/gpt-5-nano": _auto_cache(0.05, 0.40, 0.1),
    "openai/o1": _auto_cache(15.0, 60.0, 0.5),
    "openai/o1-mini": _auto_cache(1.10, 4.40, 0.5),
    "openai/o3": _auto_cache(2.0, 8.0, 0.25),
    "openai/o3-mini": _auto_cache(1.10, 4.40, 0.5),
    "openai/o4-mini": _auto_cache(1.10, 4.40, 0.25),
    # Google
    "google/gemini-2.5-pro": _auto_cache(1.25, 10.0, 0.25, 2048),
    "google/gemini-2.5-flash": _auto_cache(0.30, 2.50, 0.25),
    "google/gemini-2.5-flash-lite": _auto_cache(0.10, 0.40, 0.25),
    "google/gemini-2.0-flash": _auto_cache(0.10, 0.40, 0.25),
}

# What offline stand-ins are priced as unless --price-model says otherwise.
REFERENCE_PRICE_MODEL = "anthropic/claude-sonnet-4-5"
DEFAULT_PRICE_MODEL = REFERENCE_PRICE_MODEL  # the old name
# Cache rules without prices: token classes of a run whose model has no known price.
CACHE_RULES = PriceTable(input=0.0, output=0.0)

# a date or version after the family name: -20250929, -2024-08-06, -001, @20250514, -latest
_SUFFIX = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-\d{3}|@\d{8}|-latest)?")


@dataclass(frozen=True)
class Pricing:
    """How one model is priced: the table entry (None: unknown) and a note to show."""

    model: str
    entry: str | None
    price: PriceTable | None
    note: str | None = None

    @property
    def known(self) -> bool:
        return self.price is not None

    @property
    def rules(self) -> PriceTable:
        """Cache rules to simulate with (the entry's, or the default ones without prices)."""
        return self.price or CACHE_RULES

    def to_json(self) -> dict[str, Any]:
        p = self.price
        return {
            "priced_model": self.model,
            "price_model": self.entry,
            "price_known": self.known,
            "price_note": self.note,
            "input_per_mtok": p.input if p else None,
            "output_per_mtok": p.output if p else None,
            "cache_write_multiplier": self.rules.cache_write_multiplier,
            "cache_read_multiplier": self.rules.cache_read_multiplier,
            "ttl_seconds": self.rules.ttl_seconds,
            "min_cacheable_tokens": self.rules.min_cacheable_tokens,
            "max_breakpoints": self.rules.max_breakpoints,
        }


def match_entry(model: str, table: dict[str, PriceTable]) -> str | None:
    """The entry of `table` that prices `model`, or None (see the module docstring)."""
    if model in table:
        return model
    provider, _, name = model.rpartition("/")
    best: str | None = None
    for key in table:
        key_provider, _, key_name = key.rpartition("/")
        if key_provider and key_provider != provider:
            continue
        if name.startswith(key_name) and _SUFFIX.fullmatch(name[len(key_name):]):
            if best is None or len(key_name) > len(best.rpartition("/")[2]):
                best = key
    return best


def resolve_price(model: str, table: dict[str, PriceTable] | None = None, price_model: str | None = None) -> Pricing:
    """How `model` is priced. `price_model` (an entry, or a model the table prices) wins;
    offline stand-ins default to REFERENCE_PRICE_MODEL; a model the table does not price is
    unknown. Raises ValueError for a `price_model` the table does not price."""
    table = PRICES if table is None else table
    stand_in = is_stand_in(model)
    if price_model:
        entry = match_entry(price_model, table)
        if entry is None:
            raise ValueError(f"--price-model {price_model!r} is not in the price table ({', '.join(table)})")
        note = f"offline stand-in {model} priced as {entry} (--price-model)" if stand_in else f"priced as {entry} (--price-model)"
        return Pricing(model, entry, table[entry], note)
    if stand_in:
        entry = match_entry(REFERENCE_PRICE_MODEL, table)
        if entry is None:
            return Pricing(model, None, None, f"offline stand-in {model}: no price for the reference model {REFERENCE_PRICE_MODEL} "
                                             "in the price table, cost unknown (--price-model NAME)")
        return Pricing(model, entry, table[entry], f"offline stand-in {model} priced as {entry}, the reference model (--price-model NAME to change)")
    entry = match_entry(model, table)
    if entry is None:
        return Pricing(model, None, None, f"no price for {model}: cost unknown (--prices FILE or --price-model NAME)")
    return Pricing(model, entry, table[entry], None)


def price_for(model: str, table: dict[str, PriceTable] | None = None) -> tuple[str | None, PriceTable | None]:
    """`(entry, prices)` for `model`; `(None, None)` when the table does not price it."""
    pricing = resolve_price(model, table)
    return pricing.entry, pricing.price


_FIELDS = {f.name for f in fields(PriceTable)}


def load_prices(path: Path | str) -> dict[str, PriceTable]:
    """A JSON file `{"provider/model": {"input": 3.0, "output": 15.0, ...}}` (other fields of
    PriceTable optional); every problem is located in the file."""
    path = Path(path)
    try:
        data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "price file not found")]) from None
    except (UnicodeDecodeError, IsADirectoryError):
        raise ContractError([Problem(str(path), "", "not a JSON text file")]) from None
    except json.JSONDecodeError as exc:
        raise ContractError([Problem(str(path), f"line {exc.lineno}", f"malformed JSON: {exc.msg}")]) from None
    if not isinstance(data, dict) or not data:
        raise ContractError([Problem(str(path), "", "expected an object {model: {input, output, ...}}")])
    out: dict[str, PriceTable] = {}
    for name, v in data.items():
        if not isinstance(v, dict) or "input" not in v or "output" not in v:
            raise ContractError([Problem(str(path), name, "expected an object with `input` and `output` (USD per million tokens)")])
        unknown = sorted(set(v) - _FIELDS)
        if unknown:
            raise ContractError([Problem(str(path), name, f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})")])
        for key, x in v.items():
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                raise ContractError([Problem(str(path), f"{name}.{key}", f"expected a finite number >= 0, got {x!r}")])
        out[name] = replace(PriceTable(input=float(v["input"]), output=float(v["output"])),
                            **{k: x for k, x in v.items() if k not in ("input", "output")})
    return out
