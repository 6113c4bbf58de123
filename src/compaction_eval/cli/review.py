"""`review RUN`: a run's uncertain verdicts -> an editable file -> gold judgments -> refit."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_review(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.runfiles import read_results
    from compaction_eval.validation.review import apply_review, format_uncertain, refit, uncertain_verdicts, write_review

    if args.refit:  # checked first: a refused target leaves nothing half done
        from compaction_eval.contracts.problems import ContractError, Problem
        from compaction_eval.recall.matching.calibrated import MODEL_PATH

        if Path(args.refit).resolve() == MODEL_PATH.resolve():
            raise ContractError([Problem(str(args.refit), "--refit", "refusing to overwrite the packaged calibration: name another file")])
    if args.apply:
        if not args.gold:
            from compaction_eval.contracts.problems import ContractError, Problem

            raise ContractError([Problem(str(args.apply), "--gold", "name the gold file to append to (--gold FILE)")])
        n = apply_review(Path(args.apply), Path(args.gold))
        doc: dict = {"command": "review", "applied": n, "gold": args.gold}
        if args.format != "json":
            print(f"appended {n} reviewed summaries to {args.gold} (split: tune)")
    else:
        results = read_results(args.run)
        rows = uncertain_verdicts(results)
        out = Path(args.write) if args.write else Path(args.run) / "review.yaml"
        n = write_review(results, out, force=args.force)
        doc = {"command": "review", "uncertain": rows, "files": [str(out)]}
        if args.format != "json":
            print(format_uncertain(rows))
            print(f"\nreview file: {out} ({n} summaries); edit it, then: compaction-eval review {args.run} --apply {out} --gold FILE_OR_DIR")
    if args.refit:
        gold = Path(args.gold) if args.gold else Path("labels/gold")
        gold_dir = gold if gold.is_dir() else gold.parent
        trained = refit(gold_dir, Path(args.refit))
        doc["refit"] = {"out": args.refit, "trained_on": trained}
        if args.format != "json":
            print(f"refitted calibration on {gold_dir} (tune part): {args.refit} {trained}")
    if args.format == "json":
        from compaction_eval.cli.progress import emit_json

        emit_json(doc)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("review", help="list a run's uncertain verdicts, write an editable review file, append your judgments to a gold file, refit")
    p.add_argument("run", help="the run directory (or its results.json)")
    p.add_argument("--write", help="where to write the review file (default: RUN/review.yaml)")
    p.add_argument("--apply", help="a filled-in review file: append its judgments to --gold")
    p.add_argument("--gold", help="the gold file (one trace, labels/gold format) or folder (one file per trace, for a review of several traces) to append to; created if missing")
    p.add_argument("--refit", metavar="OUT", help="refit the calibration on the gold file's directory into OUT (never the packaged file)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="the verdicts as text, or one JSON document on stdout")
    p.add_argument("--force", action="store_true", help="replace an existing review file (it may hold your judgments)")
    p.set_defaults(func=cmd_review)
