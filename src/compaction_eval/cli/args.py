"""argparse `type=` functions for checks that can only be made on the raw argument.

For the lead, to wire into cli/main.py (which helpers must not edit):
- `--run` of `run`, `recall`, `horizon`: `type=run_name` (an absolute `--run /tmp/x` is
  invisible once joined to `--out`; `run_recall` also refuses `..` itself).
- `labels draft`: add `--force` and call `corpus.drafting.write_draft(trace, point, out, force=args.force)`.
- `baseline save`: add `--force` and pass `force=args.force` to `gate.baselines.save_baseline`.
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

# Also for the lead (cli/main.py):
# - `score --summary FILE`: read it with `contracts.runfiles.read_text_input(args.summary)`
#   (a directory or binary summary is then a located one-line error, not IsADirectoryError).
# - `report`: add `--allow-setting-changes` and pass it to `render_report(...)`.
