"""How fast the everyday commands start, and what the offline recall suite costs per sample.

    python benchmarks/bench_startup.py [--repeats 5]

Both are measured as ratios against references taken in the same run, on the same machine:

1. Start-up: `compaction-eval --help`, `lint` on one labels file and `score` on one summary,
   each minus a bare `python -c pass` (the interpreter's own start). The budget is 0.5 s
   above the interpreter.
2. The offline recall suite on the default corpus: CPU seconds (user + system, children
   included) per sample, after subtracting the CPU of a bare `import inspect_ai` in a fresh
   interpreter (the floor any inspect-based command pays). The budget is 0.15 s per sample.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "compaction_eval"]
TRACE = ROOT / "fixtures/traces/synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels/synth-ci-broken-001.yaml"


def _wall(cmd: list[str], repeats: int, **kw) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cpu(cmd: list[str], **kw) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.md"
        summary.write_text("- The build fails in ci/build.sh with exit code 2.\n", encoding="utf-8")
        env = {**os.environ, "HOME": tmp}
        floor = _wall([sys.executable, "-c", "pass"], repeats)
        commands = {
            "--help": [*CLI, "--help"],
            "lint one file": [*CLI, "lint", str(LABELS), "--traces", str(TRACE.parent)],
            "score one summary": [*CLI, "score", "--labels", str(LABELS), "--trace", str(TRACE), "--summary", str(summary), "--point", "31"],
        }
        out = {"python -c pass": floor}
        for name, cmd in commands.items():
            out[name] = _wall(cmd, repeats, cwd=tmp, env=env)
    return out


def recall_cpu() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HOME": tmp, "INSPECT_CACHE_DIR": f"{tmp}/cache", "INSPECT_LOG_DIR": f"{tmp}/logs"}
        floor = _cpu([sys.executable, "-c", "import inspect_ai"], env=env)
        cpu = _cpu([*CLI, "recall", "--out", tmp, "--run", "bench", "--display", "none"], cwd=ROOT, env=env)
        samples = len(json.loads((Path(tmp) / "bench" / "results.json").read_text())["samples"])
    return {"import inspect_ai cpu": floor, "recall cpu": cpu, "samples": samples, "per sample": (cpu - floor) / samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-recall", action="store_true")
    args = parser.parse_args()
    times = startup(args.repeats)
    floor = times["python -c pass"]
    print(f"{'command':<22} {'wall s':>8} {'above python':>13}  (budget 0.5 s above the interpreter)")
    for name, t in times.items():
        extra = "" if name == "python -c pass" else f"{t - floor:>12.3f}s {'ok' if t - floor <= 0.5 else 'OVER'}"
        print(f"{name:<22} {t:>8.3f} {extra}")
    if not args.skip_recall:
        r = recall_cpu()
        verdict = "ok" if r["per sample"] <= 0.15 else "OVER"
        print(f"\nrecall suite, default corpus: {r['recall cpu']:.1f} CPU-s for {r['samples']} samples; "
              f"bare `import inspect_ai` {r['import inspect_ai cpu']:.2f} CPU-s; "
              f"{r['per sample']:.3f} CPU-s per sample above it (budget 0.15) {verdict}")


if __name__ == "__main__":
    main()
