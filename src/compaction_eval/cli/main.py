"""The `compaction-eval` command line. Exit codes: 0 ok, 1 problems found or run failed,
2 unusable input or usage error.

Each command group lives in its own module with a `register(subparsers)` function; `COMMANDS`
lists them in the order `--help` shows. The modules import the heavy parts (inspect,
scikit-learn, matplotlib) only inside their commands, so building the parser is fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from compaction_eval.cli.argv import subcommand_safe
from compaction_eval.cli.common import check_number_flags, error, keep_inspect_local, terminal_safe
from compaction_eval.cli.errors import error_message
from compaction_eval.cli.session import add_session_flags, end_session, start_session
from compaction_eval.cli.version import add_version_flag
from compaction_eval.contracts.problems import ContractError

COMMANDS = (
    "compaction_eval.cli.recall",  # run, recall, score
    "compaction_eval.cli.horizon",
    "compaction_eval.cli.replay",  # replay, decay, probes
    "compaction_eval.cli.report",
    "compaction_eval.cli.corpus",  # lint, import, labels draft, corpus
    "compaction_eval.cli.gate",  # gate, baseline
    "compaction_eval.cli.tune",
    "compaction_eval.cli.suggest",
    "compaction_eval.cli.validation",  # validate-matchers
    "compaction_eval.cli.review",
    "compaction_eval.cli.history",
    "compaction_eval.cli.prompts",  # prompts list|show|copy, init, docs
    "compaction_eval.cli.schema",
    "compaction_eval.cli.requests",  # requests export, requests import
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compaction-eval",
        description="What context compaction loses, measured. Exit codes: 0 ok, 1 problems found, regression or failed run, 2 unusable input.",
        epilog=("Your own prompt: `compaction-eval docs prompts` (the format, with a worked example; the file: "
                "`docs prompts --path`), `prompts list | show NAME | copy NAME DIR`, `init DIR`, `lint mine.j2`. "
                "Your own labels: `compaction-eval docs labels`. JSON Schemas: `compaction-eval schema trace|labels|results`."),
    )
    add_version_flag(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    from compaction_eval.cli.history import add_history_flag

    add_history_flag(sub)
    add_session_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(subcommand_safe(parser, sys.argv[1:] if argv is None else argv))
    keep_inspect_local()
    try:
        check_number_flags(parser, args)
        return run_command(args, sys.argv[1:] if argv is None else list(argv))
    except ContractError as exc:
        code = error(str(exc))
        for problem in exc.problems[1:]:
            print(f"  {terminal_safe(str(problem))}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return error("interrupted", 130)
    except Exception as exc:  # a model that cannot be built, a provider refusing: one line
        if os.environ.get("COMPACTION_EVAL_DEBUG"):
            raise
        return error(f"{type(exc).__name__}: {error_message(exc)} (set COMPACTION_EVAL_DEBUG=1 for the traceback)", 1)
    finally:
        journal_notes()


def run_command(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the parsed command; a `recorded/` model that met a request it has no answer for
    fails it (exit 2) even when the command wrote nothing (compaction.recorded)."""
    from compaction_eval.compaction import recorded

    recorded.reset(collect=getattr(args, "collect_requests", False), command=argv)
    start_session(args)
    try:
        code = args.func(args)
    finally:
        end_session()
    recorded.check_complete()
    if code == 0:
        from compaction_eval.cli.history import record_history

        record_history(args)
    return code


def journal_notes() -> None:
    """Say which answer-journal entries were found damaged and asked again (never silently)."""
    journal = sys.modules.get("compaction_eval.compaction.journal")  # loaded only by real-model runs
    for path, why in journal.damaged_entries() if journal else []:
        print(f"note: ignored a damaged answer-journal entry {path}: {why} (the model was asked again)", file=sys.stderr)
    cache = sys.modules.get("compaction_eval.compaction.cachefiles")
    for path, why in cache.refused_entries() if cache else []:
        print(f"note: ignored a generate-cache entry {path}: {why} (the model was asked again)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
