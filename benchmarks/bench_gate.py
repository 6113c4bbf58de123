"""The regression gate's power and false alarms.

    python benchmarks/bench_gate.py [--results RUN_DIR] [--replicates 50] [--flip 0 0.02 0.05 0.1] [--epochs 1 3]

1. One offline recall run (default corpus, extractive summariser) evaluates, in a single
   inspect run so every variant sees the same traces and labels, the prompts `handoff` and
   `recall_max` and planted regressions of each: the prompt with one schema field removed
   (`numbers`: no longer asks for numbers; `bugs`, `artifacts`, `decisions`: a section
   dropped), written with `tune.write_variant`.
2. Scenarios: for each base prompt, "identical rerun" (baseline = candidate = the prompt)
   and one planted scenario per variant (candidate = the variant under the prompt's name).
3. Noise. Offline the extractive summariser is deterministic, so an identical rerun always
   passes and a planted regression is either always or never detected. To see how the gate
   behaves with a noisy model, each replicate flips every per-fact verdict (kept <-> lost)
   independently with probability `flip`, in baseline and candidate independently, and
   recomputes each sample's recall; with `epochs` > 1 each side gets that many independently
   flipped copies, so facts become unstable (kept in k of N) as with a real model and the
   gate's stability rule applies.
4. Detection rate = share of planted replicates the gate fails; false-alarm rate = share of
   identical-rerun replicates it fails. A planted variant whose true effect is within the
   tolerance (the extractive summariser often keeps a number because its sentence also holds
   a path) is reported with its noiseless effect so the rate can be read against it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from compaction_eval.contracts.prompts import load_candidate  # noqa: E402
from compaction_eval.contracts.runfiles import read_results  # noqa: E402
from compaction_eval.gate.rules import gate_runs  # noqa: E402
from compaction_eval.tune.ablation import write_variant  # noqa: E402

BASES = ("handoff", "recall_max")
PLANTED = ("numbers", "bugs", "artifacts", "decisions")


def make_run(work: Path, traces: list[str], labels: list[str], planted: tuple[str, ...] = PLANTED) -> dict:
    """Run the recall suite once on the bases and their planted variants."""
    from compaction_eval.recall.run import RecallConfig, run_recall

    prompts = work / "prompts"
    for base in BASES:
        cand = load_candidate(ROOT / "prompts" / f"{base}.j2")
        write_variant(cand, cand.fields, prompts, base)
        for drop in planted:
            if drop in cand.fields:
                write_variant(cand, tuple(f for f in cand.fields if f != drop), prompts, f"{base}--no-{drop}")
    config = RecallConfig(traces=traces, labels=labels, prompts=[str(prompts)])
    return run_recall(config, work / f"run-{int(time.time())}")


def as_run(doc: dict, prompt: str, name: str, run: str) -> dict:
    """The samples of `prompt` in `doc`, renamed to `name`, as a one-prompt run."""
    samples = [dict(s, prompt=name) for s in doc["samples"] if s["prompt"] == prompt]
    out = {k: v for k, v in doc.items() if k not in ("samples", "prompts")}
    out.update(run=run, samples=samples, prompts=[{"prompt": name}])
    return out


def _recall(facts: list[dict]) -> float:
    total = sum(f.get("weight", 1.0) for f in facts)
    return sum(f.get("weight", 1.0) for f in facts if f["kept"]) / total if total else 1.0


def noisy(run: dict, flip: float, epochs: int, rng: np.random.Generator) -> dict:
    """`epochs` copies of every sample, each fact verdict flipped with probability `flip`."""
    samples = []
    for s in run["samples"]:
        for e in range(1, epochs + 1):
            facts = []
            for f in s["facts"]:
                kept = bool(f["kept"]) ^ bool(rng.random() < flip)
                facts.append(dict(f, kept=kept))
            by_cat = defaultdict(list)
            for f in facts:
                by_cat[f["category"]].append(f)
            samples.append(dict(s, epoch=e, facts=facts, recall=_recall(facts),
                                recall_by_category={c: _recall(v) for c, v in by_cat.items()}))
    return dict(run, samples=samples)


def _rule(reason: str) -> str:
    """Which rule of compare_runs a reason line comes from."""
    if "critical fact" in reason:
        return "critical fact"
    return "overall recall" if reason.split(":", 1)[1].strip().startswith("recall ") else "category"


def simulated_loss(run: dict, category: str, share: float, rng: np.random.Generator) -> dict:
    """A planted regression of known size: each fact of `category` the run kept is lost with
    probability `share` (the same facts in every epoch, as a prompt change would)."""
    samples = []
    for s in run["samples"]:
        facts = [dict(f, kept=False) if f["category"] == category and f["kept"] and rng.random() < share else f
                 for f in s["facts"]]
        by_cat = defaultdict(list)
        for f in facts:
            by_cat[f["category"]].append(f)
        samples.append(dict(s, facts=facts, recall=_recall(facts), recall_by_category={c: _recall(v) for c, v in by_cat.items()}))
    return dict(run, samples=samples)


SIMULATED = (("number", 0.5), ("number", 1.0), ("bug", 0.5), ("decision", 0.5))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", help="reuse a run made by an earlier invocation (its results.json)")
    ap.add_argument("--work", default="/tmp/bench-gate", help="where the offline run goes")
    ap.add_argument("--traces", nargs="+", default=[str(ROOT / "fixtures" / "traces")], help="corpus (default: the default corpus)")
    ap.add_argument("--labels", nargs="+", default=[str(ROOT / "labels")])
    ap.add_argument("--planted", nargs="+", default=list(PLANTED), help="fields whose removal is planted")
    ap.add_argument("--replicates", type=int, default=50)
    ap.add_argument("--flip", type=float, nargs="+", default=[0.0, 0.02, 0.05, 0.10])
    ap.add_argument("--epochs", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--category-tolerance", type=float, default=0.05)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    t0 = time.time()
    doc = read_results(args.results) if args.results else make_run(Path(args.work), args.traces, args.labels, tuple(args.planted))
    t_run = time.time() - t0
    present = {s["prompt"] for s in doc["samples"]}
    n_samples = len({(s["trace"], s["point"]) for s in doc["samples"]})
    print(f"corpus: {n_samples} samples (trace x point), {len({s['trace'] for s in doc['samples']})} traces; "
          f"model {doc['model']} (offline stand-in, deterministic); run took {t_run:.0f}s")
    tol = dict(tolerance=args.tolerance, category_tolerance=args.category_tolerance)

    scenarios = []  # (base, variant or None)
    for base in BASES:
        if base not in present:
            continue
        scenarios.append((base, None))
        scenarios += sorted((base, p) for p in present if p.startswith(f"{base}--no-"))

    # noiseless effect of each planted variant (what the gate sees without noise)
    print("\nplanted regressions, noiseless (exit code of the gate; recall and worst category delta):")
    effects = {}
    for base, variant in scenarios:
        b = as_run(doc, base, base, "baseline")
        c = as_run(doc, variant or base, base, "candidate")
        r = gate_runs(b, c, **tol)
        pc = r.comparison.prompt(base)
        worst = min(pc.by_category.items(), key=lambda kv: kv[1].delta)
        lost = len(pc.lost)
        effects[(base, variant)] = {"exit": r.exit_code, "recall_delta": pc.recall.delta, "worst_category": worst[0],
                                    "worst_delta": worst[1].delta, "lost": lost, "gained": len(pc.gained)}
        print(f"  {variant or base + ' (identical rerun)':<28} exit {r.exit_code}  recall {100 * pc.recall.delta:+5.1f} "
              f"[{100 * pc.recall.ci[0]:+5.1f}, {100 * pc.recall.ci[1]:+5.1f}]  worst {worst[0]} {100 * worst[1].delta:+5.1f}  "
              f"lost {lost} gained {len(pc.gained)}")

    rows = []
    print(f"\nwith simulated noise ({args.replicates} replicates per cell; fact verdicts flipped with probability p):")
    print(f"  {'p':>5} {'epochs':>6}  {'false alarms':>12}  {'detection (prompt variants)':>24}  {'detection (simulated losses)':>10}")
    for flip in args.flip:
        for epochs in args.epochs:
            if flip == 0 and epochs > 1:
                continue  # deterministic: repeats are identical
            reps = 1 if flip == 0 else args.replicates
            rng = np.random.default_rng(20261129 + int(flip * 1000) + 17 * epochs)
            hits: dict[tuple, list[int]] = defaultdict(list)
            why: dict[str, int] = defaultdict(int)  # which rule raised the false alarms
            for _ in range(reps):
                for base in [b for b, v in scenarios if v is None]:
                    for cat, share in SIMULATED:
                        clean = as_run(doc, base, base, "candidate")
                        b = noisy(as_run(doc, base, base, "baseline"), flip, epochs, rng)
                        c = noisy(simulated_loss(clean, cat, share, rng), flip, epochs, rng)
                        hits[(base, f"{base}~lose-{int(100 * share)}%-{cat}")].append(int(gate_runs(b, c, **tol).exit_code == 1))
                for base, variant in scenarios:
                    b = noisy(as_run(doc, base, base, "baseline"), flip, epochs, rng)
                    c = noisy(as_run(doc, variant or base, base, "candidate"), flip, epochs, rng)
                    result = gate_runs(b, c, **tol)
                    hits[(base, variant)].append(int(result.exit_code == 1))
                    if variant is None and result.exit_code == 1:
                        for rule in sorted({_rule(r) for r in result.reasons}):
                            why[rule] += 1
            null = [h for (b, v), hs in hits.items() if v is None for h in hs]
            planted = [h for (b, v), hs in hits.items() if v is not None and "--no-" in v for h in hs]
            simulated = [h for (b, v), hs in hits.items() if v is not None and "~lose-" in v for h in hs]
            per_variant = {v: float(np.mean(hs)) for (b, v), hs in hits.items() if v is not None}
            row = {"flip": flip, "epochs": epochs, "replicates": reps, "false_alarm_rate": float(np.mean(null)),
                   "detection_rate": float(np.mean(planted)), "simulated_detection_rate": float(np.mean(simulated)),
                   "per_variant": per_variant,
                   "false_alarms_by_rule": {k: v / max(1, len(null)) for k, v in why.items()}}
            rows.append(row)
            pv = ", ".join(f"{v.replace('recall_max', 'rmax')} {100 * r:.0f}%" for v, r in per_variant.items())
            print(f"  {flip:>5.2f} {epochs:>6}  {100 * row['false_alarm_rate']:>11.1f}%  {100 * row['detection_rate']:>23.1f}%  "
                  f"{100 * row['simulated_detection_rate']:>10.1f}%")
            print(f"         per variant: {pv}")
            if why:
                print("         false alarms raised by: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in row["false_alarms_by_rule"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": n_samples, "effects": {f"{b}|{v}": e for (b, v), e in effects.items()},
                                               "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
