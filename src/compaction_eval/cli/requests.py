"""`requests export` and `requests import`: the requests a run would send, answered elsewhere.

`requests export TO -- COMMAND [ARGS]` runs COMMAND (any command that calls a model:
`run`, `recall`, `replay`, `validate-matchers --judge-model ...`) without sending anything:
every model that is not an offline stand-in is replaced by a `recorded/` model that answers
what its recording has and gathers the rest. TO gets `requests.jsonl` (one request per line,
with its key) and `requests/<key>.md` (the same request, readable). Requests that need an
answer not recorded yet (the judge's, about a summary still to be written) are counted and
exported by the next `export`, once those answers are imported.

`requests import --requests TO --answers FILE|DIR --into RECORDING.jsonl` checks every answer
(exported key, no duplicates, well-formed) and appends them all, or none.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from compaction_eval.cli.common import error
from compaction_eval.cli.session import start_session
from compaction_eval.contracts.problems import ContractError, Problem

MODEL_FLAGS = ("model", "judge_model", "optimiser")  # the namespace names of model flags
REQUESTS_FILE = "requests.jsonl"
REQUEST_DIR = "requests"


def _mirror(command: list[str], scratch: Path) -> argparse.Namespace:
    """The command's arguments, writing under `scratch` and asking nothing of a real model."""
    from compaction_eval.cli.main import build_parser
    from compaction_eval.contracts.settings import RECORDED_PROVIDER, is_recorded, is_stand_in

    if not command or command[0] in ("requests",):
        raise ContractError([Problem("requests export", "", "name the command to mirror after --, e.g. -- recall --model recorded/answers.jsonl")])
    args = build_parser().parse_args(command)
    empty = scratch / "empty-recording.jsonl"
    empty.write_text("", encoding="utf-8")
    for name in MODEL_FLAGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not is_stand_in(value) and not is_recorded(value):
            setattr(args, name, f"{RECORDED_PROVIDER}{empty}")  # the same requests: the key names no model
    if hasattr(args, "out"):
        args.out = str(scratch / "out")
    if hasattr(args, "run"):
        args.run = "export"
    if getattr(args, "into", None):
        args.into = None  # a new run directory under the scratch --out, not the user's run
    for name, value in (("quiet", True), ("format", "text"), ("display", None)):
        if hasattr(args, name):
            setattr(args, name, value)
    return args


def cmd_export(args: argparse.Namespace) -> int:
    from compaction_eval.compaction import recorded

    to = Path(args.to)
    if to.exists() and (not to.is_dir() or any(to.iterdir())):
        return error(f"{to}: exists and is not an empty directory: name a new one")
    command = list(args.command)
    while command and command[0] in ("--", "-q", "--quiet"):  # options given after TO
        args.quiet = args.quiet or command.pop(0) != "--"
    recorded.reset(collect=True, command=command)
    with tempfile.TemporaryDirectory(prefix="compaction-eval-export-") as tmp:
        inner = _mirror(command, Path(tmp))
        start_session(inner)  # the mirrored command's --redact, limits: what it would send
        recorded.reset(collect=True, command=command, scratch=Path(tmp))
        with contextlib.redirect_stdout(sys.stderr if not args.quiet else open(os.devnull, "w")):  # noqa: SIM115
            code = inner.func(inner)
    if code not in (0, 1):  # 1: a gate or a problem count; the requests were still gathered
        return error(f"the mirrored command failed (exit {code}): nothing exported", code)
    entries = sorted(({k: v for k, v in e.items() if k != "recording"} for e in recorded.missing_requests()), key=lambda e: e["key"])
    stage = Path(tempfile.mkdtemp(prefix=f".{to.name}.", suffix=".partial", dir=to.parent if to.parent.exists() else None))
    try:
        (stage / REQUEST_DIR).mkdir()
        with open(stage / REQUESTS_FILE, "w", encoding="utf-8") as fh:
            for entry in entries:
                fh.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
                (stage / REQUEST_DIR / f"{entry['key']}.md").write_text(recorded.request_markdown(entry), encoding="utf-8")
        to.parent.mkdir(parents=True, exist_ok=True)
        if to.exists():
            to.rmdir()  # empty (checked above)
        os.replace(stage, to)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    later = recorded.dependent_count()
    print(f"{len(entries)} request(s) without a recorded answer written to {to / REQUESTS_FILE} and {to / REQUEST_DIR}/<key>.md")
    if later:
        print(f"{later} more request(s) depend on those answers (e.g. the judge's, about summaries not yet written): "
              "import the answers, then export again")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from compaction_eval.compaction import recorded

    req = Path(args.requests)
    requests = recorded.read_requests(req / REQUESTS_FILE if req.is_dir() else req)
    answers = recorded.read_answers(Path(args.answers))
    into = Path(args.into)
    if into.is_dir():
        return error(f"{into}: --into names a recording file (.jsonl), not a directory")
    existing = recorded.load_recording(into) if into.exists() else None
    records = recorded.plan_import(answers, requests, existing, model=args.model, written_by=args.written_by)
    recorded.append_records(into, records)  # one write: all of them or none
    print(f"imported {len(records)} answer(s) into {into}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("requests", help="export the requests a run would send (answered elsewhere), import the answers into a recording")
    inner = p.add_subparsers(dest="requests_command", required=True)
    e = inner.add_parser("export", help="write the requests COMMAND would send, without sending them: TO/requests.jsonl and TO/requests/<key>.md")
    e.add_argument("to", metavar="TO", help="a new directory for the requests")
    e.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to mirror, e.g. -- recall --model recorded/answers.jsonl --judge-model recorded/answers.jsonl")
    e.add_argument("-q", "--quiet", action="store_true", help="hide the mirrored command's output")
    e.set_defaults(func=cmd_export, collect_requests=True)
    i = inner.add_parser("import", help="check answers to exported requests and append them to a recording (all or none)")
    i.add_argument("--requests", required=True, help="the export directory (or its requests.jsonl)")
    i.add_argument("--answers", required=True, help='a JSONL file of {"key", "text"} lines, or a directory of <key>.txt files')
    i.add_argument("--into", required=True, help="the recording file to append to (created if missing)")
    i.add_argument("--model", help="the model that wrote the answers (unless each record names it)")
    i.add_argument("--written-by", help='who or what wrote them and how, e.g. "Claude helper playing the model, saw only the request files"')
    i.set_defaults(func=cmd_import)
