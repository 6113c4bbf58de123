"""`compaction-eval tune PROMPT`: recall-first field ablation, or with `--optimize` the
failure-driven optimisation loop (tune/ablation.py, tune/optimize.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compaction_eval.cli.common import DEFAULT_LABELS, DEFAULT_TRACES, add_agent_model_arg, add_model_args, compaction_settings, share, whole
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_SHAPE, SHAPES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="recall-first tuning: backward elimination of a prompt's fields (or --optimize: failure-driven "
                                    "revisions accepted only when the held-out gate passes)")
    add_tune_args(p)
    p.set_defaults(func=run_tune_command)


def add_tune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", metavar="PROMPT", help="a prompt file declaring schema fields (e.g. prompts/recall_max.j2)")
    p.add_argument("--suite", choices=["recall", "horizon", "both"], default="recall", help="what to measure (default: recall)")
    p.add_argument("--tolerance", type=share, default=0.02, help="drop from the best recall/completion tolerated at the stop (default: 0.02)")
    p.add_argument("--out", metavar="FILE", help="the reduced (or optimised) prompt file (default: next to PROMPT, <name>-tuned.j2 / <name>-optimized.j2)")
    p.add_argument("--traces", nargs="+", help=f"trace files or directories (default: with --results, the run's; else {' '.join(DEFAULT_TRACES)})")
    p.add_argument("--labels", nargs="+", help=f"labels files or directories (default: with --results, the run's; else {' '.join(DEFAULT_LABELS)})")
    add_model_args(p)
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"summary budget in tokens (default: {DEFAULT_BUDGET})")
    p.add_argument("--shape", choices=SHAPES, default=DEFAULT_SHAPE, help=f"how the conversation is sent (default: {DEFAULT_SHAPE})")
    p.add_argument("--worlds", nargs="+", help="long-horizon worlds (default: all)")
    add_agent_model_arg(p)
    p.add_argument("--work-dir", help="keep the per-round runs here (default: a temporary directory)")
    p.add_argument("--results", metavar="RUN_DIR", help="also write RUN_DIR/tune.json or RUN_DIR/optimize.json (the report shows it)")
    p.add_argument("--min-fields", type=whole(0), default=1, help="stop eliminating at this many fields (default: 1)")
    p.add_argument("--force", action="store_true", help="replace an existing tune.json/optimize.json or output prompt file")
    from compaction_eval.cli.progress import add_format_arg

    add_format_arg(p)
    g = p.add_argument_group("optimisation (--optimize)")
    g.add_argument("--optimize", action="store_true", help="failure-driven optimisation instead of field ablation")
    g.add_argument("--optimiser", help="the model proposing revisions (default: --model when it is a real model, else the "
                                       "offline stand-in suggest/default, which applies `suggest`'s edits)")
    g.add_argument("--rounds", type=whole(1), default=3, help="proposals to try at most (default: 3)")
    g.add_argument("--others", nargs="+", default=[], help="other prompts run alongside, so the optimiser sees where they kept a fact this one lost")
    g.add_argument("--category-tolerance", type=share, default=0.05, help="the held-out gate's category tolerance (default: 0.05)")
    g.add_argument("--max-retries", type=whole(0), default=4, help="retries of real model calls (default: 4)")
    g.add_argument("--timeout", type=whole(1), default=120, help="seconds per real model call (default: 120)")


def run_tune_command(args: argparse.Namespace) -> int:
    if args.optimize:
        return _optimize(args)
    from compaction_eval.tune.ablation import (
        TUNE_FILE,
        TuneConfig,
        format_frontier,
        tune,
    )

    _refuse_overwrite(args, TUNE_FILE, None)
    traces, labels = corpus_of(args)
    config = TuneConfig(
        prompt=args.prompt, suite=args.suite, tolerance=args.tolerance, traces=traces, labels=labels, model=args.model,
        compaction=compaction_settings(args), worlds=args.worlds, agent=args.agent, work_dir=args.work_dir, min_fields=args.min_fields,
    )
    result = tune(config, out_prompt=Path(args.out) if args.out else None, log=lambda m: print(m, file=sys.stderr))
    written = _write_result(args, TUNE_FILE, result.to_json(), "tune results")
    _emit(args, "tune", result.to_json(), written, lambda: format_frontier(result))
    return 0


def corpus_of(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The corpus a tune runs on: `--traces`/`--labels` when given, else the corpus of the
    `--results` run (as it recorded it: that run's numbers are the ones being improved), else
    the default corpus every command shares (`contracts.paths.DEFAULTS`)."""
    traces, labels = args.traces, args.labels
    if args.results and not (traces and labels):
        from compaction_eval.contracts.runfiles import RESULTS_FILE, read_results

        if (Path(args.results) / RESULTS_FILE).exists():
            config = read_results(args.results).get("config") or {}
            traces = traces or [str(t) for t in config.get("traces") or []] or None
            labels = labels or [str(t) for t in config.get("labels") or []] or None
    return list(traces or DEFAULT_TRACES), list(labels or DEFAULT_LABELS)


def _refuse_overwrite(args: argparse.Namespace, name: str, default_prompt: Path | None) -> None:
    """Before anything runs: an existing result file or output prompt is replaced only with
    --force (an optimisation history or a hand-edited prompt is not lost to a rerun)."""
    if args.force:
        return
    targets = [Path(args.results) / name] if args.results else []
    targets += [Path(args.out)] if args.out else ([default_prompt] if default_prompt is not None else [])
    for target in targets:
        if target.exists():
            raise ContractError([Problem(str(target), "", "already exists: pass --force to replace it (or --out/--results elsewhere)")])


def _emit(args: argparse.Namespace, command: str, doc: dict, written: list[str], text) -> None:
    if args.format == "json":
        from compaction_eval.cli.progress import emit_json

        emit_json({"command": command, **doc, "files": written})
    else:
        print(text())


def _optimize(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.prompts import load_candidate
    from compaction_eval.contracts.settings import is_stand_in
    from compaction_eval.tune.optimize import (
        OPTIMIZE_FILE,
        STANDIN_OPTIMISER,
        OptimizeConfig,
        format_history,
        optimize,
    )

    candidate = load_candidate(args.prompt)
    _refuse_overwrite(args, OPTIMIZE_FILE, candidate.path.with_name(f"{candidate.name}-optimized.j2"))
    traces, labels = corpus_of(args)
    optimiser = args.optimiser or (STANDIN_OPTIMISER if is_stand_in(args.model) else args.model)
    config = OptimizeConfig(
        prompt=args.prompt, optimiser=optimiser, rounds=args.rounds, traces=traces, labels=labels, model=args.model,
        compaction=compaction_settings(args), others=args.others, tolerance=args.tolerance, category_tolerance=args.category_tolerance,
        work_dir=args.work_dir, max_retries=args.max_retries, timeout=args.timeout,
    )
    result = optimize(config, out_prompt=Path(args.out) if args.out else None, log=lambda m: print(m, file=sys.stderr))
    written = _write_result(args, OPTIMIZE_FILE, result.to_json(), "optimisation history")
    _emit(args, "tune --optimize", result.to_json(), written + ([result.out_prompt] if result.out_prompt else []),
          lambda: format_history(result))
    return 0


def _write_result(args: argparse.Namespace, name: str, data: dict, what: str) -> list[str]:
    """`--results RUN_DIR`: the file beside the run's results.json (the report shows it)."""
    if not args.results:
        return []
    from compaction_eval.contracts.runfiles import write_json_atomic

    target = Path(args.results) / name
    write_json_atomic(target, data)
    print(f"{what}: {target}", file=sys.stderr if args.format == "json" else sys.stdout)
    return [str(target)]
