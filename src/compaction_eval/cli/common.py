"""What several commands share: default inputs, the run directory, located errors, `-M` args."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from compaction_eval.cli.progress import add_output_args
from compaction_eval.contracts.paths import DEFAULTS
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import (
    COMPACTION_FIELDS,
    DEFAULT_AGENT,
    DEFAULT_BUDGET,
    DEFAULT_KEEP_LAST,
    DEFAULT_MODEL,
    DEFAULT_SHAPE,
    CompactionSettings,
)

DEFAULT_TRACES = list(DEFAULTS["traces"])
DEFAULT_LABELS = list(DEFAULTS["labels"])
DEFAULT_PROMPTS = list(DEFAULTS["prompts"])
STATE_DIR = Path(".compaction-eval")


def keep_inspect_local() -> None:
    """Keep inspect's logs and matplotlib's state under the working directory, and the model
    caches in the user cache directory (`compaction.cachefiles`), never in the working tree.

    inspect writes ./logs, ~/.cache/inspect_ai and ~/.local/share/inspect_ai by default,
    matplotlib ~/.config/matplotlib; a user's own settings win. The generate cache is pickle:
    a checkout must not be able to supply it, so it is not kept under `./.compaction-eval/`.
    """
    from compaction_eval.compaction.cachefiles import INSPECT_SUBDIR, default_cache_root

    base = STATE_DIR.resolve()
    cache = default_cache_root()
    os.environ.setdefault("INSPECT_CACHE_DIR", str(cache / INSPECT_SUBDIR))
    os.environ.setdefault("XDG_DATA_HOME", str(base / "data"))
    os.environ.setdefault("XDG_CACHE_HOME", str(cache / "xdg"))
    os.environ.setdefault("INSPECT_LOG_DIR", str(base / "logs"))
    os.environ.setdefault("MPLCONFIGDIR", str(base / "matplotlib"))


def whole(least: int) -> Callable[[str], int]:
    """An argparse `type`: a whole number, at least `least` (checked with every other numeric
    flag by `check_number_flags`, so `--timeout -5`, `--max-traces 0` and `--max-retries -3`
    are one located line, exit 2, in every command)."""

    def parse(text: str) -> int:
        return int(text)

    parse.__name__ = "whole number"
    parse.least = least  # type: ignore[attr-defined]
    return parse


def share(text: str) -> float:
    """An argparse `type`: a number, which `check_number_flags` requires to be finite and in
    0-1 (`--tolerance nan` passed every regression: no comparison with NaN is true)."""
    return float(text)


share.__name__ = "number"


def check_number_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every `whole`/`share` flag of the command that was run, in range (ContractError naming
    the flag otherwise). Flags of the compaction settings (`--budget`, `--keep-last`) keep
    their own check (contracts.settings.CompactionSettings)."""
    current = parser
    while True:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        chosen = subs[0].choices.get(name) if isinstance(name, str) else None  # a dest may be reused (`requests export -- COMMAND`)
        if chosen is None:
            break
        current = chosen
    for action in current._actions:
        value = getattr(args, action.dest, None)
        if value is None or not action.option_strings:
            continue
        flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        for v in value if isinstance(value, list) else [value]:
            least = getattr(action.type, "least", None)
            if least is not None and isinstance(v, int) and v < least:
                raise ContractError([Problem(flag, "", f"{v!r} is not valid: must be at least {least}")])
            if action.type is share and isinstance(v, float) and not (math.isfinite(v) and 0.0 <= v <= 1.0):
                raise ContractError([Problem(flag, "", f"{v!r} is not valid: must be a finite number between 0 and 1")])


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if c != 0x09}


def terminal_safe(text: str) -> str:
    r"""`text` with control characters shown as hex escapes (ESC as `\x1b`): a name from a trace, a label or a file
    name (ESC sequences, BEL) must not drive the terminal it is printed on."""
    return text.translate(_CONTROL)


def error(message: str, code: int = 2) -> int:
    """Print one error line and return the exit code."""
    print(f"compaction-eval: error: {terminal_safe(message)}", file=sys.stderr)
    return code


def model_args(pairs: list[str] | None) -> dict:
    """`-M key=value` pairs as a dict (values as YAML scalars: 1 is an int, true a bool)."""
    import yaml

    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ContractError([Problem("-M", "", f"expected KEY=VALUE, got {pair!r}")])
        out[key.strip()] = yaml.safe_load(value)
    return out


class DeprecatedSpelling(argparse.Action):
    """An old spelling of an option: it still works, and says on stderr which to use."""

    def __init__(self, option_strings, dest, *, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"compaction-eval: warning: {option_string} is deprecated: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_model_args(p: argparse.ArgumentParser, *, old_model: tuple[str, ...] = ()) -> None:
    """`--model`: the compaction model, the one meaning of `--model` in every command."""
    p.add_argument("--model", default=DEFAULT_MODEL, help="compaction model (default: the offline extractive summariser, a stand-in)")
    for old in old_model:
        p.add_argument(old, dest="model", action=DeprecatedSpelling, new="--model")


def add_agent_model_arg(p: argparse.ArgumentParser, *, old: tuple[str, ...] = ("--agent",)) -> None:
    """`--agent-model`: the long-horizon agent, wherever a command runs one (`--agent`, its
    old spelling, still works with a warning)."""
    p.add_argument("--agent-model", dest="agent", default=DEFAULT_AGENT,
                   help="the long-horizon agent model (default: the offline scripted agent, not an LLM)")
    for spelling in old:
        p.add_argument(spelling, dest="agent", action=DeprecatedSpelling, new="--agent-model")


def compaction_settings(args: argparse.Namespace, **defaults: object) -> CompactionSettings:
    """The command's one `CompactionSettings`, built from its flags (`--budget`, `--keep-last`,
    `--shape`, `--focus`: those it has); a setting without a flag takes `defaults`, else the
    settings' own default. Bad values are a ContractError naming the flag."""
    given = {name: getattr(args, name) for name in COMPACTION_FIELDS if getattr(args, name, None) is not None}
    return CompactionSettings(**{**defaults, **given})  # type: ignore[arg-type]


def run_dir(args: argparse.Namespace) -> Path:
    """`--out/--run`, the run name defaulting to a timestamp and checked before anything is
    written (`../x`, `/abs` and `.hidden` are refused: contracts.runfiles.check_run_name)."""
    from compaction_eval.contracts.runfiles import run_directory

    if not args.run:  # chosen once, so that later steps of the command (--history) find the same run
        args.run = datetime.now().strftime("%Y%m%d-%H%M%S")
    return run_directory(args.out, args.run)


def add_recall_args(p: argparse.ArgumentParser) -> None:
    """Options of the fact-recall suite (shared by `recall` and `run`)."""
    p.add_argument("--traces", nargs="+", help="trace files or directories, a directory with one level of source subfolders, or hf:DATASET (default: fixtures/traces fixtures/real)")
    p.add_argument("--labels", nargs="+", help="labels files or directories (DIR#N: at most N labelled traces per source), or hf:DATASET (default: labels labels/real#2)")
    p.add_argument("--prompts", nargs="+", help="prompt templates or directories (default: prompts)")
    add_model_args(p)
    p.add_argument("--judge-model", help="LLM judge: it decides every fact (the judge tier; the matcher stays beside it as a cross-check). Without it the offline matcher tier decides")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"summary budget in tokens (default: {DEFAULT_BUDGET})")
    p.add_argument("--keep-last", type=int, default=DEFAULT_KEEP_LAST, help=f"messages kept verbatim at the end (default: {DEFAULT_KEEP_LAST})")
    p.add_argument("--shape", choices=["inline", "messages"], default=DEFAULT_SHAPE, help="span in the prompt, or as messages with the instruction last")
    p.add_argument("--focus", help="focus instruction passed to every prompt")
    p.add_argument("--epochs", type=whole(1), default=1, help="repeats per sample (real models)")
    p.add_argument("--points", nargs="+", metavar="TRACE@AT", default=[],
                   help="only these samples (labelled points), e.g. the points a recording answers; default: every labelled point")
    p.add_argument("--out", default="results", help="parent directory of run directories (default: results)")
    p.add_argument("--run", help="run name (default: a timestamp)")
    p.add_argument("--redact", action="store_true", help="replace secret-looking strings in traces before anything is sent to a model")
    p.add_argument("--batch", action="store_true", help="use the provider's batch mode (real models)")
    p.add_argument("-M", "--model-arg", action="append", metavar="KEY=VALUE", help="model argument (part of the generate-cache scope)")
    p.add_argument("--max-retries", type=whole(0), default=4, help="retries per model call (default: 4; inspect's default is unbounded)")
    p.add_argument("--timeout", type=whole(1), default=120, help="seconds per model request (default: 120)")
    add_output_args(p)
