"""How long a paid answer is exposed to a kill: from the server's last byte to the answer on disk.

    python benchmarks/bench_answer_window.py [--reference-src DIR] [--repeats 2]

The recall suite runs over HTTP against the loopback server (`anthropic/claude-test`,
messages shape; 4 synthetic traces x 2 points x 2 prompts = 16 samples, two waves of
inspect's 8 connections) in a subprocess, as a user's run would. Afterwards each answer is
paired (by its message id) with the answer-journal entry and inspect's generate-cache entry
that hold it; its exposure is the file's modification time minus the time the server wrote
the answer's last byte (the loopback's `answered`). A kill -9 inside that window loses the
answer from that store.

Reported per run: p50 / p95 / max exposure of the journal and of inspect's cache entry.
With `--reference-src` (the `src/` of another checkout, e.g. `git worktree add /tmp/main
main`), the same run with that tree's code as the reference (inspect's cache only, before the
journal existed), and the ratio of this tree's worst journal exposure to the reference's
worst cache exposure, both measured in this invocation on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from compaction_eval.loopback import LoopbackServer  # noqa: E402

TRACES = ["synth-ci-broken-001", "synth-dep-upgrade-001", "synth-refactor-001", "synth-support-thread-001"]
PROMPTS = ["handoff", "terse"]


def run_once(src: Path, work: Path) -> dict[str, list[float]]:
    """One recall run with the code in `src`; exposure in seconds per store."""
    server = LoopbackServer().start()
    try:
        home = work / "home"
        home.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_", "ANTHROPIC_"))}
        env.update(HOME=str(home), PYTHONPATH=str(src), PYTHONWARNINGS="ignore", INSPECT_DISPLAY="none",
                   ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-ant-bench-dummy")
        cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall",
               "--traces", *[str(ROOT / "fixtures" / "traces" / f"{t}.json.gz") for t in TRACES],
               "--labels", *[str(ROOT / "labels" / f"{t}.yaml") for t in TRACES],
               "--prompts", *[str(ROOT / "prompts" / f"{p}.j2") for p in PROMPTS],
               "--model", "anthropic/claude-test", "--shape", "messages", "--display", "none",
               "--out", str(work / "results"), "--run", "bench"]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"recall failed with {src}: {proc.stderr[-2000:]}")
        answered = {r["message"]: r["answered"] for r in server.served() if "answered" in r and "message" in r}
    finally:
        server.stop()
    stores: dict[str, dict[str, float]] = {"journal": {}, "inspect cache": {}}
    for path in (work / ".compaction-eval" / "inspect-cache").rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue
        if path.suffix == ".answer":
            stores["journal"][json.loads(path.read_bytes().partition(b"\n")[2])["response_id"]] = path.stat().st_mtime
        else:  # inspect's entries: pickles this run wrote itself
            stores["inspect cache"][pickle.loads(path.read_bytes())[1].response_id] = path.stat().st_mtime
    return {store: [when - answered[mid] for mid, when in found.items() if mid in answered] for store, found in stores.items()}


def describe(values: list[float]) -> str:
    if not values:
        return "none written"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"n {len(ordered):2d}  p50 {statistics.median(ordered) * 1e3:6.0f} ms  p95 {p95 * 1e3:6.0f} ms  max {ordered[-1] * 1e3:6.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-src", type=Path, help="src/ of the version to compare with (e.g. a worktree of main)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    trees = [("this tree", ROOT / "src")] + ([("reference", args.reference_src.resolve())] if args.reference_src else [])
    worst: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-answer-window-") as tmp:
        for i in range(args.repeats):
            for label, src in trees:  # interleaved: both see the same machine load
                started = time.perf_counter()
                result = run_once(src, Path(tmp) / f"{label.replace(' ', '-')}-{i}")
                print(f"run {i + 1} {label} ({time.perf_counter() - started:.0f} s)")
                for store, values in result.items():
                    print(f"  {store:14s} {describe(values)}")
                    if values:
                        worst[(label, store)] = max(worst.get((label, store), 0.0), max(values))
    ours, theirs = worst.get(("this tree", "journal")), worst.get(("reference", "inspect cache"))
    if ours is not None and theirs:
        print(f"worst exposure, this tree's journal / reference's inspect cache: {ours / theirs:.2f} ({ours * 1e3:.0f} ms / {theirs * 1e3:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
