"""argparse `type=` functions for checks that can only be made on the raw argument.

`--run` of `run`, `recall`, `horizon`, `replay`: an absolute `--run /tmp/x` is invisible once
joined to `--out` (`run_recall` also refuses `..` itself).
"""

from __future__ import annotations

import argparse

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.runfiles import check_run_name


def run_name(value: str) -> str:
    """A run name: the same rule as `baseline save --name` (contracts.runfiles.check_run_name)."""
    try:
        return check_run_name(value)
    except ContractError as exc:
        raise argparse.ArgumentTypeError(exc.problems[0].message) from None
