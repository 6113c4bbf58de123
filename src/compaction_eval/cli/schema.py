"""`compaction-eval schema trace|labels|results`: the JSON Schema of a file contract, generated
from the one definition in contracts/schemas.py (the same text ships as
docs/schemas/KIND.schema.json, for editors and validators that want a file)."""

from __future__ import annotations

import argparse
import sys

KINDS = ("trace", "labels", "results")


def cmd_schema(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.schemas import schema_text

    sys.stdout.write(schema_text(args.kind))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of trace@1, labels@1 or results@1 (validate your own files with any JSON Schema tool)")
    p.add_argument("kind", choices=KINDS)
    p.set_defaults(func=cmd_schema)
