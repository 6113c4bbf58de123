"""`history add` and `history show` over 1,000 runs, as ratios to reading the same results.json
files once (issue 26): what the store costs beyond reading what it indexes.

    python benchmarks/bench_history.py [--runs 1000]

One real offline recall run (two synthetic traces, two prompts) is copied into N nightly runs
with distinct timestamps; then, in the same process and run, we time (a) reading and parsing
every results.json once, (b) `history add` of all of them into a new database (one command),
(c) `history show` over that database, each as a subprocess for (b) and (c) and in-process for (a)
plus the interpreter start measured alone, so the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *args], check=True, cwd=cwd, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    n = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.update(INSPECT_DISPLAY="none", INSPECT_CACHE_DIR=str(root / "cache"), INSPECT_LOG_DIR=str(root / "logs"))
        traces = ["synth-ci-broken-001", "synth-refactor-001"]
        subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", "recall",
                        "--traces", *[str(ROOT / "fixtures" / "traces" / f"{t}.json.gz") for t in traces],
                        "--labels", *[str(ROOT / "labels" / f"{t}.yaml") for t in traces],
                        "--prompts", str(ROOT / "prompts" / "handoff.j2"), str(ROOT / "prompts" / "terse.j2"),
                        "--out", str(root / "base"), "--run", "r", "-q"], check=True, cwd=root, capture_output=True)
        base = json.loads((root / "base" / "r" / "results.json").read_text())
        start = datetime(2024, 1, 1, tzinfo=timezone.utc)
        dirs = []
        for i in range(n):
            base["run"], base["created"] = f"night-{i:04d}", (start + timedelta(days=i)).isoformat(timespec="seconds")
            d = root / "runs" / f"night-{i:04d}"
            d.mkdir(parents=True)
            (d / "results.json").write_text(json.dumps(base))
            dirs.append(str(d))
        size = sum((Path(d) / "results.json").stat().st_size for d in dirs)

        t0 = time.perf_counter()
        for d in dirs:
            json.loads((Path(d) / "results.json").read_text())
        read_once = time.perf_counter() - t0
        interpreter = _cli("--version", cwd=root)
        add = _cli("history", "add", *dirs, "--db", str(root / "h.db"), cwd=root)
        show = _cli("history", "show", "--db", str(root / "h.db"), "--category", "all", cwd=root)
        print(f"{n} runs, {size / 1e6:.1f} MB of results.json; reading them once: {read_once:.2f} s; "
              f"`compaction-eval --version` alone: {interpreter:.2f} s")
        print(f"history add: {add:.2f} s = {(add - interpreter) / read_once:.1f}x reading once (start-up subtracted)")
        print(f"history show: {show:.2f} s = {(show - interpreter) / read_once:.2f}x reading once (start-up subtracted); "
              f"db {Path(root / 'h.db').stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
