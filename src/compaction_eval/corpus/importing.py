"""`compaction-eval import`: convert source files and write one trace file per trace.

Traces are redacted by default (`corpus.redact.redact_trace`: secret-looking strings replaced,
counted in `metadata.redactions`): public sessions carry keys their authors missed, such as
the Gemini API key in two Cursor exports of the real data.

All sources are converted before anything is written, so one bad source leaves the output
directory as it was. Each file is written to a temporary file in the output directory and
moved into place with os.replace, so a reader never sees half a trace.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.runfiles import check_overwrite
from compaction_eval.corpus.importers import convert_all
from compaction_eval.corpus.redact import redact_trace


def import_files(srcs: list[Path], fmt: str | None, out_dir: Path, *, redact: bool = True, force: bool = False) -> list[Path]:
    """Convert `srcs` and write `<out_dir>/<trace id>.json` for every trace they hold.

    Args:
        srcs: source files (one may hold several traces, e.g. an OpenAI-chat sample list).
        fmt: the source format name (see importers.FORMATS); None detects each file's.
        out_dir: created if missing; an existing file of the same trace id is replaced only
            with `force` (contracts.runfiles.check_overwrite: checked before anything is written).
        redact: replace secret-looking strings (False: write what the source holds).

    Returns:
        The written paths, in source order.

    Raises:
        ContractError: a source is unreadable, malformed or breaks the contract (naming the
            file and the place), or two traces would share an id. Nothing is written then.
    """
    converted: list[tuple[Path, dict[str, Any]]] = []
    owner: dict[str, Path] = {}
    for src in srcs:
        src = Path(src)
        for trace in convert_all(src, fmt):
            tid = trace["id"]
            if tid in owner:
                raise ContractError(
                    [Problem(str(src), "id", f"trace id {tid!r} is also produced by {owner[tid]}; ids must be unique")]
                )
            owner[tid] = src
            converted.append((src, redact_trace(trace) if redact else trace))

    out_dir = Path(out_dir)
    for _, trace in converted:
        check_overwrite(out_dir / f"{trace['id']}.json", force=force, flag="import --out")
    out_dir.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for _, trace in converted:
            staged.append((_write_temp(trace, out_dir), out_dir / f"{trace['id']}.json"))
        for tmp, final in staged:
            os.replace(tmp, final)
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return [final for _, final in staged]


def _write_temp(trace: dict[str, Any], out_dir: Path) -> str:
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{trace['id']}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(trace, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp
