"""results.json (`compaction-eval/results@1`): write atomically, read back.

A run directory is built under a temporary name next to its final place and renamed into
place only when complete, so a failed or interrupted run never leaves a partial directory.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from compaction_eval.contracts.credentials import scrub_credentials
from compaction_eval.contracts.problems import ContractError, Problem

SCHEMA = "compaction-eval/results@1"
PID_FILE = ".pid"  # in a staging directory: the process building it
RESULTS_FILE = "results.json"
LOCK_SUFFIX = ".lock"
RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_run_name(name: str, flag: str = "--run") -> str:
    """`name` if it is a plain file name (a run or a baseline), else ContractError.

    One rule for every name that becomes a directory: letters, digits, `.`, `_` and `-`,
    starting with a letter or digit, so `../../escape`, `/abs/path` and `.hidden` are
    refused before anything is written.
    """
    if not isinstance(name, str) or not RUN_NAME.match(name) or name in (".", ".."):
        raise ContractError([Problem(flag, "", f"name {name!r} must match [A-Za-z0-9][A-Za-z0-9._-]* (no path separators or '..')")])
    return name


def run_directory(out: Path | str, name: str) -> Path:
    """The run directory `out/name`, with `name` checked (see `check_run_name`)."""
    return Path(out) / check_run_name(name)


def check_run_path(path: Path | str) -> Path:
    """A run directory as given: refused when its last part is not a valid run name or when
    it climbs with `..` (`--out results --run ../../escape`)."""
    path = Path(path)
    if ".." in path.parts:
        raise ContractError([Problem("--run", "", f"run directory {str(path)!r} climbs out of its parent with '..'")])
    check_run_name(path.name)
    return path


def ensure_directory(path: Path | str, flag: str = "--out") -> Path:
    """Create directory `path` (and parents); a file in the way is a ContractError."""
    path = Path(path)
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            raise ContractError([Problem(str(part), "", f"{flag} must be a directory, but this is an existing file")])
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ContractError([Problem(str(path), "", f"cannot create directory: {exc.strerror or exc}")]) from None
    return path


def read_text_input(path: Path | str, flag: str = "--summary") -> str:
    """A UTF-8 text file given on the command line (`score --summary FILE`); a missing file,
    a directory or binary content is a ContractError naming the file."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", f"{flag}: file not found")]) from None
    except IsADirectoryError:
        raise ContractError([Problem(str(path), "", f"{flag} is a directory: name a text file")]) from None
    except UnicodeDecodeError as exc:
        raise ContractError([Problem(str(path), f"byte {exc.start}", f"{flag} is not UTF-8 text")]) from None
    except OSError as exc:
        raise ContractError([Problem(str(path), "", f"{flag}: cannot read: {exc.strerror or exc}")]) from None


def check_overwrite(path: Path | str, *, force: bool = False, flag: str = "--out") -> Path:
    """The one overwrite rule of every writer: `path` is written only when it does not exist
    yet, or with `force` (a review file with a person's judgments, an optimised prompt, a
    decay.json added to a run are not lost to a rerun). ContractError naming it otherwise."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not force:
        raise ContractError([Problem(str(path), "", f"{flag} exists: pass --force to overwrite it")])
    return path


def check_replaceable_dir(path: Path | str, owned: Callable[[Path], bool], *, force: bool = False, flag: str = "--out") -> Path:
    """A folder a command replaces as a whole (`corpus export DIR`): only with `force`, and
    even then only when everything in it is something the command writes (`owned`), so a
    folder holding the user's own files is never wiped."""
    path = Path(path)
    if not path.exists():
        return path
    if not path.is_dir():
        raise ContractError([Problem(str(path), "", f"{flag} must be a directory, but this is an existing file")])
    check_overwrite(path, force=force, flag=flag)
    for child in sorted(path.iterdir()):
        if not owned(child):
            raise ContractError([Problem(str(child), "", f"{flag} holds a file this command did not write: refusing to replace the folder")])
    return path


def write_text_new(path: Path | str, text: str, *, force: bool = False, flag: str = "--out") -> Path:
    """Write `text` to `path` atomically; an existing file is kept unless `force`."""
    path = Path(path)
    if path.is_dir():
        raise ContractError([Problem(str(path), "", f"{flag} is a directory: name a file")])
    check_overwrite(path, force=force, flag=flag)
    ensure_directory(path.parent, flag)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        run_commit_checks(path)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextmanager
def run_lock(final: Path) -> Iterator[None]:
    """Hold `.<run>.lock` beside the run directory for the whole run.

    A second run with the same name, started while the first is working, fails at once
    with a ContractError naming the process that holds the lock (an advisory `flock`: a
    killed run's lock is released by the kernel, so nothing stale blocks a rerun).
    """
    final = Path(final)
    ensure_directory(final.parent, "--out")
    path = final.parent / f".{final.name}{LOCK_SUFFIX}"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
            try:
                holder = path.read_text().strip() or "?"
            except OSError:
                holder = "?"
            raise ContractError([Problem(str(final), "", f"run {final.name!r} is already in progress (pid {holder}): wait for it or choose another --run name")]) from None
        try:  # the lock is ours only if the file was not removed and recreated meanwhile
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


class RequestLimits(TypedDict):
    """The keyword arguments `request_limits` gives inspect's `eval()`."""

    attempt_timeout: int
    timeout: int


def request_limits(timeout: int, max_retries: int) -> RequestLimits:
    """The limits inspect needs for `--timeout` seconds per request.

    inspect's `timeout` is the budget of the whole retry loop, checked only between
    attempts, and the SDK is left at its own 600 s per request, so a held request hung far
    past `--timeout`. `attempt_timeout` cancels each attempt after `timeout` seconds (it is
    then retried up to `max_retries` times), and the loop's budget covers those attempts
    plus inspect's back-off between them.
    """
    return {"attempt_timeout": timeout, "timeout": timeout * (max_retries + 1) + 30 * max_retries}


# Checks that must pass before a result is committed (a run directory renamed into place, a
# result file written): a `recorded/` model with unanswered requests registers one, so that
# nothing partial is written (compaction.recorded.check_complete). Registered, not imported:
# this layer is below the model code.
COMMIT_CHECKS: list[Callable[[Path], None]] = []


def run_commit_checks(path: Path) -> None:
    """Raise (a ContractError) when a registered check says `path` must not be committed."""
    for check in COMMIT_CHECKS:
        check(Path(path))


@contextmanager
def staged_run_dir(final: Path) -> Iterator[Path]:
    """A temporary directory that becomes `final` when the block succeeds.

    The run's lock (`run_lock`) is held throughout. On any exception the temporary
    directory is removed and `final` is untouched.
    """
    final = Path(final)
    check_run_name(final.name)
    with run_lock(final):
        if final.exists():
            raise ContractError([Problem(str(final), "", "run directory already exists: choose another --run name")])
        staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
        try:
            yield staging
            run_commit_checks(final)
            os.replace(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# What every file written here goes through. The credential values of the environment are
# always replaced (contracts.credentials); a redacting model session (`--redact`,
# compaction.session) adds its redaction of secret shapes, for text and for JSON data, so a
# command added later writes redacted files by writing through here.
_REDACT_TEXT: Callable[[str], str] | None = None
_REDACT_DATA: Callable[[Any], Any] | None = None


def set_write_redaction(text: Callable[[str], str] | None, data: Callable[[Any], Any] | None) -> None:
    """Redact every text (`text`) and JSON document (`data`) written from now on (None: stop)."""
    global _REDACT_TEXT, _REDACT_DATA
    _REDACT_TEXT, _REDACT_DATA = text, data


def clean_text(text: str) -> str:
    """`text` as it may be written: credentials replaced, redacted when the session redacts."""
    if _REDACT_TEXT is not None:
        text = _REDACT_TEXT(text)
    return scrub_credentials(text)


def clean_data(data: Any) -> Any:
    """A JSON document as it may be written (redacted value by value: the encoding stays valid)."""
    return _REDACT_DATA(data) if _REDACT_DATA is not None else data


def write_text_atomic(path: Path, text: str | Iterable[str], *, cleaned: bool = False) -> None:
    """Write text (one string, or its pieces in order) to a temp file in the same
    directory, then rename over `path`.

    The text is cleaned first (`clean_text`; pieces are joined for that, unless the caller
    says they are `cleaned` already). The file gets the mode of a normally created file
    (0644 under the usual umask), not the 0600 of a temporary file: reports and results are
    meant to be shared.
    """
    path = Path(path)
    if not cleaned:
        text = clean_text(text if isinstance(text, str) else "".join(text))
    if path.is_dir():  # `--markdown DIR`, `report --out DIR`: one located line, not IsADirectoryError
        raise ContractError([Problem(str(path), "", "is a directory: name a file to write")])
    ensure_directory(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                fh.writelines(text)
        os.chmod(tmp, 0o666 & ~_umask())
        run_commit_checks(path)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _dumps(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)


class SpooledList:
    """A list of a JSON document kept on disk while it grows: each item is encoded when it
    is appended (exactly as `write_json_atomic` would encode it inside a top-level key), so
    a run holds none of its items in memory. Put it as a top-level value of the document
    given to `write_json_atomic`; the file written is byte for byte the one the same items
    in a list would give. A temp file in `folder`, removed by `close`."""

    def __init__(self, folder: Path) -> None:
        self._file = tempfile.TemporaryFile(mode="w+", encoding="utf-8", dir=folder)
        self.count = 0

    def append(self, item: Any) -> None:
        # Items sit two levels deep (document, key); a JSON string never holds a raw
        # newline, so every newline of the encoding starts a line to indent.
        encoded = clean_text(_dumps(clean_data(item)))
        self._file.write((",\n  " if self.count else "  ") + encoded.replace("\n", "\n  "))
        self.count += 1

    def __len__(self) -> int:
        return self.count

    def chunks(self, size: int = 1 << 20) -> Iterator[str]:
        """The encoded items, `[` to `]`, as `json.dumps(..., indent=1)` writes a top-level list."""
        if not self.count:
            yield "[]"
            return
        self._file.flush()
        self._file.seek(0)
        yield "[\n"
        while chunk := self._file.read(size):
            yield chunk
        yield "\n ]"

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> SpooledList:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON atomically (see write_text_atomic); NaN and Infinity are refused.
    Top-level `SpooledList` values are copied from their files, not held as text."""
    if not (isinstance(data, dict) and any(isinstance(v, SpooledList) for v in data.values())):
        write_text_atomic(path, clean_text(_dumps(clean_data(data)) + "\n"), cleaned=True)
        return
    # Each spooled list is encoded as a unique placeholder string, then spliced in (its items
    # were cleaned as they were spooled).
    marks = {key: f"\x00spooled {key} {uuid.uuid4().hex}" for key, v in data.items() if isinstance(v, SpooledList)}
    text = clean_text(_dumps(clean_data({k: marks.get(k, v) for k, v in data.items()})) + "\n")

    def pieces() -> Iterator[str]:
        rest = text
        for key, mark in marks.items():
            before, rest = rest.split(json.dumps(mark), 1)
            yield before
            yield from data[key].chunks()
        yield rest

    write_text_atomic(path, pieces(), cleaned=True)


LOGS_DIR = "logs"  # under --out: inspect's logs of every run, kept whether the run failed or not


def kept_log_dir(run_dir: Path) -> Path:
    """Where inspect writes the logs of the run `run_dir`: `<out>/logs/<run>/`, outside the
    staged run directory, so a failed run keeps its log for `inspect view` and `eval-retry`."""
    run_dir = Path(run_dir)
    return run_dir.parent / LOGS_DIR / run_dir.name


def adopt_log(log: str | Path, into: Path) -> Path:
    """A log file also inside a (staged) run directory: hard-linked, copied across devices."""
    src = Path(str(log).removeprefix("file://"))
    into.mkdir(parents=True, exist_ok=True)
    dst = into / src.name
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def read_results(run_dir: Path | str) -> dict[str, Any]:
    """Read a run's results.json, checking its schema, types and ranges (`validate_results`).

    Every problem is a ContractError naming the file and the place (`samples[3].recall`):
    a hand-edited or corrupted file never reaches the gate or the report as a TypeError.
    """
    from compaction_eval.contracts.traces import parse_json_text

    path = Path(run_dir)
    path = path / RESULTS_FILE if path.is_dir() else path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "results file not found")]) from None
    except UnicodeDecodeError as exc:
        raise ContractError([Problem(str(path), f"byte {exc.start}", "not UTF-8 text")]) from None
    except OSError as exc:
        raise ContractError([Problem(str(path), "", f"cannot read: {exc.strerror or exc}")]) from None
    data = parse_json_text(text, str(path))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"not a {SCHEMA} file")])
    problems = validate_results(data, str(path))
    if problems:
        raise ContractError(problems)
    return data


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_results(data: dict[str, Any], where: str) -> list[Problem]:
    """Every way a results@1 document breaks the types and ranges the gate and the report
    rely on (empty when usable). Unknown keys are allowed (the contract grows)."""
    problems: list[Problem] = []

    def bad(place: str, message: str) -> None:
        problems.append(Problem(where, place, message))

    def share(value: Any, place: str, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not _is_num(value) or not 0.0 <= value <= 1.0:
            bad(place, f"{value!r} is not a number between 0 and 1")

    def interval(value: Any, place: str) -> None:
        if value is None:
            return
        if not isinstance(value, list) or len(value) != 2 or not all(_is_num(v) for v in value):
            bad(place, "must be [low, high], two finite numbers")

    for key, kind in (("model", str), ("config", dict), ("corpus", dict)):
        if key in data and data[key] is not None and not isinstance(data[key], kind):
            bad(key, f"must be a {'string' if kind is str else 'JSON object'}")
    samples = data.get("samples")
    if not isinstance(samples, list):
        bad("samples", "missing or not a list")
        samples = []
    for i, s in enumerate(samples):
        here = f"samples[{i}]"
        if len(problems) >= 20:
            break
        if not isinstance(s, dict):
            bad(here, "must be a JSON object")
            continue
        for key in ("trace", "prompt"):
            if not isinstance(s.get(key), str) or not s.get(key):
                bad(f"{here}.{key}", "missing or not a non-empty string")
        point = s.get("point")
        if not isinstance(point, int) or isinstance(point, bool) or point < 0:
            bad(f"{here}.point", f"{point!r} is not a message index")
        epoch = s.get("epoch", 1)
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            bad(f"{here}.epoch", f"{epoch!r} is not a positive integer")
        share(s.get("recall"), f"{here}.recall")
        for key in ("precision", "context_recall"):
            share(s.get(key), f"{here}.{key}", optional=True)
        by_cat = s.get("recall_by_category", {})
        if not isinstance(by_cat, dict):
            bad(f"{here}.recall_by_category", "must be a JSON object")
        else:
            for cat, value in by_cat.items():
                share(value, f"{here}.recall_by_category.{cat}")
        facts = s.get("facts")
        if not isinstance(facts, list):
            bad(f"{here}.facts", "missing or not a list")
            continue
        for j, f in enumerate(facts):
            fplace = f"{here}.facts[{j}]"
            if not isinstance(f, dict):
                bad(fplace, "must be a JSON object")
                continue
            if not isinstance(f.get("id"), str) or not f.get("id"):
                bad(f"{fplace}.id", "missing or not a non-empty string")
            if not isinstance(f.get("kept"), bool):
                bad(f"{fplace}.kept", f"{f.get('kept')!r} is not true or false")
            if "category" in f and not isinstance(f["category"], str):
                bad(f"{fplace}.category", "must be a string")
            if "critical" in f and not isinstance(f["critical"], bool):
                bad(f"{fplace}.critical", "must be true or false")
            if "probability" in f:
                share(f["probability"], f"{fplace}.probability", optional=True)
        if not isinstance(s.get("avoid", []), list):
            bad(f"{here}.avoid", "must be a list")
    prompts = data.get("prompts", [])
    if not isinstance(prompts, list):
        bad("prompts", "must be a list")
        prompts = []
    for i, p in enumerate(prompts):
        here = f"prompts[{i}]"
        if not isinstance(p, dict):
            bad(here, "must be a JSON object")
            continue
        if not isinstance(p.get("prompt"), str) or not p.get("prompt"):
            bad(f"{here}.prompt", "missing or not a non-empty string")
        share(p.get("recall"), f"{here}.recall", optional=True)
        share(p.get("precision"), f"{here}.precision", optional=True)
        for key, value in p.items():
            if key.endswith("_ci"):
                interval(value, f"{here}.{key}")
            elif isinstance(value, float) and not math.isfinite(value):
                bad(f"{here}.{key}", f"{value!r} is not a finite number")
    return problems


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal counts as alive)."""
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
        if pid is not None and pid != os.getpid() and pid_alive(pid):
            continue
        shutil.rmtree(stale, ignore_errors=True)
        removed.append(stale)
    return removed
