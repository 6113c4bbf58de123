"""Numbers given as flags are checked by the parser for NaN and range, in every command
(issue 24 item 6): `gate --tolerance nan` passed a 100% -> 0% drop, and `--max-traces 0/-1`,
`--timeout -5`, `--max-retries -3` were accepted by replay, decay and probes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from compaction_eval.cli.common import share
from compaction_eval.cli.main import build_parser


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


# checked by contracts.settings.CompactionSettings, with their own messages
SETTINGS_FLAGS = {"--budget", "--keep-last"}


def test_every_numeric_flag_of_every_command_is_range_checked():
    unchecked = [f"{' '.join(path)} {'/'.join(a.option_strings)}" for path, p in _parsers(build_parser()) for a in p._actions
                 if a.type in (int, float) and not SETTINGS_FLAGS & set(a.option_strings)]
    assert unchecked == [], "use cli.common.whole(least) or cli.common.share for these"
    checked = [a for _, p in _parsers(build_parser()) for a in p._actions if a.type is share or hasattr(a.type, "least")]
    assert len(checked) > 20


@pytest.mark.parametrize("argv", [
    ["gate", "--baseline", "x", "--candidate", "y", "--tolerance", "nan"],
    ["gate", "--baseline", "x", "--candidate", "y", "--category-tolerance", "inf"],
    ["replay", "--max-traces", "0"],
    ["decay", "--max-traces", "-1"],
    ["probes", "--timeout", "-5"],
    ["replay", "--max-retries", "-3"],
    ["recall", "--epochs", "0"],
    ["tune", "prompts/terse.j2", "--optimize", "--rounds", "0"],
])
def test_a_bad_number_is_one_line_and_exit_2_before_anything_runs(argv, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last == f"compaction-eval: error: {argv[-2]}: {argv[-1]} is not valid: must be " + (
        "a finite number between 0 and 1" if "tolerance" in argv[-2] else f"at least {1 if argv[-2] != '--max-retries' else 0}"), proc.stderr
    assert list(tmp_path.iterdir()) == []
