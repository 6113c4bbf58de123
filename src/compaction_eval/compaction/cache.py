"""Which model calls go through inspect's generate cache, and how a paid answer survives a kill.

Real providers cost money and time: a rerun with nothing changed, or a rerun after a
killed run, takes every call that already completed from the cache. The offline stand-ins
are deterministic and cheap, so caching them would only add disk writes.

Every cached call goes through `generate_cached`: besides inspect's cache it journals each answer
the moment the provider returns it (`compaction.journal`), because inspect writes its cache
entry only later, after awaits during which a kill loses the answer. `off_the_loop` runs
CPU-bound work (scoring) on a worker thread while paid answers may be arriving, so the
coroutines receiving them are not kept waiting behind it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
from inspect_ai.model import CachePolicy, ChatMessage, GenerateConfig, Model, ModelOutput

from compaction_eval.compaction import recorded
from compaction_eval.compaction.cachefiles import check_cache_root, inspect_cache_root, install_safe_cache
from compaction_eval.compaction.journal import journal_root, open_journal
from compaction_eval.contracts.settings import is_recorded, is_stand_in
from compaction_eval.contracts.tokens import count_tokens

T = TypeVar("T")

# The cache policy of the `generate_cached` call in progress (None: not a cached call). A context
# variable reaches the provider's generate through inspect's retries and connection slots.
_POLICY: ContextVar[CachePolicy | None] = ContextVar("compaction_eval_answer_journal", default=None)
_INSTALLED = "_compaction_eval_answer_journal"
_CPU_LOCK = threading.Lock()


def use_generate_cache(model: Model | str) -> bool:
    """Only paid answers are cached: not a stand-in's, not a recording's (already on disk,
    and a placeholder for a missing answer must never be cached)."""
    return not is_stand_in(model) and not is_recorded(model)


async def generate_cached(
    model: Model,
    input: list[ChatMessage],
    *,
    config: GenerateConfig,
    tools: list[Any] | None = None,
    cache: bool | None = None,
) -> ModelOutput:
    """`model.generate(input, tools, config)`, through inspect's generate cache when `cache`
    (default: the model is not an offline stand-in), and then, for a paid model, through the
    answer journal too (a stand-in's answers cost nothing to ask again)."""
    if cache is None:
        cache = use_generate_cache(model)
    if not cache or is_recorded(model):  # never cache a recording's placeholder for a missing answer
        return await model.generate(input, tools=tools or [], config=config)
    # inspect's cache is pickle: read it only from a place no repository supplies, and
    # build data only from it (compaction.cachefiles)
    install_safe_cache()
    check_cache_root(inspect_cache_root())
    policy = CachePolicy()  # what inspect uses for cache=True: the keys agree
    if not use_generate_cache(model):
        return await model.generate(input, tools=tools or [], config=config, cache=policy)
    install_journal(model)
    token = _POLICY.set(policy)
    # `--record`: every answer must reach the provider's generate (where it is recorded), so
    # inspect's cache is not read; the journal still spares a rerun the paid calls.
    inspect_cache: CachePolicy | bool = False if recorded.RECORDER is not None else policy
    try:
        return await model.generate(input, tools=tools or [], config=config, cache=inspect_cache)
    finally:
        _POLICY.reset(token)


def journaled_call() -> bool:
    """True inside a `generate_cached` call (its journal wrapper records the answer itself)."""
    return _POLICY.get() is not None


def install_journal(model: Model) -> None:
    """Wrap the provider's `generate` of `model` (once) so that each answer to a cached call
    is journaled before anything else runs, and a journaled answer is returned instead of
    asking the provider again. Calls made without `generate_cached`'s cache pass straight
    through. The key is inspect's own `CacheEntry` key for the same call (checked by
    tests/compaction/test_journal.py)."""
    from compaction_eval.compaction.session import wrap_provider

    api = model.api
    name = str(model)

    def wrap(provider_generate: Callable[..., Any]) -> Callable[..., Any]:
        async def journaled_generate(input: list[ChatMessage], tools: list[Any], tool_choice: Any, config: GenerateConfig) -> Any:
            policy = _POLICY.get()
            if policy is None:
                return await provider_generate(input=input, tools=tools, tool_choice=tool_choice, config=config)
            from inspect_ai.model._cache import CacheEntry, _parse_expiry

            key = CacheEntry(base_url=api.base_url, config=config, input=input, model=name, policy=policy,
                             tool_choice=tool_choice, tools=tools).key
            journal = open_journal(journal_root())
            found = journal.get(name, key)
            if found is not None:
                recorded.note_answer(name, input, tools, tool_choice, found)
                return found
            result = await provider_generate(input=input, tools=tools, tool_choice=tool_choice, config=config)
            # No await between here and the write: nothing else runs before the answer is on disk.
            output = result[0] if isinstance(result, tuple) else result
            recorded.note_answer(name, input, tools, tool_choice, output)
            # inspect never caches content-filter stops (a retry must ask again): neither do we
            if isinstance(output, ModelOutput) and not any(c.stop_reason == "content_filter" for c in output.choices):
                expires = time.time() + _parse_expiry(policy.expiry) if policy.expiry is not None else None
                journal.put(name, key, output, expires)
                # Then step back once: answers that arrived together with this one are journaled
                # before inspect's bookkeeping for any of them (transcript, log buffer) runs.
                await anyio.lowlevel.checkpoint()
            return result

        return journaled_generate

    wrap_provider(model, _INSTALLED, wrap)


def warm_up(model: str) -> None:
    """Load, before any request is sent, what the first answers would otherwise wait for on
    the event loop: inspect's model database (about 1 s of YAML here, read lazily by the
    Anthropic provider when the first answer comes back) and the tokenizer's vocabulary."""
    from inspect_ai.model import get_model_info

    check_cache_root(inspect_cache_root())  # before the first request: one located error, exit 2
    get_model_info(model)
    count_tokens("warm up")


async def off_the_loop(fn: Callable[..., T], *args: Any, paid: bool) -> T:
    """`fn(*args)`, on a worker thread when `paid` (a real model's answers may be arriving:
    the event loop stays free to receive and journal them), inline otherwise (the offline
    stand-ins pay nothing for a thread). One worker at a time: the scoring code keeps
    module-level caches that are not written from two threads at once."""
    if not paid:
        return fn(*args)

    def locked() -> T:
        with _CPU_LOCK:
            return fn(*args)

    return await anyio.to_thread.run_sync(locked)
