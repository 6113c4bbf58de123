"""Progress on stderr, one bar over every suite a command runs, with an ETA; stdout is kept
for the tables or the one JSON document (`--format json`).

- Default: our bar (rich on a terminal; plain `progress:` lines about every 10% elsewhere,
  for CI logs), counting samples of every inspect task the command runs, through an inspect
  hook (`on_task_start` adds a task's samples, `on_sample_end` advances). inspect's own
  display is `none` then.
- `--display plain|rich|full|conversation`: inspect's own display instead of ours; inspect
  prints it (and its tracebacks and "Log:" lines) on stdout, so it is sent to stderr.
- `--quiet`: no progress at all (notes and errors still go to stderr).

The ETA is by samples: a suite whose samples are slower than the rest (long-horizon worlds)
makes it optimistic until those samples have run.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inspect_ai.util import DisplayType  # inspect is imported only when something runs

# inspect's own displays, for `--display`
DISPLAYS = ["none", "plain", "rich", "full", "conversation"]

_ACTIVE: RunProgress | None = None
_HOOK_REGISTERED = False


class RunProgress:
    """A sample counter across suites, drawn on stderr."""

    def __init__(self, enabled: bool = True, stream: Any = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.total = 0
        self.done = 0
        self.phase = ""
        self._announced: set[str] = set()
        self._started = time.monotonic()
        self._rich: Any = None
        self._task: Any = None
        self._last_step = -1
        self._printed: tuple[int, int] | None = None

    # -- counting
    def expect(self, n: int, task: str | None = None) -> None:
        """Add `n` samples to the total; with `task`, that task's own announcement (at its
        start) is not counted again (a suite whose size is known before it starts), nor a
        second `expect` of the same task (a suite told its size by its command and by itself).

        Plain lines are not printed here: a command adds up the sizes of its suites first, and
        the first line shows the whole total (a drawn bar is only updated)."""
        if task and task in self._announced:
            return
        self.total += max(0, int(n))
        if task:
            self._announced.add(task)
        if self._rich is not None:
            self._draw()

    def task_started(self, task: str, samples: int) -> None:
        # a task's name may carry its variant (long_horizon_eviction, long-horizon-eviction)
        if not any(task.replace("-", "_").startswith(a) for a in self._announced):
            self.total += samples
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def set_phase(self, text: str) -> None:
        self.phase = text
        self._draw(force=True)

    # -- drawing
    def eta_seconds(self) -> float | None:
        if not self.done or self.total <= self.done:
            return None if not self.done else 0.0
        elapsed = time.monotonic() - self._started
        return elapsed / self.done * (self.total - self.done)

    def line(self) -> str:
        pct = math.floor(100 * self.done / self.total) if self.total else 0  # never "100%" before the end
        eta = self.eta_seconds()
        eta_text = "?" if eta is None else _clock(eta)
        phase = f" [{self.phase}]" if self.phase else ""
        return (f"progress{phase}: {self.done}/{self.total} samples ({pct:.0f}%), "
                f"elapsed {_clock(time.monotonic() - self._started)}, ETA {eta_text}")

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, total=max(self.total, 1), completed=self.done,
                              description=self.phase or "samples")
            return
        step = math.floor(10 * self.done / self.total) if self.total else 0
        if force or step != self._last_step:
            self._last_step = step
            self._printed = (self.done, self.total)
            print(self.line(), file=self.stream, flush=True)

    def __enter__(self) -> RunProgress:
        global _ACTIVE
        if self.enabled:
            _register_hook()
            isatty = getattr(self.stream, "isatty", lambda: False)()
            if isatty:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )

                self._rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("samples"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                      console=Console(file=self.stream), transient=False)
                self._rich.start()
                self._task = self._rich.add_task("samples", total=max(self.total, 1))
            _ACTIVE = self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _ACTIVE
        _ACTIVE = None
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        elif self.enabled and exc[0] is None and self._printed != (self.done, self.total):
            print(self.line(), file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _register_hook() -> None:
    """An inspect hook feeding the active bar (registered once per process, inert when no
    bar is active)."""
    global _HOOK_REGISTERED
    if _HOOK_REGISTERED:
        return
    from inspect_ai.hooks import Hooks, SampleEnd, TaskStart, hooks

    @hooks(name="compaction_eval_progress", description="compaction-eval progress bar on stderr")
    class ProgressHooks(Hooks):
        def enabled(self) -> bool:
            return _ACTIVE is not None

        async def on_task_start(self, data: TaskStart) -> None:
            if _ACTIVE is not None:
                spec = data.spec
                epochs = (spec.config.epochs or 1) if spec.config else 1
                _ACTIVE.task_started(spec.task.rpartition("/")[2], (spec.dataset.samples or 0) * epochs)

        async def on_sample_end(self, data: SampleEnd) -> None:
            if _ACTIVE is not None:
                _ACTIVE.advance()

    _HOOK_REGISTERED = True
    _quiet_hook_banner()


def _quiet_hook_banner() -> None:
    """Load inspect's hooks now, with its stdout discarded: inspect announces enabled hooks
    once per process ("inspect_ai v0.3.285 - hooks enabled: 1 ...") on stdout, which a
    command's progress sends to stderr, where it reads like a warning. Our own hook is the
    reason it would print. (An inspect internal: when it moves, the banner shows again and
    nothing else changes.)"""
    import io

    try:
        from inspect_ai.hooks._startup import init_hooks
    except ImportError:  # pragma: no cover - a later inspect
        return
    with contextlib.redirect_stdout(io.StringIO()):
        init_hooks()


# ------------------------------------------------------------------ command-line options


def add_format_arg(p: argparse.ArgumentParser) -> None:
    """`--format text|json`: the one spelling of it on every command that prints a result."""
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="text tables, or one JSON document on stdout (everything else on stderr)")


def add_output_args(p: argparse.ArgumentParser, *, display: bool = True, fmt: bool = True) -> None:
    """`--format text|json`, `--quiet` and (for commands that run inspect) `--display`."""
    if fmt:
        add_format_arg(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output (notes and errors still go to stderr)")
    if display:
        p.add_argument("--display", choices=DISPLAYS, default=None,
                       help="inspect's own progress display instead of ours (sent to stderr)")


def inspect_display(args: argparse.Namespace) -> DisplayType:
    """The display inspect is given: its own only when asked for, else `none`."""
    if getattr(args, "quiet", False):
        return "none"
    return getattr(args, "display", None) or "none"


@contextlib.contextmanager
def progress(args: argparse.Namespace) -> Iterator[RunProgress]:
    """Our bar for this command (off under --quiet or an explicit --display), with anything
    inspect prints on stdout sent to stderr."""
    enabled = not getattr(args, "quiet", False) and getattr(args, "display", None) is None
    with contextlib.redirect_stdout(sys.stderr), RunProgress(enabled) as bar:
        yield bar


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "format", "text") == "json"


def json_safe(value: Any) -> Any:
    """NaN and infinities as null, so the document is strict JSON (jq, JSON.parse)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def emit_json(doc: dict[str, Any]) -> None:
    """The command's one JSON document on stdout."""
    import json

    sys.stdout.write(json.dumps(json_safe(doc), indent=1, ensure_ascii=False, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


def without_samples(rows: list[dict[str, Any]] | None, drop: tuple[str, ...] = ("samples",)) -> list[dict[str, Any]]:
    """Table rows without their per-sample detail (that stays in the results files)."""
    return [{k: v for k, v in r.items() if k not in drop} for r in rows or []]
