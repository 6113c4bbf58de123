"""results.json (`compaction-eval/results@1`): write atomically, read back.

A run directory is built under a temporary name next to its final place and renamed into
place only when complete, so a failed or interrupted run never leaves a partial directory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem

SCHEMA = "compaction-eval/results@1"
PID_FILE = ".pid"  # in a staging directory: the process building it
RESULTS_FILE = "results.json"


@contextmanager
def staged_run_dir(final: Path) -> Iterator[Path]:
    """A temporary directory that becomes `final` when the block succeeds.

    On any exception the temporary directory is removed and `final` is untouched.
    """
    final = Path(final)
    if final.exists():
        raise ContractError([Problem(str(final), "", "run directory already exists: choose another --run name")])
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    try:
        yield staging
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temp file in the same directory, then rename over `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, ensure_ascii=False, allow_nan=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write text through a temp file in the same directory, then rename over `path`
    (parents created); readable like any other file (`mode`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_results(run_dir: Path | str) -> dict[str, Any]:
    """Read a run's results.json, checking its schema."""
    path = Path(run_dir)
    path = path / RESULTS_FILE if path.is_dir() else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "results file not found")]) from None
    except json.JSONDecodeError as exc:
        raise ContractError([Problem(str(path), f"line {exc.lineno}", f"malformed JSON: {exc.msg}")]) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"not a {SCHEMA} file")])
    return data


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clear_interrupted(out_dir: Path, keep: Path | None = None) -> list[Path]:
    """Remove staging directories of earlier attempts of this run that were killed.

    A killed run leaves `.<run>.<random>.partial` behind (staged_run_dir cannot clean up
    after SIGKILL). Its completed model calls are in the generate cache, so a rerun
    redoes every sample (none lost, none duplicated) and pays only for calls that never
    completed. A staging directory whose process is still alive is left alone.
    """
    removed = []
    for stale in sorted(out_dir.parent.glob(f".{out_dir.name}.*.partial")):
        if keep is not None and stale.resolve() == keep.resolve():
            continue
        try:
            pid = int((stale / PID_FILE).read_text().strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None and pid != os.getpid() and _pid_alive(pid):
            continue
        shutil.rmtree(stale, ignore_errors=True)
        removed.append(stale)
    return removed
