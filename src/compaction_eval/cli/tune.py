"""`tune`: recall-first tuning of a prompt's fields."""

from __future__ import annotations

import argparse


def cmd_tune(args: argparse.Namespace) -> int:
    from compaction_eval.tune.ablation import run_tune_command

    return run_tune_command(args)


def register(sub: argparse._SubParsersAction) -> None:
    from compaction_eval.tune.ablation import add_tune_args

    p = sub.add_parser("tune", help="recall-first tuning: backward elimination of a prompt's fields; prints the frontier, writes the reduced prompt")
    add_tune_args(p)
    p.set_defaults(func=cmd_tune)
