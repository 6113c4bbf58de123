"""Speed of the long-horizon agent loop, in process (no inspect eval around it).

    python benchmarks/bench_horizon.py [--size medium] [--configs eviction full]

Per configuration: worlds run, model calls, tokens sent, wall seconds, and tokens sent per
second of loop time (the loop's own overhead: token counts are cached per message, so the
cost per step should stay flat as histories grow, not rise with their length). A second
figure compares the loop's per-step bookkeeping against re-counting every message of every
request from scratch, the thing the cache avoids.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from inspect_ai.model import get_model

from compaction_eval.contracts.tokens import count_many
from compaction_eval.horizon.agent import run_loop
from compaction_eval.horizon.policies.notes import NOTES_TOOL, NotesBook
from compaction_eval.horizon.policies.resolve import PolicySpec, make_policy
from compaction_eval.horizon.tools import SUBMIT_TOOL, world_tools
from compaction_eval.horizon.worlds import get_world, world_ids


async def run_config(config: str, size: str, prompts: str) -> tuple[int, int, int, float, float]:
    agent, compactor = get_model("scripted/default"), get_model("extractive/default")
    calls = tokens = 0
    recount = 0.0
    started = time.perf_counter()
    for wid in world_ids():
        world = get_world(wid, size)
        notes = NotesBook()
        spec = PolicySpec(config, prompts_dir=prompts)
        policy = make_policy(spec, world.context_window, notes, compactor=compactor)
        tools = world_tools(world) + ([NOTES_TOOL] if spec.offers_notes else []) + [SUBMIT_TOOL]
        history: list = []
        ledger = await run_loop(world, policy, agent, tools, notes, history, output_reserve=512, max_steps=4 * len(world.plan) + 8)
        calls += len(ledger.requests)
        tokens += sum(r["input"] for r in ledger.requests)
        # Reference: tokenise the whole history from scratch at every step.
        t = time.perf_counter()
        for n in range(1, len(history) + 1):
            count_many([m.text for m in history[:n]])
        recount += time.perf_counter() - t
    return len(world_ids()), calls, tokens, time.perf_counter() - started, recount


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="small")
    parser.add_argument("--configs", nargs="+", default=["baseline", "eviction", "full"])
    parser.add_argument("--prompts", default="prompts")
    args = parser.parse_args()
    for config in args.configs:
        worlds, calls, tokens, seconds, recount = asyncio.run(run_config(config, args.size, args.prompts))
        print(f"{config:<12} {worlds} worlds  {calls:>4} calls  {tokens:>10,} tokens sent  {seconds:6.2f} s  "
              f"{tokens / seconds / 1e6:6.2f} M tokens/s  (re-counting every history per step: ~{recount:5.2f} s)")


if __name__ == "__main__":
    main()
