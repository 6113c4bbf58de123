"""`run` (the main job), `recall` (the fact-recall suite) and `score` (one summary)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

from compaction_eval.cli.common import (
    DEFAULT_LABELS,
    DEFAULT_PROMPTS,
    DEFAULT_TRACES,
    add_recall_args,
    error,
    model_args,
    run_dir,
)
from compaction_eval.contracts.problems import ContractError


def recall_config(args: argparse.Namespace):
    """The recall suite's configuration from the command line."""
    from compaction_eval.recall.run import RecallConfig

    return RecallConfig(
        traces=args.traces or DEFAULT_TRACES,
        labels=args.labels or DEFAULT_LABELS,
        prompts=args.prompts or DEFAULT_PROMPTS,
        model=args.model,
        budget=args.budget,
        keep_last=args.keep_last,
        shape=args.shape,
        focus=args.focus,
        judge_model=args.judge_model,
        epochs=args.epochs,
        display=args.display,
        redact=args.redact,
        batch=args.batch,
        max_retries=args.max_retries,
        timeout=args.timeout,
        model_args=model_args(args.model_arg),
    )


def cmd_recall(args: argparse.Namespace, *, show_table: bool = False) -> int:
    from compaction_eval.recall.run import RunFailed, run_recall
    from compaction_eval.report.tables import format_leaderboard

    config = recall_config(args)
    out = run_dir(args)
    print(f"fact recall: model {config.model} -> {out}", file=sys.stderr)
    try:
        results = run_recall(config, out)
    except RunFailed as exc:
        return error(str(exc), 1)
    for path in results["corpus"]["skipped_files"]:
        print(f"note: skipped {path}: JSON that is not a trace", file=sys.stderr)
    if results["corpus"]["unlabelled_traces"]:
        print(f"note: {results['corpus']['unlabelled_traces']} trace(s) have no labels and were not evaluated", file=sys.stderr)
    if show_table:
        print(format_leaderboard(results))
    print(f"results: {out / 'results.json'}")
    print(f"inspect log: {out / results['inspect_log']}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from compaction_eval.cli.horizon import horizon_config, run_and_print

    # One run directory for both suites: fix the name before the recall suite picks one.
    args.run = args.run or datetime.now().strftime("%Y%m%d-%H%M%S")
    code = cmd_recall(args, show_table=True)
    if code == 0 and not args.skip_horizon:
        code = run_and_print(horizon_config(args, in_run=True), run_dir(args), existing=True)
    if code == 0 and not args.skip_replay:
        code = _small_replay(args)
    if code == 0:
        from compaction_eval.report.render import render_report

        print(f"report: {render_report(run_dir(args))}")
    return code


def _small_replay(args: argparse.Namespace) -> int:
    """The small replay + decay configuration of the main job (see replay.run.run_small)."""
    from compaction_eval.replay.run import run_small

    print("replay and decay: a small configuration (2 traces, 3 policies, 5 compactions)", file=sys.stderr)
    run_small(run_dir(args), traces=args.traces or DEFAULT_TRACES, labels=args.labels or DEFAULT_LABELS,
              prompts=args.prompts or DEFAULT_PROMPTS, model=args.model)
    print(f"replay results: {run_dir(args) / 'replay.json'}")
    print(f"decay results: {run_dir(args) / 'decay.json'}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.labels import lint_against_trace, load_labels
    from compaction_eval.corpus.load import read_trace
    from compaction_eval.recall.scoring import score_summary

    trace, problems = read_trace(Path(args.trace))
    if trace is None:
        raise ContractError(problems)
    labels = load_labels(args.labels)
    if labels.trace != trace.id:
        return error(f"{args.labels}: labels trace {labels.trace!r} but {args.trace} is trace {trace.id!r}")
    problems = lint_against_trace(labels, trace)
    if problems:
        raise ContractError(problems)
    if not 1 <= args.point <= len(trace.messages):
        return error(f"--point {args.point} is outside {args.trace} ({len(trace.messages)} messages)")
    try:
        summary = sys.stdin.read() if args.summary == "-" else Path(args.summary).read_text(encoding="utf-8")
    except FileNotFoundError:
        return error(f"{args.summary}: file not found")
    result = score_summary(summary, labels, trace, args.point)
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
        return 0
    from compaction_eval.report.tables import format_score

    print(format_score(result))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from compaction_eval.cli.horizon import add_horizon_args

    p = sub.add_parser("run", help="the main job: fact recall of every prompt, then the long-horizon suite, offline by default, with tables")
    add_recall_args(p)
    add_horizon_args(p, in_run=True)
    p.add_argument("--skip-replay", action="store_true", help="skip the small replay and decay configuration")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("recall", help="run the fact-recall suite and write results/<run>/results.json")
    add_recall_args(p)
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("score", help="score one summary against a trace's labels")
    p.add_argument("--labels", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--summary", required=True, help="summary file, or - for standard input")
    p.add_argument("--point", type=int, required=True, help="the compaction point the summary was written at")
    p.add_argument("--format", choices=["json", "text"], default="text")
    p.set_defaults(func=cmd_score)
