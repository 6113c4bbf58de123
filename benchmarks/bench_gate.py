"""The regression gate's power and false alarms.

    python benchmarks/bench_gate.py [--results RUN_DIR ...] [--replicates 50] [--flip 0 0.02 0.05] [--epochs 1 3]

1. One offline recall run per corpus (default: the gate corpus, fixtures/traces + fixtures/traces-large;
   extractive summariser) evaluates the prompts `handoff` and `recall_max` and planted
   regressions of each: the prompt with one schema field removed (by default each of
   numbers, artifacts, attempts, decisions, constraints, next_step in turn; `--planted all`
   for every declared field), written with `tune.write_variant`.
2. Scenarios: for each base prompt, "identical rerun" (baseline = candidate = the prompt)
   and one planted scenario per variant (candidate = the variant under the prompt's name,
   declaring the fields the variant declares).
3. Noise. Offline the extractive summariser is deterministic, so every change is definite.
   To see how the gate behaves with a real, noisy model, each replicate flips every
   per-fact verdict (kept <-> lost) independently with probability `flip`, in baseline and
   candidate independently, and marks both runs as not deterministic; with `epochs` > 1
   each side gets that many independently flipped copies (facts become unstable, kept in k
   of N, and consistency needs every epoch).
4. Power = share of planted replicates the gate fails (exit 1), for the whole gate and for
   its fact rules alone (`allow_field_removal`: what the measured losses show without the
   prompt-contract rule); false-alarm rate = share of identical-rerun replicates it fails.
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
from compaction_eval.gate.baselines import GATE_LABELS, GATE_TRACES  # noqa: E402
from compaction_eval.gate.rules import gate_runs  # noqa: E402
from compaction_eval.tune.ablation import write_variant  # noqa: E402

BASES = ("handoff", "recall_max")
PLANTED = ("numbers", "artifacts", "attempts", "decisions", "constraints", "next_step")
GATE_CORPUS = tuple(zip(GATE_TRACES, GATE_LABELS, strict=True))  # one run per corpus, pooled


def fields_of(prompt: str) -> list[str]:
    """The fields a base prompt or a `<base>--no-<field>` variant declares."""
    base, _, dropped = prompt.partition("--no-")
    return [f for f in load_candidate(ROOT / "prompts" / f"{base}.j2").fields if f != dropped]


def make_run(work: Path, traces: list[str], labels: list[str], planted: tuple[str, ...] = PLANTED) -> dict:
    """Run the recall suite once on the bases and their planted variants (`all`: every field)."""
    from compaction_eval.recall.run import RecallConfig, run_recall

    prompts = work / "prompts"
    for base in BASES:
        cand = load_candidate(ROOT / "prompts" / f"{base}.j2")
        write_variant(cand, cand.fields, prompts, base)
        for drop in (cand.fields if "all" in planted else planted):
            if drop in cand.fields:
                write_variant(cand, tuple(f for f in cand.fields if f != drop), prompts, f"{base}--no-{drop}")
    config = RecallConfig(traces=traces, labels=labels, prompts=[str(prompts)])
    return run_recall(config, work / f"run-{int(time.time())}")


def as_run(doc: dict, prompt: str, name: str, run: str) -> dict:
    """The samples of `prompt` in `doc`, renamed to `name`, as a one-prompt run."""
    samples = [dict(s, prompt=name) for s in doc["samples"] if s["prompt"] == prompt]
    out = {k: v for k, v in doc.items() if k not in ("samples", "prompts")}
    out.update(run=run, samples=samples, prompts=[{"prompt": name, "fields": fields_of(prompt)}])
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
    # a simulated real model: not deterministic, so consistency must come from repeats
    return dict(run, samples=samples, offline_stand_in=False, deterministic=False, model="simulated/noisy")


def _rule(reason: str) -> str:
    """Which rule of compare_runs a reason line comes from."""
    if "critical fact" in reason:
        return "critical fact"
    if "no longer asks for" in reason:
        return "prompt contract"
    if "definite loss" in reason:
        return "definite losses"
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




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", nargs="+", help="reuse runs made by an earlier invocation (results.json files; their samples are pooled)")
    ap.add_argument("--work", default="/tmp/bench-gate", help="where the offline runs go")
    ap.add_argument("--planted", nargs="+", default=list(PLANTED), help="fields whose removal is planted (`all`: every declared field)")
    ap.add_argument("--replicates", type=int, default=50)
    ap.add_argument("--flip", type=float, nargs="+", default=[0.0, 0.02, 0.05])
    ap.add_argument("--epochs", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--category-tolerance", type=float, default=0.05)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    t0 = time.time()
    if args.results:
        docs = [read_results(r) for r in args.results]
    else:
        docs = [make_run(Path(args.work) / Path(t).name, [str(ROOT / t)], [str(ROOT / lab)], tuple(args.planted)) for t, lab in GATE_CORPUS]
    doc = dict(docs[0], samples=[s for d in docs for s in d["samples"]])
    t_run = time.time() - t0
    present = {s["prompt"] for s in doc["samples"]}
    n_samples = len({(s["trace"], s["point"]) for s in doc["samples"]})
    print(f"corpus: {n_samples} samples (trace x point), {len({s['trace'] for s in doc['samples']})} traces; "
          f"model {doc['model']} (offline stand-in, deterministic); runs took {t_run:.0f}s")
    tol = dict(tolerance=args.tolerance, category_tolerance=args.category_tolerance)
    wanted = None if "all" in args.planted else set(args.planted)

    scenarios = []  # (base, variant or None)
    for base in BASES:
        if base not in present:
            continue
        scenarios.append((base, None))
        scenarios += sorted((base, p) for p in present if p.startswith(f"{base}--no-")
                            and (wanted is None or p.split("--no-", 1)[1] in wanted))

    print("\nplanted field removals, noiseless (deterministic stand-in): exit code of the gate, and of its fact rules alone")
    effects = {}
    for base, variant in scenarios:
        b = as_run(doc, base, base, "baseline")
        c = as_run(doc, variant or base, base, "candidate")
        r = gate_runs(b, c, **tol)
        facts_only = gate_runs(b, c, allow_field_removal=True, **tol)
        pc = r.comparison.prompt(base)
        definite = pc.definite_lost
        effects[(base, variant)] = {"exit": r.exit_code, "exit_fact_rules": facts_only.exit_code, "recall_delta": pc.recall.delta,
                                    "lost": len(pc.lost), "gained": len(pc.gained), "definite_lost": len(definite),
                                    "rules": sorted({_rule(x) for x in r.reasons})}
        print(f"  {variant or base + ' (identical rerun)':<28} exit {r.exit_code} (fact rules {facts_only.exit_code})  "
              f"recall {100 * pc.recall.delta:+5.1f}  lost {len(pc.lost)} gained {len(pc.gained)}  "
              f"rules: {', '.join(effects[(base, variant)]['rules']) or '-'}")

    rows = []
    print(f"\nwith simulated real-model noise ({args.replicates} replicates per cell; each fact verdict flipped with probability p):")
    print(f"  {'p':>5} {'epochs':>6}  {'false alarms':>12}  {'power (gate)':>12}  {'power (fact rules)':>18}  min power per field (gate / fact rules)")
    for flip in args.flip:
        for epochs in args.epochs:
            if flip == 0 and epochs > 1:
                continue  # deterministic: repeats are identical
            reps = 1 if flip == 0 else args.replicates
            rng = np.random.default_rng(20261129 + int(flip * 1000) + 17 * epochs)
            hits: dict[tuple, list[int]] = defaultdict(list)
            hits_facts: dict[tuple, list[int]] = defaultdict(list)
            why: dict[str, int] = defaultdict(int)
            for _ in range(reps):
                for base, variant in scenarios:
                    b, c = as_run(doc, base, base, "baseline"), as_run(doc, variant or base, base, "candidate")
                    if flip > 0:
                        b, c = noisy(b, flip, epochs, rng), noisy(c, flip, epochs, rng)
                    result = gate_runs(b, c, **tol)
                    hits[(base, variant)].append(int(result.exit_code == 1))
                    if variant is not None:
                        hits_facts[(base, variant)].append(int(gate_runs(b, c, allow_field_removal=True, **tol).exit_code == 1))
                    elif result.exit_code == 1:
                        for rule in sorted({_rule(r) for r in result.reasons}):
                            why[rule] += 1
            null = [h for (b, v), hs in hits.items() if v is None for h in hs]
            per_variant = {v: float(np.mean(hs)) for (b, v), hs in hits.items() if v is not None}
            per_variant_facts = {v: float(np.mean(hs)) for (b, v), hs in hits_facts.items()}
            row = {"flip": flip, "epochs": epochs, "replicates": reps, "false_alarm_rate": float(np.mean(null)),
                   "power": float(np.mean(list(per_variant.values()))) if per_variant else None,
                   "power_fact_rules": float(np.mean(list(per_variant_facts.values()))) if per_variant_facts else None,
                   "per_variant": per_variant, "per_variant_fact_rules": per_variant_facts,
                   "false_alarms_by_rule": {k: v / max(1, len(null)) for k, v in why.items()}}
            rows.append(row)
            low = min(per_variant.values()) if per_variant else float("nan")
            low_f = min(per_variant_facts.values()) if per_variant_facts else float("nan")
            print(f"  {flip:>5.2f} {epochs:>6}  {100 * row['false_alarm_rate']:>11.1f}%  {100 * (row['power'] or 0):>11.1f}%  "
                  f"{100 * (row['power_fact_rules'] or 0):>17.1f}%  {100 * low:.0f}% / {100 * low_f:.0f}%")
            pv = ", ".join(f"{v.replace('recall_max', 'rmax').replace('handoff', 'hoff')} {100 * per_variant_facts[v]:.0f}%"
                           for v in per_variant_facts)
            print(f"         fact rules per field: {pv}")
            if why:
                print("         false alarms raised by: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in row["false_alarms_by_rule"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": n_samples, "effects": {f"{b}|{v}": e for (b, v), e in effects.items()},
                                               "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
