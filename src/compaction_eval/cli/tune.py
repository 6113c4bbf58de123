"""`compaction-eval tune PROMPT`: recall-first field ablation, or with `--optimize` the
failure-driven optimisation loop (tune/ablation.py, tune/optimize.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compaction_eval.cli.common import compaction_settings
from compaction_eval.contracts.paths import TUNE_CORPUS
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_MODEL, DEFAULT_SHAPE, SHAPES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="recall-first tuning: backward elimination of a prompt's fields (or --optimize: failure-driven "
                                    "revisions accepted only when the held-out gate passes)")
    add_tune_args(p)
    p.set_defaults(func=run_tune_command)


def add_tune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", metavar="PROMPT", help="a prompt file declaring schema fields (e.g. prompts/recall_max.j2)")
    p.add_argument("--suite", choices=["recall", "horizon", "both"], default="recall", help="what to measure (default: recall)")
    p.add_argument("--tolerance", type=float, default=0.02, help="drop from the best recall/completion tolerated at the stop (default: 0.02)")
    p.add_argument("--out", metavar="FILE", help="the reduced (or optimised) prompt file (default: next to PROMPT, <name>-tuned.j2 / <name>-optimized.j2)")
    p.add_argument("--traces", nargs="+", help="trace files or directories (default: fixtures/traces)")
    p.add_argument("--labels", nargs="+", help="labels files or directories (default: labels)")
    p.add_argument("--model", default=DEFAULT_MODEL, help="compaction model (default: the offline extractive summariser)")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"summary budget in tokens (default: {DEFAULT_BUDGET})")
    p.add_argument("--shape", choices=SHAPES, default=DEFAULT_SHAPE, help=f"how the conversation is sent (default: {DEFAULT_SHAPE})")
    p.add_argument("--worlds", nargs="+", help="long-horizon worlds (default: all)")
    p.add_argument("--agent", default="scripted/default", help="long-horizon agent (default: the offline scripted agent)")
    p.add_argument("--work-dir", help="keep the per-round runs here (default: a temporary directory)")
    p.add_argument("--results", metavar="RUN_DIR", help="also write RUN_DIR/tune.json or RUN_DIR/optimize.json (the report shows it)")
    p.add_argument("--min-fields", type=int, default=1, help="stop eliminating at this many fields (default: 1)")
    g = p.add_argument_group("optimisation (--optimize)")
    g.add_argument("--optimize", action="store_true", help="failure-driven optimisation instead of field ablation")
    g.add_argument("--optimiser", help="the model proposing revisions (default: --model when it is a real model, else the "
                                       "offline stand-in suggest/default, which applies `suggest`'s edits)")
    g.add_argument("--rounds", type=int, default=3, help="proposals to try at most (default: 3)")
    g.add_argument("--others", nargs="+", default=[], help="other prompts run alongside, so the optimiser sees where they kept a fact this one lost")
    g.add_argument("--category-tolerance", type=float, default=0.05, help="the held-out gate's category tolerance (default: 0.05)")
    g.add_argument("--max-retries", type=int, default=4, help="retries of real model calls (default: 4)")
    g.add_argument("--timeout", type=int, default=120, help="seconds per real model call (default: 120)")


def run_tune_command(args: argparse.Namespace) -> int:

    if args.optimize:
        return _optimize(args)
    from compaction_eval.tune.ablation import (
        TUNE_FILE,
        TuneConfig,
        format_frontier,
        tune,
    )

    config = TuneConfig(
        prompt=args.prompt, suite=args.suite, tolerance=args.tolerance, traces=args.traces or list(TUNE_CORPUS["traces"]),
        labels=args.labels or list(TUNE_CORPUS["labels"]), model=args.model, compaction=compaction_settings(args), worlds=args.worlds,
        agent=args.agent, work_dir=args.work_dir, min_fields=args.min_fields,
    )
    result = tune(config, out_prompt=Path(args.out) if args.out else None, log=lambda m: print(m, file=sys.stderr))
    print(format_frontier(result))
    _write_result(args.results, TUNE_FILE, result.to_json(), "tune results")
    return 0


def _optimize(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.settings import is_stand_in
    from compaction_eval.tune.optimize import (
        OPTIMIZE_FILE,
        STANDIN_OPTIMISER,
        OptimizeConfig,
        format_history,
        optimize,
    )

    optimiser = args.optimiser or (STANDIN_OPTIMISER if is_stand_in(args.model) else args.model)
    config = OptimizeConfig(
        prompt=args.prompt, optimiser=optimiser, rounds=args.rounds, traces=args.traces or list(TUNE_CORPUS["traces"]),
        labels=args.labels or list(TUNE_CORPUS["labels"]), model=args.model, compaction=compaction_settings(args), others=args.others,
        tolerance=args.tolerance, category_tolerance=args.category_tolerance, work_dir=args.work_dir,
        max_retries=args.max_retries, timeout=args.timeout,
    )
    result = optimize(config, out_prompt=Path(args.out) if args.out else None, log=lambda m: print(m, file=sys.stderr))
    print(format_history(result))
    _write_result(args.results, OPTIMIZE_FILE, result.to_json(), "optimisation history")
    return 0


def _write_result(run_dir: str | None, name: str, data: dict, what: str) -> None:
    """`--results RUN_DIR`: the file beside the run's results.json (the report shows it)."""
    if not run_dir:
        return
    from compaction_eval.contracts.runfiles import write_json_atomic

    write_json_atomic(Path(run_dir) / name, data)
    print(f"{what}: {Path(run_dir) / name}")
