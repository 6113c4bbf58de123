"""`compaction-eval suggest RUN [--prompt P]`: what each prompt lost, why, and a patch."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suggest", help="what each prompt of a run lost, by category and cause, and edits to its template as a patch")
    p.add_argument("run", metavar="RUN", help="a fact-recall run directory or results.json")
    p.add_argument("--prompt", metavar="P", help="one prompt: its name in the run, or its .j2 file (default: every prompt of the run)")
    p.add_argument("--patch", metavar="FILE", help="write the edits as one unified diff here (apply with `git apply FILE`)")
    p.add_argument("--json", metavar="FILE", help="write the suggestions as JSON here (compaction-eval/suggest@1)")
    from compaction_eval.cli.progress import add_format_arg

    add_format_arg(p)
    p.set_defaults(func=cmd_suggest)


def cmd_suggest(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.problems import ContractError, Problem
    from compaction_eval.contracts.runfiles import (
        read_results,
        write_json_atomic,
        write_text_atomic,
    )
    from compaction_eval.tune.suggest import (
        format_suggestions,
        suggest_document,
        suggest_run,
    )

    results = read_results(args.run)
    if results.get("suite", "fact_recall") != "fact_recall" or not results.get("samples"):
        raise ContractError([Problem(str(args.run), "samples", "not a fact-recall run with samples")])
    suggestions = suggest_run(results, args.prompt)
    if not suggestions:
        raise ContractError([Problem(str(args.run), "config.prompts", "no prompt file of the run was found; pass --prompt FILE.j2")])
    as_json = args.format == "json"
    log = sys.stderr if as_json else sys.stdout  # with --format json, stdout holds the document alone
    if results.get("offline_stand_in"):
        print(f"note: the run's model is {results.get('model')}, an offline stand-in (not an LLM); the causes are read from its summaries",
              file=log)
    if not as_json:
        print("\n\n".join(format_suggestions(s) for s in suggestions))
    files = []
    if args.patch:
        write_text_atomic(Path(args.patch), "".join(s.patch for s in suggestions))
        files.append(args.patch)
        print(f"patch: {args.patch}", file=log)
    document = suggest_document(results, suggestions)
    if args.json:
        write_json_atomic(Path(args.json), document)
        files.append(args.json)
        print(f"suggestions: {args.json}", file=log)
    if as_json:
        from compaction_eval.cli.progress import emit_json

        emit_json({"command": "suggest", **document, "files": files})
    return 0
