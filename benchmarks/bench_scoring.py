"""Speed of scoring and of the main job, as ratios against references in the same run.

    python benchmarks/bench_scoring.py [--skip-run]

1. Scoring throughput: `score_summary` (literal + semantic matchers, distortions,
   precision) against a naive per-fact loop of case-insensitive regex searches for the
   keys, on the same summaries (every prompt x every sample of the committed corpus,
   written by the offline extractive summariser); and against the scorer as it was before
   the calibrated matcher (commit 6a9ea5e, checked out from git into a temporary folder and
   run in its own interpreter on the same summaries). Budget: at most 2x slower.
2. Wall time of `compaction-eval run` against the wall time of a bare `import inspect_ai`
   in a fresh interpreter (the floor any inspect-based command pays).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _summaries():
    from inspect_ai.model import get_model

    from compaction_eval.compaction.compact import compact_sample
    from compaction_eval.contracts.prompts import load_candidates
    from compaction_eval.corpus.load import load_corpus

    corpus = load_corpus([ROOT / "fixtures" / "traces"], [ROOT / "labels"])
    model = get_model("extractive/default")
    items = []

    async def make():
        for tid, at in corpus.samples():
            for cand in load_candidates([ROOT / "prompts"]):
                c = await compact_sample(model, corpus.traces[tid], at, cand, budget=800)
                items.append((c.summary, corpus.labels[tid], corpus.traces[tid], at))

    asyncio.run(make())
    return items


def _naive(items) -> int:
    kept = 0
    for summary, labels, _trace, at in items:
        for fact in labels.expected(at):
            kept += all(re.search(re.escape(k), summary, re.I) for k in fact.keys)
    return kept


def _ours(items) -> int:
    from compaction_eval.recall.scoring import score_summary

    return sum(sum(f.kept for f in score_summary(s, lab, tr, at).facts) for s, lab, tr, at in items)


def _best_of(fn, items, repeats=5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(items)
        best = min(best, time.perf_counter() - t0)
    return best


OLD_SCORER = "6a9ea5e"  # the scorer before issue 16's calibrated matcher
_OLD_TIMER = """
import json, sys, time
from pathlib import Path
from compaction_eval.corpus import read_trace
from compaction_eval.labels import load_labels
from compaction_eval.scoring import score_summary
items = json.load(open(sys.argv[1]))
loaded = [(s, load_labels(lab), read_trace(Path(tr))[0], at) for s, lab, tr, at in items]
score_summary(*loaded[0])
best = min(
    (lambda t0: (sum(sum(f.kept for f in score_summary(*x).facts) for x in loaded), time.perf_counter() - t0)[1])(time.perf_counter())
    for _ in range(5))
print(best)
"""


def _old_scorer(items, tmp: str):
    """A function giving the best-of-5 seconds of the pre-matcher scorer on `items` (its
    source extracted once into `tmp`), or None outside a git checkout."""
    archive = subprocess.run(["git", "archive", OLD_SCORER, "src"], cwd=ROOT, capture_output=True)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
    data = Path(tmp) / "items.json"
    data.write_text(json.dumps([(s, str(lab.path), str(tr.path), at) for s, lab, tr, at in items]))

    def seconds() -> float:
        out = subprocess.run([sys.executable, "-c", _OLD_TIMER, str(data)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}, check=True)
        return float(out.stdout.strip())

    return seconds


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-run", action="store_true", help="only the scoring benchmark")
    args = parser.parse_args()

    items = _summaries()
    facts = sum(len(lab.expected(at)) for _s, lab, _t, at in items)
    _ours(items[:4])  # warm the TF-IDF and import paths once
    ours, naive = _best_of(_ours, items), _best_of(_naive, items)
    print(f"scoring: {len(items)} summaries, {facts} fact verdicts")
    print(f"  score_summary     {ours * 1000:8.1f} ms  ({facts / ours:,.0f} facts/s)")
    print(f"  naive regex loop  {naive * 1000:8.1f} ms  ({facts / naive:,.0f} facts/s)")
    print(f"  ratio (ours / naive): {ours / naive:.1f}x")
    # the two scorers run in turn, three times: on a shared machine the load changes between
    # measurements, and the median of paired ratios is steadier than one pair
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        old_seconds = _old_scorer(items, tmp)
        for _ in range(3 if old_seconds else 0):
            pairs.append((_best_of(_ours, items, repeats=3), old_seconds()))
    if pairs:
        ratios = sorted(o / b for o, b in pairs)
        ratio, old = ratios[len(ratios) // 2], pairs[0][1]
        verdict = "ok" if ratio <= 2 else "OVER the 2x budget"
        print(f"  scorer at {OLD_SCORER} (before the calibrated matcher) {old * 1000:8.1f} ms  ({facts / old:,.0f} facts/s)")
        print(f"  ratio (ours / before), median of {len(ratios)} paired runs: {ratio:.2f}x "
              f"({', '.join(f'{r:.2f}' for r in ratios)})  {verdict}")

    if args.skip_run:
        return
    with tempfile.TemporaryDirectory() as tmp:
        ref = _wall([sys.executable, "-c", "import inspect_ai"])
        run = _wall([sys.executable, "-m", "compaction_eval.cli.main", "run", "--out", tmp, "--run", "bench", "--display", "none"])
    print(f"compaction-eval run: {run:.1f} s wall; bare `import inspect_ai`: {ref:.1f} s; ratio {run / ref:.1f}x")


if __name__ == "__main__":
    main()
