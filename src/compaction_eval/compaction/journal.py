"""A write-ahead journal of paid model answers: on disk the moment the provider hands one over.

Why: inspect 0.3.285 writes its generate cache (`Model._generate` -> `cache_store`) only
after it has completed the transcript event, recorded usage and awaited the telemetry hooks,
and the coroutine that received the answer may wait behind CPU-bound work on the same event
loop before it gets there. A `kill -9` in that window lost answers that had been paid for,
and the rerun asked for them again.

The journal sits one layer lower, around the provider's own `generate` (so it works for
every provider inspect has): the answer is written the moment the provider returns it,
before the coroutine awaits anything; a rerun that misses inspect's cache takes the answer
from here instead of the network, and inspect then caches it as usual.

One file per answer, `<root>/<model>/<key>.answer`, keyed exactly like inspect's cache
(`CacheEntry`: config, messages, tools, tool_choice, base_url, expiry, scopes, epoch):

    {"schema": "compaction-eval/answer@1", "model": ..., "key": ..., "expires": ..., "bytes": N, "sha256": ...}  (one line)
    <N bytes: the ModelOutput as JSON>

Written as a hidden temporary file and renamed into place (the commit point: a killed
process leaves either the whole entry or none), then fsynced on a background thread (until
then a machine that loses power may keep a torn file). A torn, truncated or altered entry
fails its length or checksum, or names another model or key, and is ignored (logged at
WARNING and listed by `damaged_entries()`, which the CLI prints once; the question is asked
again): never a crash, never a wrong answer. Only the output
is stored, never the request, its headers or the provider's call record, and an answer
that contains the value of a credential in the environment is not journaled at all.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from compaction_eval.compaction.cachefiles import MAX_ENTRY_BYTES, open_regular
from compaction_eval.contracts.credentials import credentials_in
from compaction_eval.contracts.runfiles import pid_alive

if TYPE_CHECKING:
    from inspect_ai.model import ModelOutput

SCHEMA = "compaction-eval/answer@1"
SUFFIX = ".answer"
JOURNAL_DIR = "compaction-eval-answers"  # beside inspect's `generate/` cache folder
LOG = logging.getLogger("compaction_eval.compaction.journal")

_SAFE_MODEL = re.compile(r"[^A-Za-z0-9._-]+")


def journal_root() -> Path:
    """`<inspect cache dir>/compaction-eval-answers` (INSPECT_CACHE_DIR when set; the CLI sets
    it under the user cache directory: compaction.cachefiles)."""
    from inspect_ai.model import cache_path

    return cache_path().parent / JOURNAL_DIR


_DAMAGED: list[tuple[Path, str]] = []  # entries ignored since the CLI last reported them


def damaged_entries() -> list[tuple[Path, str]]:
    """(path, why) of every damaged entry ignored since the last call: each is reported once,
    by the command that met it (a later command in the same process says nothing of it)."""
    taken = list(_DAMAGED)
    _DAMAGED.clear()
    return taken


@lru_cache(maxsize=8)
def open_journal(root: Path) -> AnswerJournal:
    """One journal object per root and process (it remembers which folders it swept)."""
    return AnswerJournal(root)


def model_folder(model: str) -> str:
    """A folder name for `model`: readable, and distinct for distinct names.

    >>> model_folder("anthropic/claude-sonnet-4-5")
    'anthropic--claude-sonnet-4-5'
    >>> model_folder("../x") == model_folder("..-x")
    False
    """
    readable = _SAFE_MODEL.sub("-", model.replace("/", "--")).strip(".-") or "model"
    if readable == model.replace("/", "--"):
        return readable
    return f"{readable}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:12]}"


def encode_entry(model: str, key: str, output_json: bytes, expires: float | None) -> bytes:
    """The bytes of one journal entry (header line, then the output)."""
    header = {
        "schema": SCHEMA,
        "model": model,
        "key": key,
        "expires": expires,
        "bytes": len(output_json),
        "sha256": hashlib.sha256(output_json).hexdigest(),
    }
    return json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + output_json


def decode_entry(data: bytes, model: str, key: str) -> tuple[bytes | None, str | None]:
    """(the output JSON, None) for a sound entry answering (model, key); (None, why) otherwise."""
    head, sep, body = data.partition(b"\n")
    if not sep:
        return None, "no header line (truncated)"
    try:
        header = json.loads(head)
    except ValueError:
        return None, "header is not JSON"
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        return None, f"not a {SCHEMA} entry"
    if header.get("model") != model or header.get("key") != key:
        return None, "entry answers another model or question"
    if header.get("bytes") != len(body):
        return None, f"{len(body)} bytes of output where the header says {header.get('bytes')!r} (torn write)"
    if header.get("sha256") != hashlib.sha256(body).hexdigest():
        return None, "checksum does not match the output"
    expires = header.get("expires")
    if expires is not None and (not isinstance(expires, (int, float)) or time.time() > expires):
        return None, "expired"
    return body, None


class AnswerJournal:
    """The journal under `root` (see the module docstring for the format)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.damaged: list[tuple[Path, str]] = []  # entries ignored since this object was made
        self._swept: set[Path] = set()

    def path(self, model: str, key: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{16,128}", key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.root / model_folder(model) / f"{key}{SUFFIX}"

    def get(self, model: str, key: str) -> ModelOutput | None:
        """The journaled answer, or None when there is none or it is damaged or expired."""
        from inspect_ai.model import ModelOutput

        path = self.path(model, key)
        try:  # a FIFO, a link to /dev/zero or a directory is refused unread (cachefiles)
            data = open_regular(path, limit=MAX_ENTRY_BYTES)
        except OSError as exc:
            self._ignore(path, exc.strerror or str(exc))
            return None
        if data is None:
            return None
        body, why = decode_entry(data, model, key)
        if body is None:
            if why == "expired":
                path.unlink(missing_ok=True)
                return None
            self._ignore(path, why or "damaged")
            return None
        try:
            return ModelOutput.model_validate_json(body)
        except ValueError as exc:
            self._ignore(path, f"output does not parse ({str(exc).splitlines()[0]})")
            return None

    def put(self, model: str, key: str, output: ModelOutput, expires: float | None) -> bool:
        """Write the answer; True once it is committed (renamed into place).

        Synchronous on purpose: it runs before the coroutine that received the answer
        awaits anything. The fsync follows on a background thread.
        """
        body = output.model_dump_json().encode("utf-8")
        leaked = credentials_in(body)
        if leaked:
            LOG.warning("answer not journaled: it contains the value of %s", ", ".join(sorted(leaked)))
            return False
        path = self.path(model, key)
        if path.is_dir() and not path.is_symlink():  # a rename cannot replace it: not ours, left alone
            self._ignore(path, "a directory, not a regular file: refused")
            return False
        folder = path.parent
        folder.mkdir(parents=True, exist_ok=True)
        self._sweep(folder)
        tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        data = encode_entry(model, key, body, expires)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.replace(tmp, path)  # the commit point for a killed process
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        try:
            _FSYNC.submit(_fsync_and_close, fd, str(folder))
        except RuntimeError:  # the interpreter is shutting down: no more background work
            _fsync_and_close(fd, str(folder))
        return True

    def _ignore(self, path: Path, why: str) -> None:
        self.damaged.append((path, why))
        _DAMAGED.append((path, why))
        LOG.warning("ignored a damaged answer-journal entry %s: %s (the model is asked again)", path, why)

    def _sweep(self, folder: Path) -> None:
        """Remove temporary files left by killed writers (their process is gone)."""
        if folder in self._swept:
            return
        self._swept.add(folder)
        for tmp in folder.glob(".*.tmp"):
            parts = tmp.name.split(".")
            pid = int(parts[2]) if len(parts) > 3 and parts[2].isdigit() else None
            if pid is not None and pid != os.getpid() and not pid_alive(pid):
                tmp.unlink(missing_ok=True)


def _fsync_and_close(fd: int, folder: str) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself
    finally:
        os.close(dir_fd)


# One thread: fsyncs run in commit order, off the event loop (about 8 ms each here, which
# would otherwise delay every answer behind them). Pending ones finish before exit.
_FSYNC = ThreadPoolExecutor(max_workers=1, thread_name_prefix="answer-journal-fsync")
atexit.register(_FSYNC.shutdown, wait=True)

