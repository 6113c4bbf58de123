"""The `compaction-eval` command line. Exit codes: 0 ok, 1 problems found or run failed,
2 unusable input or usage error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from compaction_eval.contracts.problems import ContractError

DEFAULT_TRACES = ["fixtures/traces"]
DEFAULT_LABELS = ["labels"]
DEFAULT_PROMPTS = ["prompts"]
STATE_DIR = Path(".compaction-eval")


def _keep_inspect_local() -> None:
    """inspect writes ./logs, ~/.cache/inspect_ai and ~/.local/share/inspect_ai by default,
    matplotlib ~/.config/matplotlib: keep all of it under the working directory unless the
    user chose otherwise."""
    base = STATE_DIR.resolve()
    os.environ.setdefault("INSPECT_CACHE_DIR", str(base / "inspect-cache"))
    os.environ.setdefault("XDG_DATA_HOME", str(base / "data"))
    os.environ.setdefault("XDG_CACHE_HOME", str(base / "cache"))
    os.environ.setdefault("INSPECT_LOG_DIR", str(base / "logs"))
    # matplotlib (report plots) writes its font cache under ~/.config otherwise
    os.environ.setdefault("MPLCONFIGDIR", str(base / "matplotlib"))


def _error(message: str, code: int = 2) -> int:
    print(f"compaction-eval: error: {message}", file=sys.stderr)
    return code


# ----------------------------------------------------------------------------- commands


def cmd_lint(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.lint import lint

    paths = [Path(p) for p in (args.paths or [*DEFAULT_TRACES, *DEFAULT_LABELS])]
    traces, labels, problems, skipped = lint(paths, [Path(d) for d in args.traces])
    for p in problems:
        print(p)
    for path in skipped:
        print(f"note: skipped {path}: JSON that is not a trace", file=sys.stderr)
    from compaction_eval.corpus.lint import draft_warnings

    for warning in draft_warnings(paths):
        print(warning, file=sys.stderr)
    status = f"{len(problems)} problem(s)" if problems else "ok"
    print(f"lint: {traces} trace file(s), {labels} labels file(s): {status}", file=sys.stderr)
    return 1 if problems else 0


def cmd_score(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.labels import lint_against_trace, load_labels
    from compaction_eval.corpus.load import read_trace
    from compaction_eval.recall.scoring import score_summary

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
    from compaction_eval.report.tables import format_score

    print(format_score(result))
    return 0


def _recall_config(args: argparse.Namespace):
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
        model_args=_model_args(args.model_arg),
    )


def _model_args(pairs: list[str] | None) -> dict:
    """`-M key=value` pairs as a dict (values as YAML scalars: 1 is an int, true a bool)."""
    import yaml

    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            from compaction_eval.contracts.problems import Problem

            raise ContractError([Problem("-M", "", f"expected KEY=VALUE, got {pair!r}")])
        out[key.strip()] = yaml.safe_load(value)
    return out


def _run_dir(args: argparse.Namespace) -> Path:
    name = args.run or datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(args.out) / name


def cmd_recall(args: argparse.Namespace, *, show_table: bool = False) -> int:
    from compaction_eval.recall.run import RunFailed, run_recall
    from compaction_eval.report.tables import format_leaderboard

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
    # One run directory for both suites: fix the name before the recall suite picks one.
    args.run = args.run or datetime.now().strftime("%Y%m%d-%H%M%S")
    code = cmd_recall(args, show_table=True)
    if code == 0 and not args.skip_horizon:
        from compaction_eval.cli.horizon import horizon_config, run_and_print

        code = run_and_print(horizon_config(args, in_run=True), _run_dir(args), existing=True)
    if code == 0:
        from compaction_eval.report import render_report

        print(f"report: {render_report(_run_dir(args))}")
    return code


def cmd_report(args: argparse.Namespace) -> int:
    from compaction_eval.report import render_report

    path = render_report(
        Path(args.results_dir),
        baseline=Path(args.baseline) if args.baseline else None,
        out=Path(args.out) if args.out else None,
        traces=args.traces,
        labels=args.labels,
    )
    print(path)
    return 0


def cmd_horizon(args: argparse.Namespace) -> int:
    from compaction_eval.cli.horizon import horizon_config, run_and_print

    return run_and_print(horizon_config(args), _run_dir(args), existing=False)


def cmd_import(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.importing import import_files

    written = import_files([Path(s) for s in args.src], args.from_format, Path(args.out))
    for path in written:
        print(path)
    print(f"import: {len(written)} trace(s) written to {args.out}", file=sys.stderr)
    return 0


def cmd_labels_draft(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.drafting import draft_yaml
    from compaction_eval.corpus.load import read_trace

    trace, problems = read_trace(Path(args.trace))
    if trace is None:
        raise ContractError(problems)
    if not 1 <= args.point <= len(trace.messages):
        return _error(f"{args.trace}: point {args.point} is outside the trace (1..{len(trace.messages)})")
    text = draft_yaml(trace, args.point)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"draft labels: {args.out} (edit them, then set labelled_by: human)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.load import load_corpus
    from compaction_eval.corpus.stats import corpus_table, format_corpus_table

    corpus = load_corpus(args.traces or DEFAULT_TRACES, args.labels or DEFAULT_LABELS)
    table = corpus_table(corpus)
    print(json.dumps(table, indent=1) if args.format == "json" else format_corpus_table(table))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from compaction_eval.gate.baselines import resolve_baseline
    from compaction_eval.gate.rules import (
        fact_texts,
        format_junit,
        format_markdown,
        format_text,
        gate_files,
        unusable_junit,
        unusable_markdown,
        write_outputs,
    )

    md = Path(args.markdown) if args.markdown else None
    junit = Path(args.junit) if args.junit else None
    try:
        result = gate_files(resolve_baseline(args.baseline), args.candidate, tolerance=args.tolerance,
                            category_tolerance=args.category_tolerance, allow_setting_changes=args.allow_setting_changes)
    except ContractError as exc:  # exit 2, with the reason in the files CI shows as well
        write_outputs(unusable_markdown(exc), markdown=md, junit_xml=unusable_junit(exc), junit=junit)
        raise
    from compaction_eval.contracts.runfiles import read_results

    markdown = format_markdown(result, fact_text=fact_texts(read_results(result.candidate_path)))
    print(format_text(result))
    for path in write_outputs(markdown, markdown=md, junit_xml=format_junit(result), junit=junit):
        print(f"wrote {path}", file=sys.stderr)
    return result.exit_code


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from compaction_eval.gate.baselines import save_baseline

    path = save_baseline(Path(args.run_dir), args.name, args.root)
    print(f"baseline {args.name}: {path} (commit it with the prompts it was measured on)")
    return 0


def cmd_baseline_list(args: argparse.Namespace) -> int:
    from compaction_eval.gate.baselines import list_baselines

    for path in list_baselines(args.root):
        print(path)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from compaction_eval.tune.ablation import run_tune_command

    return run_tune_command(args)


def cmd_validate_matchers(args: argparse.Namespace) -> int:
    from compaction_eval.validation.matchers import format_table, validate

    result = validate(args.gold, model=args.model)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.format == "json":
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        print(format_table(result))
        print(f"\nresult: {out}")
    controls = result.get("controls")
    return 1 if controls and controls["passed"] < controls["n"] else 0


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
    p.add_argument("--redact", action="store_true", help="replace secret-looking strings in traces before anything is sent to a model")
    p.add_argument("--batch", action="store_true", help="use the provider's batch mode (real models)")
    p.add_argument("-M", "--model-arg", action="append", metavar="KEY=VALUE", help="model argument (part of the generate-cache scope)")
    p.add_argument("--max-retries", type=int, default=4, help="retries per model call (default: 4; inspect's default is unbounded)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per model request (default: 120)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compaction-eval",
        description="What context compaction loses, measured. Exit codes: 0 ok, 1 problems found, regression or failed run, 2 unusable input.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="the main job: fact recall of every prompt, then the long-horizon suite, offline by default, with tables")
    _add_recall_args(p)
    from compaction_eval.cli.horizon import add_horizon_args

    add_horizon_args(p, in_run=True)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("horizon", help="long-horizon completion of every configuration over every world; writes results/<run>/horizon.json")
    add_horizon_args(p)
    p.set_defaults(func=cmd_horizon)

    p = sub.add_parser("recall", help="run the fact-recall suite and write results/<run>/results.json")
    _add_recall_args(p)
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("report", help="write a run's HTML report: one self-contained file, opens from file://")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a run directory (results.json, optionally horizon.json)")
    p.add_argument("--baseline", metavar="RESULTS_DIR", help="compare with this run: gate verdict, deltas with intervals, facts lost and gained")
    p.add_argument("--out", metavar="FILE", help="where to write (default: RESULTS_DIR/report.html)")
    p.add_argument("--traces", nargs="+", help="where the run's traces are, for source excerpts (default: the run's config)")
    p.add_argument("--labels", nargs="+", help="where the run's labels are, for fact text (default: the run's config)")
    p.set_defaults(func=cmd_report)

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

    p = sub.add_parser("labels", help="work on labels files (draft)")
    labels_sub = p.add_subparsers(dest="labels_command", required=True)
    q = labels_sub.add_parser("draft", help="propose candidate facts at a point, as a labels file to edit")
    q.add_argument("trace", help="a trace file (trace@1 or any importable format)")
    q.add_argument("--point", type=int, required=True, help="the compaction point: messages[0:POINT] is the history")
    q.add_argument("--out", help="write the draft here (default: standard output)")
    q.set_defaults(func=cmd_labels_draft)

    p = sub.add_parser("corpus", help="corpus statistics: traces, tokens, points, facts by category, synthetic vs real")
    p.add_argument("--traces", nargs="+", help="trace files or directories (default: fixtures/traces)")
    p.add_argument("--labels", nargs="+", help="labels files or directories (default: labels)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_corpus)

    p = sub.add_parser("gate", help="regression gate: a candidate run against the committed baseline; exit 0 pass, 1 regression, 2 unusable input")
    p.add_argument("--baseline", default="main", help="baseline name under results/baselines, a run directory or a results.json (default: main)")
    p.add_argument("--candidate", required=True, help="the candidate run directory or results.json")
    p.add_argument("--tolerance", type=float, default=0.02, help="recall drop (absolute) tolerated before the interval is looked at (default: 0.02)")
    p.add_argument("--category-tolerance", type=float, default=0.05, help="the same per fact category (default: 0.05)")
    p.add_argument("--markdown", metavar="FILE", help="write the markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML here (a test case per prompt x category)")
    p.add_argument("--allow-setting-changes", action="store_true", help="compare runs made with a different model, budget, shape or focus")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("baseline", help="committed baselines under results/baselines (save, list)")
    baseline_sub = p.add_subparsers(dest="baseline_command", required=True)
    q = baseline_sub.add_parser("save", help="bless a run: copy its results.json to results/baselines/NAME/")
    q.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by `recall` or `run`")
    q.add_argument("--name", default="main", help="baseline name (default: main)")
    q.add_argument("--root", default="results/baselines", help=argparse.SUPPRESS)
    q.set_defaults(func=cmd_baseline_save)
    q = baseline_sub.add_parser("list", help="list the baselines")
    q.add_argument("--root", default="results/baselines", help=argparse.SUPPRESS)
    q.set_defaults(func=cmd_baseline_list)

    p = sub.add_parser("tune", help="recall-first tuning: backward elimination of a prompt's fields; prints the frontier, writes the reduced prompt")
    from compaction_eval.tune.ablation import add_tune_args

    add_tune_args(p)
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("validate-matchers", help="agreement of the matchers with the human-judged gold set (labels/gold): accuracy, F1, kappa per category")
    p.add_argument("--gold", default="labels/gold", help="gold set directory (default: labels/gold)")
    p.add_argument("--model", help="also run the LLM judge with this inspect model (e.g. anthropic/claude-...); offline without it")
    p.add_argument("--out", default="results/validation/matchers.json", help="where to write the JSON result (default: results/validation/matchers.json)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_validate_matchers)
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
