"""A prefix-cache model of Anthropic prompt caching, to report cache usage like the API.

A request is read as a sequence of cacheable blocks in the order the API hashes them:
tools, then system blocks, then each message's content blocks. A block with
`cache_control` is a breakpoint; a top-level `cache_control` (automatic caching) puts one
on the last block. Semantics modelled (after the API documentation):

- a prefix is written to the cache at each breakpoint whose prefix has at least
  `min_tokens` tokens; the write is billed for the tokens past the longest prefix read;
- a read looks for the longest stored prefix ending at a breakpoint or up to `lookback`
  blocks before one; it is billed at 0.1x, a write at 1.25x (5 minute TTL);
- entries expire `ttl` seconds after their last use (a read refreshes them).

Token counts come from `compaction_eval.contracts.tokens.count_tokens` over each block's JSON, an
estimate of Anthropic's tokenizer that is consistent between requests, which is what the
arithmetic needs.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compaction_eval.contracts.tokens import count_tokens

WRITE_MULTIPLIER = 1.25
READ_MULTIPLIER = 0.1
DEFAULT_TTL = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True)
class Usage:
    """Input usage of one request, split the way the API reports it.

    Args:
        input_tokens: uncached input tokens (after the last cache breakpoint or uncached).
        cache_creation_input_tokens: tokens written to the cache.
        cache_read_input_tokens: tokens read from the cache.
    """

    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def billed(self) -> float:
        return billed_input(self)


def billed_input(usage: Usage) -> float:
    """Input billed in units of uncached input tokens (write 1.25x, read 0.1x)."""
    return (
        usage.input_tokens
        + WRITE_MULTIPLIER * usage.cache_creation_input_tokens
        + READ_MULTIPLIER * usage.cache_read_input_tokens
    )


@dataclass(frozen=True)
class Block:
    """One cacheable unit: its canonical text, tokens, and its breakpoint TTL (None: not one)."""

    text: str
    tokens: int
    breakpoint_ttl: str | None


def _canonical(block: Any) -> str:
    # cache_control does not change what is cached: leave it out of the identity.
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, ensure_ascii=False)


def _ttl_of(block: Any) -> str | None:
    if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
        return block["cache_control"].get("ttl") or "5m"
    return None


def request_blocks(request: dict[str, Any]) -> list[Block]:
    """The request's cacheable blocks in hashing order (tools, system, messages)."""
    raw: list[tuple[str, Any]] = []
    for tool in request.get("tools") or []:
        raw.append(("tool", tool))
    system = request.get("system")
    if isinstance(system, str) and system:
        raw.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        raw += [("system", b) for b in system]
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        for b in blocks:
            raw.append((message.get("role", "user"), b))
    out = [
        Block(f"{kind}:{_canonical(b)}", count_tokens(_canonical(b)) + (4 if kind in ("user", "assistant") else 0), _ttl_of(b))
        for kind, b in raw
    ]
    auto = request.get("cache_control")
    if isinstance(auto, dict) and out and out[-1].breakpoint_ttl is None:
        # Automatic caching: the breakpoint moves to the last cacheable block.
        last = out[-1]
        out[-1] = Block(last.text, last.tokens, auto.get("ttl") or "5m")
    return out


class PrefixCache:
    """Simulated provider prompt cache (thread-safe).

    Args:
        min_tokens: shortest prefix that can be cached (1024 for Sonnet/Opus-class models).
        lookback: blocks before a breakpoint checked for an earlier stored prefix (20).
        clock: seconds, monotonic (injectable for TTL tests).
    """

    def __init__(self, min_tokens: int = 1024, lookback: int = 20, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_tokens = min_tokens
        self.lookback = lookback
        self.clock = clock
        self._entries: dict[str, tuple[float, float]] = {}  # prefix hash -> (expires at, ttl)
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def usage(self, request: dict[str, Any], *, dry_run: bool = False) -> Usage:
        """The usage the API would report for `request`, updating the cache (unless dry_run)."""
        usage, commit = self.begin(request, dry_run=dry_run)
        commit()
        return usage

    def begin(self, request: dict[str, Any], *, dry_run: bool = False) -> tuple[Usage, Callable[[], None]]:
        """Usage for `request` and a function that stores its writes.

        A write becomes readable only once the answer that made it has been sent (call the
        function then): requests with the same prefix that run at the same time all write,
        as with the real API, so concurrency costs cache reads.
        """
        blocks = request_blocks(request)
        total = sum(b.tokens for b in blocks)
        breakpoints = [i for i, b in enumerate(blocks) if b.breakpoint_ttl]
        if not breakpoints:
            return Usage(input_tokens=total), lambda: None
        hashes: list[str] = []
        digest = hashlib.sha256()
        for b in blocks:
            digest.update(b.text.encode("utf-8"))
            digest.update(b"\x00")
            hashes.append(digest.copy().hexdigest())
        prefix_tokens = []
        running = 0
        for b in blocks:
            running += b.tokens
            prefix_tokens.append(running)

        now = self.clock()
        with self._lock:
            self._entries = {h: e for h, e in self._entries.items() if e[0] > now}
            # Longest stored prefix ending at a breakpoint or within lookback before one.
            hit = -1
            for bp in breakpoints:
                for i in range(bp, max(-1, bp - self.lookback - 1), -1):
                    if hashes[i] in self._entries:
                        hit = max(hit, i)
                        break
            read = prefix_tokens[hit] if hit >= 0 else 0
            cacheable = [bp for bp in breakpoints if prefix_tokens[bp] >= self.min_tokens]
            last_write = max(cacheable) if cacheable else -1
            write = max(0, prefix_tokens[last_write] - read) if last_write > hit else 0
            if not dry_run and hit >= 0:
                _, ttl = self._entries[hashes[hit]]
                self._entries[hashes[hit]] = (now + ttl, ttl)
        writes = [] if dry_run else [(hashes[bp], DEFAULT_TTL.get(blocks[bp].breakpoint_ttl or "5m", 300.0)) for bp in cacheable]

        def commit() -> None:
            at = self.clock()
            with self._lock:
                for digest, ttl in writes:
                    self._entries[digest] = (at + ttl, ttl)

        usage = Usage(input_tokens=total - read - write, cache_creation_input_tokens=write, cache_read_input_tokens=read)
        return usage, commit
