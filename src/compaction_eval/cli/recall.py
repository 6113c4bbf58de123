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
    compaction_settings,
    error,
    model_args,
    run_dir,
    whole,
)
from compaction_eval.cli.progress import (
    emit_json,
    inspect_display,
    progress,
    wants_json,
    without_samples,
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
        compaction=compaction_settings(args),
        judge_model=args.judge_model,
        epochs=args.epochs,
        display=inspect_display(args),
        redact=args.redact,
        batch=args.batch,
        max_retries=args.max_retries,
        timeout=args.timeout,
        model_args=model_args(args.model_arg),
        points=list(getattr(args, "points", None) or []),
    )


def recall_json(results: dict, out: Path) -> dict:
    """The leaderboard as JSON: one row per prompt (samples stay in results.json)."""
    keep = ("model", "offline_stand_in", "stand_in_note", "corpus")
    return {**{k: results.get(k) for k in keep}, "prompts": without_samples(results["prompts"]),
            "files": {"results": str(out / "results.json"), "inspect_log": str(out / results["inspect_log"]) if results.get("inspect_log") else None}}


def run_recall_suite(args: argparse.Namespace, out: Path, bar=None) -> dict:
    """The recall suite with progress on stderr and its notes; raises RunFailed."""
    import contextlib

    from compaction_eval.recall.run import run_recall

    config = recall_config(args)
    if not args.quiet:
        print(f"fact recall: model {config.model} -> {out}", file=sys.stderr)
    with (contextlib.nullcontext(bar) if bar is not None else progress(args)) as bar:

        def planned(samples: int) -> None:  # the suite's size, known once its inputs are checked
            bar.expect(samples, task="fact_recall")
            bar.set_phase("fact recall")

        # the leaderboard and the files are all a command prints: the samples stay on disk
        results = run_recall(config, out, on_plan=planned, with_samples=False)
    for path in results["corpus"]["skipped_files"]:
        print(f"note: skipped {path}: JSON that is not a trace", file=sys.stderr)
    # the default corpus leaves most real traces unlabelled on purpose (labels/real#2): say it
    # only of a corpus the user chose
    if results["corpus"]["unlabelled_traces"] and (args.traces or args.labels):
        print(f"note: {results['corpus']['unlabelled_traces']} trace(s) have no labels and were not evaluated", file=sys.stderr)
    return results


def cmd_recall(args: argparse.Namespace) -> int:
    from compaction_eval.recall.run import RunFailed
    from compaction_eval.report.tables import format_leaderboard

    out = run_dir(args)
    try:
        results = run_recall_suite(args, out)
    except RunFailed as exc:
        return error(str(exc), 1)
    if wants_json(args):
        emit_json({"command": "recall", **recall_json(results, out)})
        return 0
    print(format_leaderboard(results))
    print(f"results: {out / 'results.json'}")
    print(f"inspect log: {out / results['inspect_log']}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Both suites, the small replay and the report under one progress bar; the tables (or
    one JSON document) on stdout at the end."""
    from compaction_eval.cli.horizon import horizon_config, horizon_json, run_horizon_suite
    from compaction_eval.cli.session import apply_recorded_run
    from compaction_eval.horizon.runner import HorizonFailed
    from compaction_eval.recall.run import RunFailed

    apply_recorded_run(args)
    # One run directory for both suites: fix the name before the recall suite picks one.
    args.run = args.run or datetime.now().strftime("%Y%m%d-%H%M%S")
    out = run_dir(args)
    hconfig = None if args.skip_horizon else horizon_config(args, in_run=True)  # bad options fail before anything runs
    doc: dict = {"command": "run", "run_dir": str(out), "files": {}}
    texts: list[str] = []
    with progress(args) as bar:
        if hconfig is not None:
            from compaction_eval.horizon.worlds import world_ids

            # known before anything runs: the ETA covers the whole run from the start
            bar.expect(len(hconfig.configs) * len(hconfig.worlds or world_ids()), task="long_horizon")
        if not args.skip_replay:
            bar.expect(1, task="replay")
        try:
            recall = run_recall_suite(args, out, bar)
        except RunFailed as exc:
            return error(str(exc), 1)
        from compaction_eval.report.tables import format_leaderboard

        doc["recall"] = recall_json(recall, out)
        texts += [format_leaderboard(recall), f"results: {out / 'results.json'}", f"inspect log: {out / recall['inspect_log']}"]
        if hconfig is not None:
            from compaction_eval.report.horizon_table import format_horizon

            try:
                horizon = run_horizon_suite(hconfig, out, args, existing=True, bar=bar)
            except HorizonFailed as exc:
                return error(str(exc), 1)
            doc["horizon"] = horizon_json(horizon, out)
            texts += [format_horizon(horizon), f"horizon results: {out / 'horizon.json'}"]
        if not args.skip_replay:
            bar.set_phase("replay and decay")
            small = _small_replay(args)
            bar.advance()
            doc["replay"] = {"policies": without_samples(small["replay"]["policies"], ("samples", "traces"))}
            doc["decay"] = {"prompts": without_samples(small["decay"]["prompts"])}
            texts += [f"replay results: {out / 'replay.json'}", f"decay results: {out / 'decay.json'}"]
        bar.set_phase("report")
        from compaction_eval.report.render import render_report

        report = render_report(out)
    doc["files"] = {"results": str(out / "results.json"), **({"horizon": str(out / "horizon.json")} if hconfig else {}),
                    **({"replay": str(out / "replay.json"), "decay": str(out / "decay.json")} if not args.skip_replay else {}),
                    "report": str(report)}
    if wants_json(args):
        emit_json(doc)
    else:
        print("\n".join([*texts, f"report: {report}"]))
    return 0


def _small_replay(args: argparse.Namespace) -> dict:
    """The small replay + decay configuration of the main job (see replay.run.run_small)."""
    from compaction_eval.replay.run import run_small

    small = run_small(run_dir(args), traces=args.traces or DEFAULT_TRACES, labels=args.labels or DEFAULT_LABELS,
                      prompts=args.prompts or DEFAULT_PROMPTS, model=args.model)
    if not args.quiet:  # the traces it used, not the configuration's upper bound
        print(f"replay and decay: a small configuration ({len(small['replay']['traces'])} trace(s), 3 policies, 5 compactions)", file=sys.stderr)
    return small


def cmd_score(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.labels import lint_against_trace, load_labels
    from compaction_eval.contracts.runfiles import read_text_input
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
    summary = sys.stdin.read() if args.summary == "-" else read_text_input(args.summary)
    result = score_summary(summary, labels, trace, args.point)
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
        return 0
    from compaction_eval.report.tables import format_score

    print(format_score(result))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from compaction_eval.cli.horizon import add_horizon_args
    from compaction_eval.cli.session import add_recorded_flag

    p = sub.add_parser("run", help="the main job: fact recall of every prompt, then the long-horizon suite, offline by default, with tables")
    add_recall_args(p)
    add_horizon_args(p, in_run=True)
    p.add_argument("--skip-replay", action="store_true", help="skip the small replay and decay configuration")
    add_recorded_flag(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("recall", help="run the fact-recall suite and write results/<run>/results.json")
    add_recall_args(p)
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("score", help="score one summary against a trace's labels")
    p.add_argument("--labels", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--summary", required=True, help="summary file, or - for standard input")
    p.add_argument("--point", type=whole(0), required=True, help="the compaction point the summary was written at")
    p.add_argument("--format", choices=["json", "text"], default="text")
    p.set_defaults(func=cmd_score)
