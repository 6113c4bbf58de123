"""Where the generate cache and the answer journal live, and how their files are opened.

Why: inspect stores each generate-cache entry with `pickle` and loads it with `pickle.load`,
which runs whatever code the file names. The cache used to live in `./.compaction-eval/`, so a
checkout that committed one entry ran its code on the first real-model run. Three rules, each
enough on its own to stop that:

- **Location.** The cache root is `$COMPACTION_EVAL_CACHE_DIR` when the user names one, else
  the user cache directory (`platformdirs`: `$XDG_CACHE_HOME/compaction-eval`, usually
  `~/.cache/compaction-eval`), never the working directory. A root that is inside a git work
  tree is refused (`check_cache_root`) unless `$COMPACTION_EVAL_CACHE_DIR` names exactly it:
  a repository can supply any file under its own tree.
- **No code from an entry.** inspect's `cache_fetch` is replaced by `safe_fetch`, whose
  unpickler builds only inspect's own pydantic models and enums and `datetime` values; any
  other global (`os.system`, `builtins.eval`, ...) makes the entry damaged, never called.
- **Regular files only.** An entry that is a FIFO, a symlink, a device or a directory is
  refused without reading a byte (`open_regular`: `O_NOFOLLOW | O_NONBLOCK`, then `fstat`), so a
  FIFO cannot freeze the event loop and a link to /dev/zero cannot fill memory. A store never
  opens the entry's path for writing: it writes a temporary file and renames it over the entry.

A refused entry is reported once by the CLI, naming the file and why, and the model is asked
again. What a cache entry is trusted for: to be an earlier answer to the same question from
the same model; never for code, and never beyond a `ModelOutput`'s fields.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import logging
import os
import pickle
import stat
import tempfile
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem

CACHE_ENV = "COMPACTION_EVAL_CACHE_DIR"
APP_NAME = "compaction-eval"
INSPECT_SUBDIR = "inspect-cache"  # INSPECT_CACHE_DIR: inspect's `generate/` and our journal
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # an answer is kilobytes: a larger entry is not ours
LOG = logging.getLogger("compaction_eval.compaction.cachefiles")

REFUSED: list[tuple[Path, str]] = []  # entries refused since the CLI last reported them


class NotRegularFile(OSError):
    """An entry that is not a regular file (FIFO, symlink, device, directory)."""


def default_cache_root(environ: Any = None) -> Path:
    """`$COMPACTION_EVAL_CACHE_DIR`, else the user cache directory of compaction-eval."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / APP_NAME
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def work_tree_of(path: Path) -> Path | None:
    """The git work tree that contains `path` (or would, once it exists), else None."""
    path = Path(os.path.abspath(path))
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def check_cache_root(root: Path | str, environ: Any = None) -> Path:
    """`root` if a repository cannot supply its files; else a ContractError naming it.

    A root inside a git work tree is allowed only when `$COMPACTION_EVAL_CACHE_DIR` names it
    (the user asked for it; the restricted unpickler still applies)."""
    env = os.environ if environ is None else environ
    root = Path(root)
    tree = work_tree_of(root)
    if tree is None:
        return root
    asked = env.get(CACHE_ENV)
    if asked and os.path.abspath(Path(asked).expanduser()) in (os.path.abspath(root), os.path.abspath(root.parent)):
        return root
    raise ContractError([Problem(str(root), "", (
        f"model cache is inside the git work tree {tree}: a repository could supply its entries. "
        f"Unset INSPECT_CACHE_DIR (the default is the user cache directory), or set {CACHE_ENV} to this directory to use it anyway"))])


def inspect_cache_root() -> Path:
    """INSPECT_CACHE_DIR in use (inspect's `generate/` and the answer journal are under it),
    without creating it."""
    from inspect_ai.model._cache import _cache_root

    return _cache_root().parent


def open_regular(path: Path | str, *, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of `path`, or None when it does not exist.

    Raises NotRegularFile for a FIFO, symlink, device or directory (nothing is read, nothing
    blocks), and OSError for an entry larger than `limit`.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise NotRegularFile(f"a symbolic link (to {os.readlink(path)!r}), not a regular file: refused") from None
        if os.path.isdir(path):
            raise NotRegularFile("a directory, not a regular file: refused") from None
        raise exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a directory" if stat.S_ISDIR(info.st_mode) else "a device or socket"
            raise NotRegularFile(f"{kind}, not a regular file: refused")
        if info.st_size > limit:
            raise OSError(f"{info.st_size} bytes is larger than any answer")
        chunks = []
        while data := os.read(fd, 1 << 20):
            chunks.append(data)
            if sum(map(len, chunks)) > limit:
                raise OSError(f"more than {limit} bytes: larger than any answer")
        return b"".join(chunks)
    finally:
        os.close(fd)


def refuse(path: Path, why: str) -> None:
    """Record a refused cache entry (reported once by the CLI; the model is asked again)."""
    REFUSED.append((Path(path), why))
    LOG.warning("ignored a generate-cache entry %s: %s (the model is asked again)", path, why)


def refused_entries() -> list[tuple[Path, str]]:
    """(path, why) of every refused generate-cache entry since the last call."""
    taken = list(REFUSED)
    REFUSED.clear()
    return taken


_DATETIME = {("datetime", n): c for n, c in (("datetime", datetime), ("timezone", timezone), ("timedelta", timedelta), ("date", date))}


class _DataOnly(pickle.Unpickler):
    """Builds inspect's data classes (pydantic models, enums, plain dataclasses such as a tool
    call) and datetime values; nothing callable else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _DATETIME:
            return _DATETIME[(module, name)]
        if module.split(".")[0] == "inspect_ai" and "." not in name:
            from pydantic import BaseModel

            found = getattr(__import__(module, fromlist=[name]), name, None)
            if isinstance(found, type) and issubclass(found, (BaseModel, enum.Enum)):
                return found
            # A dataclass is rebuilt without calling its __init__ (pickle sets its fields);
            # one that customises unpickling could run code, so it is not data.
            if isinstance(found, type) and dataclasses.is_dataclass(found) and not any(
                    hook in found.__dict__ for hook in ("__setstate__", "__reduce__", "__reduce_ex__")):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not data: refused")


def load_entry(data: bytes) -> tuple[Any, Any]:
    """(expiry, output) from a cache entry's bytes, building data only (see `_DataOnly`)."""
    value = _DataOnly(io.BytesIO(data)).load()
    if not isinstance(value, tuple) or len(value) != 2:
        raise pickle.UnpicklingError("not an (expiry, output) pair")
    return value


def safe_fetch(entry: Any) -> Any:
    """The replacement of inspect's `cache_fetch`, with the three rules of this module applied."""
    from inspect_ai.model import ModelOutput
    from inspect_ai.model._cache import _cache_entry_path, _is_expired

    filename = _cache_entry_path(entry)
    if filename is None:
        return None
    try:
        data = open_regular(filename)
    except OSError as exc:
        refuse(filename, str(exc))
        return None
    if data is None:
        return None
    try:
        expiry, output = load_entry(data)
    except Exception as exc:  # anything a damaged or hostile pickle raises
        refuse(filename, f"not a cached answer ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
        return None
    if not isinstance(output, ModelOutput) or (expiry is not None and not isinstance(expiry, datetime)):
        refuse(filename, "not a cached answer")
        return None
    if _is_expired(expiry):
        Path(filename).unlink(missing_ok=True)
        return None
    return output


def safe_store(entry: Any, output: Any) -> bool:
    """The replacement of inspect's `cache_store`, writing a temporary file renamed over the entry (never
    opening a FIFO or following a link that sits at the entry's path)."""
    from inspect_ai.model._cache import _cache_entry_path, _cache_expiry

    if any(choice.stop_reason == "content_filter" for choice in output.choices):
        return False  # as inspect: a refusal is asked again
    filename = _cache_entry_path(entry)
    if filename is None:
        return False
    folder = Path(filename).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{Path(filename).name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((_cache_expiry(entry.policy), output), fh)
            os.replace(tmp, filename)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True
    except OSError as exc:
        LOG.warning("could not store a generate-cache entry %s: %s", filename, exc)
        return False


def install_safe_cache() -> None:
    """Route inspect's generate cache through `safe_fetch` / `safe_store` (idempotent).

    inspect 0.3.285 (pinned range) calls `cache_fetch` and `cache_store` from
    `inspect_ai.model._model` by those names (checked by tests/compaction/test_cachefiles.py).
    """
    from inspect_ai.model import _model

    _model.cache_fetch = safe_fetch  # type: ignore[assignment]
    _model.cache_store = safe_store  # type: ignore[assignment]
