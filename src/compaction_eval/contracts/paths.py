"""Where the default inputs are: the project directory when there is one, the package's own
data otherwise.

The default inputs have names (`prompts`, `fixtures/traces`, `labels`, `labels/gold`). In a
project directory (the working directory holds `prompts/`, `fixtures/` or `labels/`) a
name means that folder of the project, as it always did. Anywhere else (an empty directory,
CI outside a checkout) it means the copy shipped inside the package, so that
`compaction-eval run` works from any directory after `pip install`. Any other path is the
user's and is used as given. This module is the one home of that rule: every command reads
its default inputs through `resolve_inputs`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# kind -> the default names (relative to a project directory or to the package data).
# The default corpus is the synthetic one plus a fixed subset of the real one: `#2` keeps at
# most two labelled traces per source (corpus.load.per_source_limit), so `run` stays fast.
DEFAULTS: dict[str, tuple[str, ...]] = {
    "traces": ("fixtures/traces", "fixtures/real"),
    "labels": ("labels", "labels/real#2"),
    "prompts": ("prompts",),
    "gold": ("labels/gold",),
}
# Every command that reads a corpus (run, recall, the inspect tasks, tune, replay, decay,
# probes, evals/fact_recall.py) defaults to this one; a command that wants a smaller one
# (a tune loop, the small replay inside `run`) says so with its own flags.
_NAMES = {n.partition("#")[0] for names in DEFAULTS.values() for n in names}
PROJECT_MARKERS = ("prompts", "fixtures", "labels")


def package_data() -> Path:
    """The data shipped in the package (a mirror of the repository's default inputs)."""
    return Path(__file__).resolve().parent.parent / "data"


def project_dir(cwd: Path | None = None) -> Path | None:
    """The working directory when it is a project (holds prompts/, fixtures/ or labels/)."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    return cwd if any((cwd / m).is_dir() for m in PROJECT_MARKERS) else None


def _default_name(path: Path | str) -> str | None:
    """The default name `path` spells (`./labels/` is `labels`), or None."""
    p = Path(path)
    if p.is_absolute():
        return None
    name = p.as_posix()
    return name if name in _NAMES else None


def split_selector(path: Path | str) -> tuple[str, str]:
    """`labels/real#2` -> (`labels/real`, `#2`); anything else -> (path, "")."""
    text = str(path)
    base, sep, n = text.rpartition("#")
    return (base, sep + n) if sep and base and n.isdigit() else (text, "")


def resolve_input(path: Path | str, cwd: Path | None = None) -> Path:
    """One input path: a default name outside a project means the package's copy; anything
    else (including default names inside a project) is used as given."""
    base, selector = split_selector(path)
    name = _default_name(base)
    if name is None or project_dir(cwd) is not None:
        return Path(path)
    return Path(f"{package_data() / name}{selector}")


def resolve_inputs(paths: Iterable[Path | str] | None, kind: str | None = None, cwd: Path | None = None) -> list[Path]:
    """Input paths with default names resolved; no paths at all means the default of `kind`
    (`traces`, `labels`, `prompts` or `gold`)."""
    given = list(paths or [])
    if not given:
        if kind is None:
            return []
        given = list(DEFAULTS[kind])
    return [resolve_input(p, cwd) for p in given]


def default_input(kind: str, cwd: Path | None = None) -> Path:
    """Where the (first) default input of `kind` is for this working directory."""
    return resolve_input(DEFAULTS[kind][0], cwd)


def from_invocation_dir(path: Any) -> Any:
    """A relative `-T` path read from the directory `inspect eval` was started in: inspect
    creates tasks from a file with that file's folder as working directory, and the shell's
    $PWD still names where the user was."""
    if isinstance(path, (list, tuple)):
        return [from_invocation_dir(x) for x in path]
    p = Path(path)
    if p.is_absolute():
        return path
    start = os.environ.get("PWD")
    base = Path(start) if start and Path(start).is_dir() else Path.cwd()
    return str(base / p)
