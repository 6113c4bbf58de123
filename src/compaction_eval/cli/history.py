"""`history add | show | check`: nightly runs in one SQLite file, their trends, the drift alarm;
and `--history DB` on every command that writes a run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from compaction_eval.cli.common import run_dir, whole

# the commands that write a run directory, and so take `--history DB`
WRITERS = ("run", "recall", "horizon", "replay", "decay", "probes")
HISTORY_HELP = "after the run succeeds, add it to this history database (created when missing; see `history`)"


def add_history_flag(sub: argparse._SubParsersAction) -> None:
    """`--history DB` on every command of WRITERS: one definition for all of them."""
    for name in WRITERS:
        parser = sub.choices.get(name)
        if parser is not None:
            parser.add_argument("--history", metavar="DB", help=HISTORY_HELP)


def record_history(args: argparse.Namespace) -> None:
    """Index the run just written when the command was given `--history DB`."""
    db = getattr(args, "history", None)
    if not db or args.command not in WRITERS:
        return
    from compaction_eval.history.store import add_run, open_store

    with open_store(Path(db), create=True) as conn:
        _, new = add_run(conn, Path(args.into) if getattr(args, "into", None) else run_dir(args))
    print(f"history: {'added to' if new else 'already in'} {db}", file=sys.stderr)


def cmd_add(args: argparse.Namespace) -> int:
    from compaction_eval.history.store import add_run, open_store, read_run_files

    # every run is read before the database is touched: one bad run adds nothing
    read = [(Path(d), read_run_files(Path(d))) for d in args.runs]
    added = 0
    with open_store(Path(args.db), create=True) as conn:
        for d, docs in read:  # one transaction for all of them (open_store commits once)
            added += add_run(conn, d, docs)[1]
    print(f"{added} run(s) added, {len(args.runs) - added} already there: {args.db}")
    return 0


def _fmt(x: float | None) -> str:
    return "  –  " if x is None else f"{100 * x:5.1f}"


def cmd_show(args: argparse.Namespace) -> int:
    from compaction_eval.history.store import open_store
    from compaction_eval.history.trends import all_series, sparkline

    with open_store(Path(args.db)) as conn:
        found = all_series(conn, prompt=args.prompt, category=args.category)
    if args.format == "json":
        rows = [{"prompt": s.subject, "category": s.category or None,
                 "nights": [{"run": n.run.name, "created": n.run.created, "git_commit": n.run.git_commit, "model": n.run.model,
                             "answers": n.run.answers, "verdicts": n.run.verdicts, "value": n.value, "ci": [n.lo, n.hi],
                             "segment": n.segment, "breaks": list(n.breaks)} for n in s.nights]} for s in found]
        print(json.dumps({"series": rows}, indent=1, allow_nan=False))
        return 0
    if not found:
        print("no figures match (history show lists prompts; --prompt P, --category C|all)")
        return 0
    width = max(len(s.label) for s in found)
    print(f"{'prompt':<{width}}  runs  first  latest [95% CI]       trend (│ = not comparable across)")
    for s in found:
        latest = s.nights[-1] if s.nights else None
        first = s.nights[0].value if s.nights else None
        ci = f"[{_fmt(latest.lo).strip()}, {_fmt(latest.hi).strip()}]" if latest and latest.lo is not None else ""
        print(f"{s.label:<{width}}  {len(s.nights):>4}  {_fmt(first)}  {_fmt(latest.value if latest else None)} {ci:<14}  {sparkline(s.nights)}")
    breaks = {(n.run.created, ", ".join(n.breaks)) for s in found for n in s.nights if n.breaks}
    for created, what in sorted(breaks):
        print(f"break before {created}: {what} changed (the trend does not run across it)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from compaction_eval.history.store import open_store
    from compaction_eval.history.trends import check

    with open_store(Path(args.db)) as conn:
        slips = check(conn, prompt=args.prompt, window=args.window, min_runs=args.min_runs)
    if args.format == "json":
        print(json.dumps({"verdict": "drift" if slips else "ok", "slips": [
            {"prompt": s.subject, "category": s.category or None, "first_night": s.first.run.created, "first_run": s.first.run.name,
             "latest": s.latest.value, "latest_ci": [s.latest.lo, s.latest.hi], "trailing_mean": s.baseline} for s in slips]},
            indent=1, allow_nan=False))
        return 1 if slips else 0
    if not slips:
        print("history check: no drift (every prompt's latest run is within the noise of its comparable trailing runs)")
        return 0
    for s in slips:
        what = f"{s.subject} recall on {s.category}" if s.category else f"{s.subject} recall"
        print(f"DRIFT {what}: {_fmt(s.latest.value).strip()}% [{_fmt(s.latest.lo).strip()}, {_fmt(s.latest.hi).strip()}] "
              f"against a trailing mean of {_fmt(s.baseline).strip()}%; slipping since {s.first.run.created} "
              f"(run {s.first.run.name}, commit {s.first.run.git_commit or 'unknown'})")
    return 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="nightly runs in one SQLite file: add runs, show trends, check for drift",
                       description="A run history in one SQLite file (keep it in a CI cache). Runs are comparable only with the "
                       "same corpus fingerprint, settings, model and tiers; a change breaks the trend.")
    hs = p.add_subparsers(dest="history_command", required=True)
    a = hs.add_parser("add", help="index run directories (adding one twice changes nothing)")
    a.add_argument("runs", nargs="+", metavar="RUN_DIR")
    a.add_argument("--db", required=True, help="the history database (created when missing)")
    a.set_defaults(func=cmd_add)
    s = hs.add_parser("show", help="per-prompt recall over runs, with a sparkline")
    s.add_argument("--db", required=True)
    s.add_argument("--prompt", help="one prompt")
    s.add_argument("--category", help="a fact category, or `all` for every category")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.set_defaults(func=cmd_show)
    c = hs.add_parser("check", help="exit 1 when a prompt's latest run fell below its comparable trailing runs beyond the noise")
    c.add_argument("--db", required=True)
    c.add_argument("--prompt", help="check one prompt only")
    c.add_argument("--window", type=whole(1), default=7, help="trailing runs compared with (default: 7)")
    c.add_argument("--min-runs", type=whole(1), default=3, help="fewest comparable trailing runs to judge by (default: 3)")
    c.add_argument("--format", choices=["text", "json"], default="text")
    c.set_defaults(func=cmd_check)


