"""Billed input of N prompts compacting one trace: the cache-friendly shape against the naive one.

    python benchmarks/bench_prompt_cache.py [--trace PATH] [--at N]

Every candidate prompt in `prompts/` (N = 4) compacts the same span of one trace through
inspect's `anthropic` provider and the real SDK, against the loopback server, whose
prefix-cache model reports cache writes and reads from the request's `cache_control`
breakpoints. Billed input counts uncached tokens at 1x, cache writes at 1.25x and cache
reads at 0.1x. Shapes:

- inline (naive): each prompt renders the span into its own text, so no two requests
  share a prefix;
- messages (cache-friendly): the span as messages first, the instruction last, so every
  prompt after the first reads the span from the cache.

The floor for N prompts whose shared prefix is everything: (1.25 + 0.1 (N-1)) / N, 0.39
for N = 4. Prompts run one after another (the second request must find the first one's
write; concurrent requests with the same prefix all write, as with the real API, so the
saving under concurrency depends on arrival order: `concurrent=True` in `_billed`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def _billed(server, trace, at: int, shape: str, budget: int, concurrent: bool = False) -> tuple[float, int, int]:
    from inspect_ai.model import get_model

    from compaction_eval.compaction.compact import compact_sample
    from compaction_eval.contracts.prompts import load_candidates

    candidates = load_candidates([ROOT / "prompts"])
    server.cache.clear()
    mark = len(server.requests)
    model = get_model("anthropic/claude-test", base_url=server.url, api_key="sk-ant-DUMMY-BENCH-0000", max_retries=0)
    if concurrent:
        await asyncio.gather(*(compact_sample(model, trace, at, c, budget=budget, shape=shape) for c in candidates))
    else:
        for candidate in candidates:
            await compact_sample(model, trace, at, candidate, budget=budget, shape=shape)
    served = [r for r in server.served() if r["seq"] >= mark]
    from compaction_eval.loopback import Usage

    billed = sum(Usage(**r["usage"]).billed for r in served)
    plain = sum(Usage(**r["usage"]).total for r in served)
    return billed, plain, len(served)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=str(ROOT / "fixtures" / "traces" / "synth-ci-broken-003.json.gz"))
    parser.add_argument("--at", type=int, default=61, help="compaction point (default: the trace's last labelled one)")
    parser.add_argument("--budget", type=int, default=800)
    args = parser.parse_args()
    os.environ.setdefault("INSPECT_CACHE_DIR", str(ROOT / ".compaction-eval" / "bench-cache"))
    from compaction_eval.corpus.load import read_trace
    from compaction_eval.loopback import LoopbackServer

    trace, problems = read_trace(Path(args.trace))
    if trace is None:
        print(problems[0], file=sys.stderr)
        return 2
    with LoopbackServer() as server:
        inline, plain_inline, n = asyncio.run(_billed(server, trace, args.at, "inline", args.budget))
        messages, plain_messages, _ = asyncio.run(_billed(server, trace, args.at, "messages", args.budget))
    floor = (1.25 + 0.1 * (n - 1)) / n
    print(f"trace {trace.id} at {args.at}, N = {n} prompts, budget {args.budget}")
    print(f"inline (naive):   input tokens {plain_inline:>7}  billed {inline:>9.0f}")
    print(f"messages:         input tokens {plain_messages:>7}  billed {messages:>9.0f}")
    print(f"billed messages / billed inline           = {messages / inline:.3f}")
    print(f"billed messages / messages tokens uncached = {messages / plain_messages:.3f}  (floor {floor:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
