"""Trends over nights, and the drift alarm.

A series is one figure (a prompt's recall, or its recall on one category) over the runs that
measured it, oldest first. It is cut into segments where the corpus, the settings, the model
or a tier changed: a trend across such a break compares different things, so neither the
chart nor the alarm draws one.

The alarm (`check`) rings when the latest night is part of a slide: from some night on, every
comparable night's 95% interval lies wholly below the mean of the comparable nights before
that first one (`slide`). It names the first night.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from compaction_eval.history.store import Run, categories, runs, series_rows, subjects
from compaction_eval.stats.bootstrap import mean

SPARKS = "▁▂▃▄▅▆▇█"
BREAK = "│"
WINDOW = 7
MIN_RUNS = 3
_KEY_NAMES = ("corpus", "settings", "model", "answers tier", "verdicts tier")


@dataclass(frozen=True)
class Night:
    """One run's value of the figure."""

    run: Run
    value: float | None
    lo: float | None
    hi: float | None
    n: int | None
    segment: int
    breaks: tuple[str, ...] = ()  # what changed since the previous night (empty: comparable)


@dataclass
class Series:
    subject: str
    category: str  # '' for the whole prompt
    nights: list[Night] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.subject} / {self.category}" if self.category else self.subject


def what_changed(a: Run, b: Run) -> tuple[str, ...]:
    return tuple(name for name, x, y in zip(_KEY_NAMES, a.comparable_key, b.comparable_key, strict=True) if x != y)


def series(conn: sqlite3.Connection, subject: str, category: str = "", *, suite: str = "recall", metric: str = "recall") -> Series:
    """The figure over every run that measured it, with its comparable segments."""
    values = series_rows(conn, suite=suite, subject=subject, category=category, metric=metric)
    out = Series(subject, category)
    prev: Run | None = None
    segment = 0
    for run in runs(conn):
        if run.id not in values:
            continue
        changed = what_changed(prev, run) if prev is not None else ()
        if changed:
            segment += 1
        v, lo, hi, n = values[run.id]
        out.nights.append(Night(run, v, lo, hi, n, segment, changed))
        prev = run
    return out


def all_series(conn: sqlite3.Connection, *, prompt: str | None = None, category: str | None = None) -> list[Series]:
    """Whole-prompt recall for every prompt (or `prompt`), and each category's when asked."""
    out = []
    for subject in subjects(conn):
        if prompt is not None and subject != prompt:
            continue
        if category is None:
            out.append(series(conn, subject))
        else:
            cats = categories(conn, subject) if category == "all" else [category]
            out.extend(series(conn, subject, c) for c in cats)
    return out


def sparkline(nights: list[Night]) -> str:
    """One character per night on a 0-1 scale, `│` where a break makes nights incomparable."""
    chars = []
    for night in nights:
        if night.breaks:
            chars.append(BREAK)
        if night.value is None:
            chars.append(" ")
        else:
            chars.append(SPARKS[min(len(SPARKS) - 1, max(0, int(night.value * len(SPARKS))))])
    return "".join(chars)


@dataclass(frozen=True)
class Slip:
    """A figure whose latest night slipped below its comparable trailing nights."""

    subject: str
    category: str
    first: Night
    latest: Night
    baseline: float


def slide(s: Series, *, window: int = WINDOW, min_runs: int = MIN_RUNS) -> Slip | None:
    """The slide the latest night of `s` is in, or None when it has not slipped.

    A slide starting at night j: every night from j to the latest has its 95% interval wholly
    below the mean of the (at most `window`, at least `min_runs`) comparable nights before j.
    The earliest such j is the first night of the slide. A slide that began long ago and never
    recovered still rings: nobody has accepted it until the settings or the corpus change.
    """
    if not s.nights:
        return None
    latest = s.nights[-1]
    comparable = [n for n in s.nights if n.segment == latest.segment]
    idx = len(comparable) - 1
    for j in range(min_runs, idx + 1):
        before = [n.value for n in comparable[max(0, j - window):j] if n.value is not None]
        if len(before) < min_runs:
            continue
        base = mean(before)
        if all(n.hi is not None and n.hi < base for n in comparable[j:idx + 1]):
            return Slip(s.subject, s.category, comparable[j], latest, base)
    return None


def check(conn: sqlite3.Connection, *, prompt: str | None = None, window: int = WINDOW, min_runs: int = MIN_RUNS) -> list[Slip]:
    """Every prompt figure (whole and per category) whose latest night slipped."""
    found = []
    for s in all_series(conn, prompt=prompt, category=None) + all_series(conn, prompt=prompt, category="all"):
        hit = slide(s, window=window, min_runs=min_runs)
        if hit is not None:
            found.append(hit)
    return found
