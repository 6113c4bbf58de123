"""Blind rounds: the out-of-sample figure of each matcher freeze, kept after its test part
has joined the tune part.

A round's test part is measured once, with the matcher frozen, and then folded into the tune
part (its gold files get `split: roundN`) so that the next matcher learns from it. From then on
`validate-matchers` has no test part to measure until new traces are labelled and judged blind,
and the figure it can no longer compute is the one that matters. `blind-rounds.json` in the gold
directory keeps it as measured: the `headline.test` table of the validate-matchers result at the
freeze. Record a round with

    python -m compaction_eval.validation.rounds RESULT.json --round 5 --split round5 --frozen-at 31b9d4d

Reading checks a record against the gold set: a round whose split now holds another number of
fact judgments than it recorded is marked `stale`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import parse_json_text

SCHEMA = "compaction-eval/blind-rounds@1"
FILE_NAME = "blind-rounds.json"
_MEASURED = ("n", "traces", "kappa", "kappa_ci", "keys_kappa")
_SUMMARY = ("round", "split", "frozen_at", *_MEASURED)
"""What every round keeps (older rounds keep only this; newer ones add the whole `test` table)."""
_TEST_TABLE = ("n", "traces", "kappa", "kappa_ci", "keys_kappa", "keys_kappa_ci", "difference", "difference_ci",
               "false_keeps", "false_misses", "exact", "meaning")


def rounds_path(gold_dir: Path | str) -> Path:
    return Path(gold_dir) / FILE_NAME


def load_rounds(gold_dir: Path | str) -> list[dict[str, Any]]:
    """The recorded rounds, oldest first; none when the file is absent. A malformed file is
    a ContractError naming the file and the place."""
    path = rounds_path(gold_dir)
    if not path.is_file():
        return []
    try:
        data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except (OSError, ValueError) as exc:
        raise ContractError([Problem(str(path), "", f"cannot read blind rounds: {exc}")]) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("rounds"), list):
        raise ContractError([Problem(str(path), "schema", f"expected schema: {SCHEMA} with a list of rounds")])
    out = []
    for i, r in enumerate(data["rounds"]):
        place = f"rounds[{i}]"
        if not isinstance(r, dict):
            raise ContractError([Problem(str(path), place, "expected an object")])
        for key in _SUMMARY:
            if key not in r:
                raise ContractError([Problem(str(path), f"{place}.{key}", "missing")])
        if not (isinstance(r["round"], int) and isinstance(r["n"], int) and isinstance(r["kappa"], (int, float))):
            raise ContractError([Problem(str(path), place, "round and n must be integers, kappa a number")])
        if "test" in r and not (isinstance(r["test"], dict) and r["test"].get("n") == r["n"]
                                and all(k in r["test"] for k in _TEST_TABLE)):
            raise ContractError([Problem(str(path), f"{place}.test", "expected the round's test table (same n, "
                                         "the headline.test keys of a validate-matchers result)")])
        out.append(r)
    return sorted(out, key=lambda r: r["round"])


def with_gold_check(rounds: Sequence[dict[str, Any]], judgments_by_split: dict[str, int]) -> list[dict[str, Any]]:
    """Each round with `gold_n` (the gold set's fact judgments of its split now) and `stale`
    (None for a round whose files joined the general `tune` split: nothing to check)."""
    out = []
    for r in rounds:
        gold_n = judgments_by_split.get(r["split"], 0) if r["split"] else None
        out.append({**r, "gold_n": gold_n, "stale": None if gold_n is None else gold_n != r["n"]})
    return out


def round_members(r: dict[str, Any]) -> Callable[[str, str], bool] | None:
    """Which gold summaries were round `r`'s test part, by (split, trace): those of its split,
    or, for a round whose files joined the general tune split (round 1), those of the traces
    it lists in `trace_ids`. None when the record says neither."""
    if r.get("split"):
        return lambda split, trace: split == r["split"]
    ids = r.get("trace_ids")
    if isinstance(ids, list) and ids:
        traces = {str(t) for t in ids}
        return lambda split, trace: trace in traces
    return None


def last_measured(rounds: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The latest round recorded with its whole test table (and a split to find its summaries)."""
    measured = [r for r in rounds if "test" in r and r.get("split")]
    return measured[-1] if measured else None


def record_round(result: dict[str, Any], gold_dir: Path | str, *, round_no: int, split: str, frozen_at: str) -> Path:
    """Add (or replace) round `round_no` from a validate-matchers result measured at the
    freeze; written atomically."""
    from compaction_eval.contracts.runfiles import write_json_atomic

    test = (result.get("headline") or {}).get("test")
    if not (isinstance(test, dict) and all(k in test for k in _TEST_TABLE)):
        raise ContractError([Problem("result", "headline.test", "no test part in this result: measure at the freeze")])
    path = rounds_path(gold_dir)
    rounds = [r for r in load_rounds(gold_dir) if r["round"] != round_no]
    rounds.append({"round": round_no, "split": split, "frozen_at": frozen_at, **{k: test[k] for k in _MEASURED},
                   "test": test})
    write_json_atomic(path, {"schema": SCHEMA, "rounds": sorted(rounds, key=lambda r: r["round"])})
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compaction_eval.validation.rounds", description=__doc__.split("\n\n")[0])
    parser.add_argument("result", help="validate-matchers JSON result measured with the matcher frozen")
    parser.add_argument("--round", type=int, required=True, dest="round_no")
    parser.add_argument("--split", required=True, help="the split name its gold files get in the tune part (roundN)")
    parser.add_argument("--frozen-at", required=True, help="the commit (or version) of the frozen matcher")
    parser.add_argument("--gold", default="labels/gold")
    args = parser.parse_args(argv)
    try:
        result = parse_json_text(Path(args.result).read_text(encoding="utf-8"), str(Path(args.result)))
        path = record_round(result, args.gold, round_no=args.round_no, split=args.split, frozen_at=args.frozen_at)
    except (OSError, ValueError) as exc:
        print(f"{args.result}: {exc}", file=sys.stderr)
        return 2
    except ContractError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"recorded round {args.round_no} in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
