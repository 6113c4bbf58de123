"""Helpers shared by the importers: failing with a place, trace ids, final validation."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import SCHEMA, strict_loads, validate_trace

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")
LOG = logging.getLogger("compaction_eval.corpus.importers")
_SOURCE_SUFFIXES = (".gz", ".json", ".traj")


def fail(where: str, place: str, message: str) -> NoReturn:
    """Raise a ContractError for one problem at `place` (a JSON path in the source file)."""
    raise ContractError([Problem(where, place, message)])


def read_text(path: Path) -> str:
    """A source file as UTF-8 text; a located error when it cannot be read or is not text."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        fail(str(path), "", f"cannot read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(str(path), f"byte {exc.start}", "not UTF-8 text")


def sniff_jsonl(path: Path, test: Callable[[Any], bool]) -> bool:
    """`test` of the first JSON line among the first 20 (blank, `//` and broken lines skipped);
    False when there is none or the file is not UTF-8 text. Tells JSONL formats apart cheaply."""
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh):
                if n > 20:
                    return False
                if not line.strip() or line.lstrip().startswith("//"):
                    continue
                try:
                    return test(strict_loads(line))
                except json.JSONDecodeError:
                    continue
    except (OSError, UnicodeDecodeError):
        return False
    return False


def warn(where: str, place: str, message: str) -> None:
    """Report something an importer left out or repaired, as `<file>: <place>: <message>`.

    Logged at WARNING on the `compaction_eval.corpus.importers` logger; with no logging set up,
    Python prints it to stderr. The same fact is also counted in the trace's metadata.
    """
    LOG.warning("%s", Problem(where, place, message))


def unique_id(raw: str, used: set[str]) -> str:
    """`raw`, or `raw_2`, `raw_3`, ... when taken: tool_use ids must be unique in a trace."""
    out, n = raw, 1
    while out in used:
        n += 1
        out = f"{raw}_{n}"
    used.add(out)
    return out


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (optional sections of a log)."""
    return value if isinstance(value, dict) else {}


def file_stem(path: Path) -> str:
    """The file name without `.traj.json(.gz)` style suffixes: the fallback trace id."""
    name = path.name
    changed = True
    while changed:
        changed = False
        for suffix in _SOURCE_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name, changed = name[: -len(suffix)], True
    return name


def safe_id(raw: Any, where: str, place: str) -> str:
    """A trace id usable as a file name (`<out>/<id>.json`): unsafe runs become '-'."""
    text = _UNSAFE_ID.sub("-", str(raw)).strip("-.")
    if not text:
        fail(where, place, f"cannot make a trace id from {raw!r}")
    return text


def finish(
    *,
    trace_id: str,
    source: dict[str, Any],
    system: str,
    tools: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    metadata: dict[str, Any],
    where: str,
) -> dict[str, Any]:
    """Assemble a trace@1 dict and raise if it breaks the contract.

    An importer bug or an input the importer let through must not produce a trace that
    fails later, far from its source; the problems name the source file.
    """
    trace = {
        "schema": SCHEMA,
        "id": trace_id,
        "source": source,
        "system": system,
        "tools": tools,
        "messages": messages,
        "metadata": metadata,
    }
    problems = validate_trace(trace, where)
    if problems:
        raise ContractError(problems)
    return trace
