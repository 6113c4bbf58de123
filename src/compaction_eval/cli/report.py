"""`report`: a run's self-contained HTML report."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_report(args: argparse.Namespace) -> int:
    from compaction_eval.gate.baselines import resolve_baseline
    from compaction_eval.gate.compare import parse_pairs
    from compaction_eval.report.render import render_report

    path = render_report(
        Path(args.results_dir),
        baseline=resolve_baseline(args.baseline) if args.baseline else None,
        out=Path(args.out) if args.out else None,
        traces=args.traces,
        labels=args.labels,
        allow_setting_changes=args.allow_setting_changes,
        history=Path(args.history) if args.history else None,
        pairs=parse_pairs(args.pair),
        allow_new=args.allow_new,
    )
    print(path)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a run's HTML report: one self-contained file, opens from file://")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a run directory (results.json, optionally horizon.json)")
    p.add_argument("--baseline", metavar="NAME_OR_DIR", help="compare with this run (a baseline name under results/baselines, as `gate --baseline main`, or a run directory): gate verdict, deltas with intervals, facts lost and gained")
    from compaction_eval.cli.gate import add_pair_args

    add_pair_args(p)
    p.add_argument("--out", metavar="FILE", help="where to write (default: RESULTS_DIR/report.html)")
    p.add_argument("--traces", nargs="+", help="where the run's traces are, for source excerpts (default: the run's config)")
    p.add_argument("--labels", nargs="+", help="where the run's labels are, for fact text (default: the run's config)")
    p.add_argument("--allow-setting-changes", action="store_true", help="compare with a baseline made with other settings (as `gate --allow-setting-changes`)")
    p.add_argument("--history", metavar="DB", help="a run history database (`history add`): adds the \"over time\" section")
    p.set_defaults(func=cmd_report)
