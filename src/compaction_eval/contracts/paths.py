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

from collections.abc import Iterable
from pathlib import Path

# kind -> the default name (relative to a project directory or to the package data)
DEFAULTS = {
    "traces": "fixtures/traces",
    "labels": "labels",
    "prompts": "prompts",
    "gold": "labels/gold",
}
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
    return name if name in DEFAULTS.values() else None


def resolve_input(path: Path | str, cwd: Path | None = None) -> Path:
    """One input path: a default name outside a project means the package's copy; anything
    else (including default names inside a project) is used as given."""
    name = _default_name(path)
    if name is None or project_dir(cwd) is not None:
        return Path(path)
    return package_data() / name


def resolve_inputs(paths: Iterable[Path | str] | None, kind: str | None = None, cwd: Path | None = None) -> list[Path]:
    """Input paths with default names resolved; no paths at all means the default of `kind`
    (`traces`, `labels`, `prompts` or `gold`)."""
    given = list(paths or [])
    if not given:
        if kind is None:
            return []
        given = [DEFAULTS[kind]]
    return [resolve_input(p, cwd) for p in given]


def default_input(kind: str, cwd: Path | None = None) -> Path:
    """Where the default input of `kind` is for this working directory."""
    return resolve_input(DEFAULTS[kind], cwd)
