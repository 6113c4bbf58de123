"""Peak memory and CPU per sample of an offline recall run as the corpus grows (issue 25).

    python benchmarks/bench_scale.py [--sizes 100 1000 10000] [--prompts prompts] [--json FILE]

Each size is a fresh corpus from the project's synthetic generator (`compaction_eval.synth`:
the default corpus's stories, re-seeded and renamed until the run has that many samples,
trace x point x prompt), run once by `compaction-eval recall` in its own interpreter. For
each run: peak RSS of that process (`wait4`'s rusage, so other runs do not blur it), CPU
seconds (user + system), and CPU per sample above a bare `import inspect_ai` (the floor any
inspect-based command pays, measured in the same benchmark run, with its own peak RSS).
Every figure is also a ratio to the smallest size's run, measured in the same benchmark
run on the same machine: a loaded machine moves the absolute numbers, not the ratios much.

The budget (issue 25): peak RSS at 10,000 samples at most 1.5x the peak at 100, and CPU per
sample at most 10% above the 100-sample run's. Results are offline stand-in runs (extractive
summariser): they measure the harness, not a model.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from compaction_eval.contracts.prompts import load_candidates  # noqa: E402
from compaction_eval.synth import SPECS, build_spec  # noqa: E402

CLI = [sys.executable, "-m", "compaction_eval"]
RSS_LIMIT = 1.5
CPU_LIMIT = 0.10


def write_corpus(out: Path, samples: int, prompts: int) -> int:
    """Synthetic traces and labels under `out` for about `samples` samples (whole traces, so
    it may be a few more); returns the number of samples the run will have."""
    traces, labels = out / "traces", out / "labels"
    traces.mkdir(parents=True)
    labels.mkdir(parents=True)
    planned = 0
    k = 0
    while planned < samples:
        spec = SPECS[k % len(SPECS)]
        seed = k // len(SPECS)
        # a new id per copy: ids are the corpus's keys, and the seed varies the content
        st = build_spec(dataclasses.replace(spec, trace_id=f"{spec.trace_id}-s{seed:04d}"), seed)
        (traces / f"{st.id}.json.gz").write_bytes(st.trace_bytes())
        (labels / f"{st.id}.yaml").write_text(st.labels_text(), encoding="utf-8")
        planned += len(st.labels["points"]) * prompts
        k += 1
    return planned


def measure(cmd: list[str], **kw) -> dict[str, float]:
    """CPU seconds, wall seconds and peak RSS (MB) of one child process, from its own rusage."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    # ru_maxrss is in kilobytes on Linux
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "rss_mb": usage.ru_maxrss / 1024}


def run(sizes: list[int], prompts: Path) -> dict:
    n_prompts = len(load_candidates([str(prompts)]))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "HOME": tmp, "INSPECT_CACHE_DIR": f"{tmp}/cache", "INSPECT_LOG_DIR": f"{tmp}/logs",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        floor = measure([sys.executable, "-c", "import inspect_ai"], env=env, cwd=tmp)
        rows = []
        for size in sizes:
            corpus = base / f"corpus-{size}"
            planned = write_corpus(corpus, size, n_prompts)
            m = measure([*CLI, "recall", "-q", "--traces", str(corpus / "traces"), "--labels", str(corpus / "labels"),
                         "--prompts", str(prompts), "--out", str(base / "runs"), "--run", f"n{size}", "--display", "none"],
                        env=env, cwd=tmp)
            results = base / "runs" / f"n{size}" / "results.json"
            with results.open("rb") as fh:  # the count only (each sample has one "epoch"); the file can be large
                samples = sum(1 for line in fh if line.startswith(b'   "epoch": '))
            if samples != planned:
                raise SystemExit(f"{results}: {samples} samples, expected {planned}")
            rows.append({"size": size, "samples": samples, **m,
                         "cpu_per_sample": (m["cpu"] - floor["cpu"]) / samples,
                         "results_mb": results.stat().st_size / 2**20})
            print(f"  {samples} samples: {m['cpu']:.1f} CPU-s, peak RSS {m['rss_mb']:.0f} MB", file=sys.stderr, flush=True)
            # the next size's corpus and run need the space more than this one's files
            for path in sorted((base / "runs").rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
            for path in sorted(corpus.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
    ref = rows[0]
    for r in rows:
        r["rss_ratio"] = r["rss_mb"] / ref["rss_mb"]
        r["cpu_per_sample_ratio"] = r["cpu_per_sample"] / ref["cpu_per_sample"]
    return {"import_inspect_ai": floor, "runs": rows, "offline_stand_in": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--prompts", type=Path, default=ROOT / "prompts")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    out = run(sorted(args.sizes), args.prompts)
    floor = out["import_inspect_ai"]
    print("offline recall (extractive stand-in, not an LLM); ratios to the smallest run of this benchmark run")
    print(f"bare `import inspect_ai`: peak RSS {floor['rss_mb']:.0f} MB, {floor['cpu']:.2f} CPU-s")
    print(f"{'samples':>8} {'peak RSS MB':>12} {'x':>6} {'CPU s':>8} {'CPU-s/sample':>13} {'x':>6} {'results MB':>11}")
    for r in out["runs"]:
        print(f"{r['samples']:>8} {r['rss_mb']:>12.0f} {r['rss_ratio']:>6.2f} {r['cpu']:>8.1f} "
              f"{r['cpu_per_sample']:>13.4f} {r['cpu_per_sample_ratio']:>6.2f} {r['results_mb']:>11.1f}")
    last = out["runs"][-1]
    # a larger run spreads its fixed costs thinner: per sample it may only get cheaper
    ok = last["rss_ratio"] <= RSS_LIMIT and last["cpu_per_sample_ratio"] <= 1 + CPU_LIMIT
    print(f"budget at the largest size: peak RSS <= {RSS_LIMIT}x, CPU per sample at most {CPU_LIMIT:.0%} above: "
          f"{'ok' if ok else 'OVER'}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
