"""`python -m compaction_eval.synth [--corpus default|large] --out-traces DIR --out-labels DIR [--seed 0]`.

Writes the default labelled corpus and prints one line per trace (messages, tokens, points).
"""

from __future__ import annotations

import argparse
import sys
import time

from compaction_eval.contracts.tokens import count_many
from compaction_eval.contracts.traces import message_text
from compaction_eval.synth import CORPORA, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compaction_eval.synth", description=__doc__.splitlines()[0])
    parser.add_argument("--out-traces", required=True, help="directory for <id>.json.gz")
    parser.add_argument("--out-labels", required=True, help="directory for <id>.yaml")
    parser.add_argument("--seed", type=int, default=0, help="base seed; each trace's seed is seed*100 + its offset")
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="default",
                        help="default: the 11 traces `compaction-eval run` evaluates; large: 42 traces of up to 200k tokens")
    parser.add_argument("--only", action="append", choices=[s.trace_id for specs in CORPORA.values() for s in specs],
                        help="generate only this trace id (repeatable)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    written = write(args.out_traces, args.out_labels, seed=args.seed, only=set(args.only or ()), corpus=args.corpus)
    for trace_path, labels_path, st in written:
        messages = st.trace["messages"]
        tokens = sum(count_many([message_text(m) for m in messages]))
        points = ", ".join(str(p["at"]) for p in st.labels["points"])
        print(f"{st.id:<30} {len(messages):>4} messages {tokens:>7} tokens  points {points:<8} -> {trace_path}, {labels_path}")
    print(f"{len(written)} traces in {time.perf_counter() - started:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
