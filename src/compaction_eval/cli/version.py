"""`compaction-eval --version` (the lead wires `add_version_flag(parser)` into cli/main.py)."""

from __future__ import annotations

import argparse
import sys


def version_string() -> str:
    """`compaction-eval X (inspect-ai Y, Python Z)` from the installed distributions' metadata
    (cheap: nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    py = ".".join(map(str, sys.version_info[:3]))
    return f"compaction-eval {installed('compaction-eval')} (inspect-ai {installed('inspect-ai')}, Python {py})"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_string())
        parser.exit()


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """Add `--version` to the top-level parser (prints and exits 0)."""
    parser.add_argument("--version", action=_VersionAction, help="print the version of compaction-eval and inspect-ai and exit")


if __name__ == "__main__":  # `python -m compaction_eval.cli.version`
    print(version_string())
