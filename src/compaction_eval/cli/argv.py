"""Subcommand-safe argument lists: a subcommand name typed after a many-valued option is the
subcommand, not one more value.

argparse lets `--labels a b` (nargs="+") take every word that follows, so in
`corpus --traces t --labels l export --format hf OUT` the word `export` becomes a labels path
and `--format hf` then fails on `corpus`'s own `--format`. Here such a subcommand word is moved
to just after its command, the command's options after the subcommand's words
(`corpus export --format hf OUT --traces t --labels l`), where the subcommand's own parser
reads every option (a subcommand repeats the options of its command it
uses: argparse would otherwise reset them to the subcommand's defaults). A path that happens to
be spelled like a subcommand is written `./export`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _many_valued(parser: argparse.ArgumentParser) -> set[str]:
    """Option strings of `parser` that take a variable number of values."""
    return {s for a in parser._actions if a.option_strings and a.nargs in ("+", "*", argparse.REMAINDER) for s in a.option_strings}


def _single_valued(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions if a.option_strings and a.nargs not in ("+", "*", 0) and not _is_flag(a) for s in a.option_strings}


def _is_flag(action: argparse.Action) -> bool:
    return action.nargs == 0


def subcommand_safe(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """`argv` with any subcommand word that follows a many-valued option's values moved to just
    after its command, at every level of nested subcommands; everything else unchanged."""
    args = list(argv)
    level, start = parser, 0
    while True:
        sub = _subparsers(level)
        if sub is None:
            return args
        # the command word of this level: the first word that is one of its choices
        at = next((i for i in range(start, len(args)) if args[i] in sub.choices), None)
        if at is None:
            return args
        command = sub.choices[args[at]]
        inner = _subparsers(command)
        if inner is not None:
            many, single = _many_valued(command), _single_valued(command)
            in_values = False
            for i in range(at + 1, len(args)):
                word = args[i]
                if word == "--":
                    break
                if word.startswith("-") and word != "-":
                    name = word.split("=", 1)[0]
                    in_values = name in many and "=" not in word
                    if name in single and "=" not in word:
                        in_values = False
                    continue
                if in_values and word in inner.choices:
                    # the subcommand and what follows it first, the command's options last
                    # (still before a `--`), so no many-valued option takes a positional
                    before, after = args[at + 1:i], args[i:]
                    end = after.index("--") if "--" in after else len(after)
                    args = [*args[:at + 1], *after[:end], *before, *after[end:]]
                    break
                if not in_values and i > at + 1 and args[i - 1].split("=", 1)[0] in single:
                    continue  # the value of a one-valued option
                if not in_values and word in inner.choices:
                    break  # already where argparse finds it
        level, start = command, at + 1
