"""The `compaction-eval` command line. Exit codes: 0 ok, 1 problems found or run failed,
2 unusable input or usage error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from .problems import ContractError

DEFAULT_TRACES = ["fixtures/traces"]
DEFAULT_LABELS = ["labels"]
DEFAULT_PROMPTS = ["prompts"]
STATE_DIR = Path(".compaction-eval")


def _keep_inspect_local() -> None:
    """inspect writes ./logs, ~/.cache/inspect_ai and ~/.local/share/inspect_ai by default:
    keep all of it under the working directory unless the user chose otherwise."""
    base = STATE_DIR.resolve()
    os.environ.setdefault("INSPECT_CACHE_DIR", str(base / "inspect-cache"))
    os.environ.setdefault("XDG_DATA_HOME", str(base / "data"))
    os.environ.setdefault("XDG_CACHE_HOME", str(base / "cache"))
    os.environ.setdefault("INSPECT_LOG_DIR", str(base / "logs"))


def _error(message: str, code: int = 2) -> int:
    print(f"compaction-eval: error: {message}", file=sys.stderr)
    return code


# ----------------------------------------------------------------------------- commands


def cmd_lint(args: argparse.Namespace) -> int:
    from .lint import lint

    paths = [Path(p) for p in (args.paths or [*DEFAULT_TRACES, *DEFAULT_LABELS])]
    traces, labels, problems, skipped = lint(paths, [Path(d) for d in args.traces])
    for p in problems:
        print(p)
    for path in skipped:
        print(f"note: skipped {path}: JSON that is not a trace", file=sys.stderr)
    status = f"{len(problems)} problem(s)" if problems else "ok"
    print(f"lint: {traces} trace file(s), {labels} labels file(s): {status}", file=sys.stderr)
    return 1 if problems else 0


def cmd_score(args: argparse.Namespace) -> int:
    from .corpus import read_trace
    from .labels import lint_against_trace, load_labels
    from .scoring import score_summary

    trace, problems = read_trace(Path(args.trace))
    if trace is None:
        raise ContractError(problems)
    labels = load_labels(args.labels)
    if labels.trace != trace.id:
        return _error(f"{args.labels}: labels trace {labels.trace!r} but {args.trace} is trace {trace.id!r}")
    problems = lint_against_trace(labels, trace)
    if problems:
        raise ContractError(problems)
    if not 1 <= args.point <= len(trace.messages):
        return _error(f"--point {args.point} is outside {args.trace} ({len(trace.messages)} messages)")
    try:
        summary = sys.stdin.read() if args.summary == "-" else Path(args.summary).read_text(encoding="utf-8")
    except FileNotFoundError:
        return _error(f"{args.summary}: file not found")
    result = score_summary(summary, labels, trace, args.point)
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
        return 0
    from .tables import format_score

    print(format_score(result))
    return 0


def _recall_config(args: argparse.Namespace):
    from .run_recall import RecallConfig

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
    )


def _run_dir(args: argparse.Namespace) -> Path:
    name = args.run or datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(args.out) / name


def cmd_recall(args: argparse.Namespace, *, show_table: bool = False) -> int:
    from .run_recall import RunFailed, run_recall
    from .tables import format_leaderboard

    config = _recall_config(args)
    out = _run_dir(args)
    print(f"fact recall: model {config.model} -> {out}", file=sys.stderr)
    try:
        results = run_recall(config, out)
    except RunFailed as exc:
        return _error(str(exc), 1)
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
    return cmd_recall(args, show_table=True)


def cmd_import(args: argparse.Namespace) -> int:
    from .importing import import_files

    written = import_files([Path(s) for s in args.src], args.from_format, Path(args.out))
    for path in written:
        print(path)
    print(f"import: {len(written)} trace(s) written to {args.out}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------- parser


def _add_recall_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", nargs="+", help="trace files or directories (default: fixtures/traces)")
    p.add_argument("--labels", nargs="+", help="labels files or directories (default: labels)")
    p.add_argument("--prompts", nargs="+", help="prompt templates or directories (default: prompts)")
    p.add_argument("--model", default="extractive/default", help="compaction model (default: the offline extractive summariser)")
    p.add_argument("--judge-model", help="LLM judge for meaning categories (optional)")
    p.add_argument("--budget", type=int, default=800, help="summary budget in tokens (default: 800)")
    p.add_argument("--keep-last", type=int, default=4, help="messages kept verbatim at the end (default: 4)")
    p.add_argument("--shape", choices=["inline", "messages"], default="inline", help="span in the prompt, or as messages with the instruction last")
    p.add_argument("--focus", help="focus instruction passed to every prompt")
    p.add_argument("--epochs", type=int, default=1, help="repeats per sample (real models)")
    p.add_argument("--out", default="results", help="parent directory of run directories (default: results)")
    p.add_argument("--run", help="run name (default: a timestamp)")
    p.add_argument("--display", default="plain", choices=["none", "plain", "rich", "full", "conversation"], help="inspect progress display")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compaction-eval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="the main job: fact recall of every prompt, offline by default, with a table")
    _add_recall_args(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("recall", help="run the fact-recall suite and write results/<run>/results.json")
    _add_recall_args(p)
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("score", help="score one summary against a trace's labels")
    p.add_argument("--labels", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--summary", required=True, help="summary file, or - for standard input")
    p.add_argument("--point", type=int, required=True, help="the compaction point the summary was written at")
    p.add_argument("--format", choices=["json", "text"], default="text")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("lint", help="check traces and labels; every problem with file and place")
    p.add_argument("paths", nargs="*", help="files or directories (default: fixtures/traces labels)")
    p.add_argument("--traces", nargs="*", default=DEFAULT_TRACES, help="where the traces of linted labels live")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("import", help="convert traces from other formats into trace@1 files")
    p.add_argument("src", nargs="+")
    p.add_argument("--from", dest="from_format", help="source format (default: detected)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_import)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _keep_inspect_local()
    try:
        return args.func(args)
    except ContractError as exc:
        code = _error(str(exc))
        for problem in exc.problems[1:]:
            print(f"  {problem}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    except Exception as exc:  # a model that cannot be built, a provider refusing: one line
        if os.environ.get("COMPACTION_EVAL_DEBUG"):
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return _error(f"{type(exc).__name__}: {message} (set COMPACTION_EVAL_DEBUG=1 for the traceback)", 1)


if __name__ == "__main__":
    sys.exit(main())
