"""Billed input of an append-only run, and the prompt-cache cost simulation."""

from __future__ import annotations

import asyncio

import pytest
from inspect_ai.model import get_model

from compaction_eval.horizon.agent import run_loop
from compaction_eval.horizon.cost import breakpoints, simulate_cache
from compaction_eval.horizon.policies.notes import NotesBook
from compaction_eval.horizon.policies.truncation import BaselineTruncation
from compaction_eval.horizon.prices import PriceTable
from compaction_eval.horizon.tools import SUBMIT_TOOL, world_tools
from compaction_eval.horizon.worlds.model import PlanStep, World
from compaction_eval.standins import scripted

PRICE = PriceTable(input=3.0, output=15.0)
CHUNK = "\n".join(f"2026-01-0{i % 9 + 1} INFO worker shard ready in {i * 7} ms" for i in range(40))


def uniform_world(steps: int = 8) -> World:
    """Every step reads a same-sized file: the history grows by the same Δ each step."""
    files = {f"log/part-{i:02d}.txt": CHUNK for i in range(1, steps + 1)}
    return World(
        id="uniform-01", family="test", size="small", context_window=1_000_000, system="You read logs.",
        request="Read every log part. Answer format (one line, exactly): DONE <done>", files=files,
        plan=[PlanStep("read_file", {"path": p}) for p in files], expected={"done": "yes"},
        answer_format="DONE <done>", constraint="Read every log part.",
        extract=lambda text, visible: {"done": "yes"}, planted={"done": "early"},
    )


def test_append_only_billed_input_is_k_n0_plus_quadratic_growth(monkeypatch):
    world = uniform_world()
    monkeypatch.setattr(scripted, "get_world", lambda wid, size: world)
    policy = BaselineTruncation(window=world.context_window)
    tools = world_tools(world) + [SUBMIT_TOOL]
    ledger = asyncio.run(run_loop(world, policy, get_model("scripted/default"), tools, NotesBook(), [],
                                  output_reserve=512, max_steps=50))
    assert ledger.answer == "DONE yes" and not ledger.compactions
    sizes = [r["input"] for r in ledger.requests]
    k = len(sizes)
    n0, delta = sizes[0], sizes[1] - sizes[0]
    assert k == len(world.plan) + 1 and delta > 0
    assert all(b - a == delta for a, b in zip(sizes, sizes[1:], strict=False)), "growth per step must be constant here"
    assert sum(sizes) == k * n0 + delta * k * (k - 1) // 2
    # The provider's reported input equals the recorded blocks of each request.
    assert all(r["input"] == sum(r["tokens"]) for r in ledger.requests)


def _requests(sizes: list[int], *, mutate_system: bool = False) -> list[dict]:
    """Append-only requests: tools, system, then one new 500-token message per step."""
    out = []
    for n, _ in enumerate(sizes):
        system_key = 1000 + n if mutate_system else 1
        keys = [0, system_key] + [10 + j for j in range(n + 1)]
        tokens = [300, 200] + [500] * (n + 1)
        out.append({"keys": keys, "tokens": tokens, "output": 50})
    return out


def test_stable_prefix_reads_the_previous_request_from_cache():
    reqs = _requests(list(range(6)))
    sim = simulate_cache(reqs, PRICE)
    totals = [sum(r["tokens"]) for r in reqs]
    assert sim.input_tokens == sum(totals)
    # Each request reads everything the previous one wrote (all prefixes >= 1,024 tokens).
    assert sim.cache_read_tokens == sum(t for t in totals[:-1] if t >= 1024)
    assert sim.uncached_tokens + sim.cache_read_tokens + sim.cache_write_tokens == sim.input_tokens


def test_mutated_prefix_and_expired_ttl_lose_the_cache():
    stable = simulate_cache(_requests(list(range(6))), PRICE)
    mutated = simulate_cache(_requests(list(range(6)), mutate_system=True), PRICE)
    expired = simulate_cache(_requests(list(range(6))), PRICE, seconds_per_request=301)
    assert mutated.cache_read_tokens == 0 and expired.cache_read_tokens == 0
    assert mutated.cost_usd > 2 * stable.cost_usd
    assert expired.cost_usd == pytest.approx(mutated.cost_usd)


def test_cache_prices_and_minimum_length():
    one = simulate_cache([{"keys": [0, 1, 2], "tokens": [300, 200, 1500], "output": 0}], PRICE)
    assert one.cache_write_tokens == 2000 and one.cost_usd == pytest.approx(2000 * 3.0 * 1.25 / 1e6)
    short = simulate_cache([{"keys": [0, 1, 2], "tokens": [100, 100, 100], "output": 10}] * 2, PRICE)
    assert short.cache_read_tokens == 0 and short.cache_write_tokens == 0
    assert short.cost_usd == pytest.approx((600 * 3.0 + 20 * 15.0) / 1e6)
    # 1,000 tokens: under the minimum, billed as plain input; then 1,500 written at 1.25x.
    two = simulate_cache(_requests([0, 1]), PRICE)
    assert two.cost_usd == pytest.approx((1000 * 3.0 + 1500 * 3.0 * 1.25 + 100 * 15.0) / 1e6)
    # A third request reads those 1,500 at 0.1x and writes its new 500 at 1.25x.
    three = simulate_cache(_requests([0, 1, 2]), PRICE)
    assert three.cost_usd - two.cost_usd == pytest.approx((1500 * 0.3 + 500 * 3.0 * 1.25 + 50 * 15.0) / 1e6)


def test_at_most_four_breakpoints_ending_on_the_last_block():
    for n in range(1, 30):
        marks = breakpoints(n, 1 if n > 1 else None, 4)
        assert 1 <= len(marks) <= 4 and marks[-1] == n - 1
    assert len(breakpoints(30, 1, 2)) == 2
