"""Which model calls go through inspect's generate cache.

Real providers cost money and time: a rerun with nothing changed, or a rerun after a
killed run, takes every call that already completed from the cache. The offline stand-ins
are deterministic and cheap, so caching them would only add disk writes.
"""

from __future__ import annotations

from inspect_ai.model import Model

OFFLINE_PROVIDERS = ("extractive/", "scripted/", "reader/", "mockllm/")


def use_generate_cache(model: Model | str) -> bool:
    return not str(model).startswith(OFFLINE_PROVIDERS)
