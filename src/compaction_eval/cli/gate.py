"""`gate` (a candidate run against a committed baseline) and `baseline save|list`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compaction_eval.cli.common import share, whole
from compaction_eval.contracts.problems import ContractError


def cmd_gate(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.runfiles import read_results
    from compaction_eval.gate.baselines import resolve_baseline
    from compaction_eval.gate.compare import parse_pairs
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
                            category_tolerance=args.category_tolerance, allow_setting_changes=args.allow_setting_changes,
                            pairs=parse_pairs(args.pair), allow_new=args.allow_new)
    except ContractError as exc:  # exit 2, with the reason in the files CI shows as well
        write_outputs(unusable_markdown(exc), markdown=md, junit_xml=unusable_junit(exc), junit=junit)
        raise
    decay = _decay_verdicts(args, result) if args.decay else None
    markdown = format_markdown(result, fact_text=fact_texts(read_results(result.candidate_path)))
    written = write_outputs(markdown, markdown=md, junit_xml=format_junit(result), junit=junit)
    if args.format == "json":
        from compaction_eval.cli.progress import emit_json

        emit_json({"command": "gate", "verdict": result.verdict, "exit_code": result.exit_code, "reasons": result.reasons,
                   "warnings": result.warnings, "baseline": result.baseline_path, "candidate": result.candidate_path,
                   "baseline_meta": result.baseline_meta, "candidate_meta": result.candidate_meta,
                   "comparison": result.comparison.to_json(), "files": [str(p) for p in written]})
    else:
        print(format_text(result))
    if decay is not None:
        from compaction_eval.gate.decay import decay_regressed, format_decay_verdicts

        print(format_decay_verdicts(decay), file=sys.stderr if args.format == "json" else sys.stdout)
        if decay_regressed(decay) and result.exit_code == 0:
            return 1
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return result.exit_code


def _decay_verdicts(args: argparse.Namespace, result) -> list:
    """`--decay`: survival after k compactions compared like recall (decay.json beside each
    run's results.json; a run without one is unusable input)."""
    from compaction_eval.gate.decay import compare_decay, read_decay

    runs = [Path(p) for p in (result.baseline_path, result.candidate_path)]
    data = [read_decay(p if p.is_dir() else p.parent) for p in runs]
    return compare_decay(data[0], data[1], k=args.decay_k, tolerance=args.tolerance)


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from compaction_eval.gate.baselines import save_baseline

    path = save_baseline(Path(args.run_dir), args.name, args.root, force=args.force)
    print(f"baseline {args.name}: {path} (commit it with the prompts it was measured on)")
    return 0


def cmd_baseline_list(args: argparse.Namespace) -> int:
    from compaction_eval.gate.baselines import list_baselines

    paths = list_baselines(args.root)
    if args.format == "json":
        from compaction_eval.cli.progress import emit_json

        emit_json({"command": "baseline list", "baselines": [{"name": p.name, "path": str(p)} for p in paths]})
        return 0
    for path in paths:
        print(path)
    return 0


def add_pair_args(p: argparse.ArgumentParser) -> None:
    """`--pair` and `--allow-new`, shared by `gate` and `report --baseline`."""
    p.add_argument("--pair", action="append", metavar="CANDIDATE=BASELINE",
                   help="compare candidate prompt CANDIDATE with the baseline's prompt BASELINE (e.g. mine=handoff); repeatable")
    p.add_argument("--allow-new", action="store_true",
                   help="a candidate prompt with no baseline partner is a warning (without it, it fails the gate: exit 1)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="regression gate: a candidate run against the committed baseline; exit 0 pass, 1 regression, 2 unusable input")
    p.add_argument("--baseline", default="main", help="baseline name under results/baselines, a run directory or a results.json (default: main)")
    p.add_argument("--candidate", required=True, help="the candidate run directory or results.json")
    add_pair_args(p)
    p.add_argument("--tolerance", type=share, default=0.02, help="recall drop (absolute) tolerated before the interval is looked at (default: 0.02)")
    p.add_argument("--category-tolerance", type=share, default=0.05, help="the same per fact category (default: 0.05)")
    p.add_argument("--markdown", metavar="FILE", help="write the markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML here (a test case per prompt x category)")
    p.add_argument("--allow-setting-changes", action="store_true", help="compare runs made with a different model, budget, shape or focus")
    p.add_argument("--decay", action="store_true", help="also compare decay.json (survival after k compactions, paired by trace); a drop beyond --tolerance whose interval excludes zero fails")
    p.add_argument("--decay-k", type=whole(1), help="compare survival after this many compactions (default: the largest k both runs reached)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="the verdict as text, or one JSON document on stdout")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("baseline", help="committed baselines under results/baselines (save, list)")
    baseline_sub = p.add_subparsers(dest="baseline_command", required=True)
    q = baseline_sub.add_parser("save", help="bless a run: copy its results.json to results/baselines/NAME/")
    q.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by `recall` or `run`")
    q.add_argument("--name", default="main", help="baseline name (default: main)")
    q.add_argument("--force", action="store_true", help="replace an existing baseline of that name")
    q.add_argument("--root", default="results/baselines", help=argparse.SUPPRESS)
    q.set_defaults(func=cmd_baseline_save)
    q = baseline_sub.add_parser("list", help="list the baselines")
    q.add_argument("--root", default="results/baselines", help=argparse.SUPPRESS)
    from compaction_eval.cli.progress import add_format_arg

    add_format_arg(q)
    q.set_defaults(func=cmd_baseline_list)
