"""Fit the calibrated matcher on the tune part of the gold set, with grouped-by-trace
cross-validation, and write the model file.

    python -m compaction_eval.validation.refit [--gold labels/gold] [--out FILE] [--check]

Deterministic: the same gold gives the same file (liblinear-free lbfgs on a fixed feature
order, items in file order, coefficients rounded). `--check` compares with the existing file
and exits 1 when they differ. Only the tune part is used: summaries with `split: test` are
never read for fitting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compaction_eval.contracts.labels import EXACT_CATEGORIES
from compaction_eval.contracts.traces import parse_json_text
from compaction_eval.recall.matching.calibrated import (
    FEATURES,
    MODEL_PATH,
    Calibration,
    calibrated_kept,
    features,
    vector,
)
from compaction_eval.recall.matching.literal import SummaryText, literal_match
from compaction_eval.recall.matching.semantic import SemanticIndex
from compaction_eval.validation.matchers import GoldFile, load_gold, part_of

C = 1.0
"""Inverse regularisation strength of the logistic regression (round 2: 1 and 10 give the
same out-of-fold kappa by grouped CV on the tune part; the smaller keeps the weights modest)."""
VERSION = 4
FOLDS = 5


@dataclass
class Row:
    trace: str
    summary: str
    style: str
    part: str
    fact: str
    category: str
    gold: bool
    literal: bool
    x: list[float]
    rule_kept: bool = False


def rows(gold: Sequence[GoldFile]) -> list[Row]:
    """One row per judged fact, with its features (meaning categories) or literal verdict."""
    out: list[Row] = []
    for gf in gold:
        for s in gf.summaries:
            facts = gf.labels.expected(s.point)
            text = SummaryText(s.text)
            index = SemanticIndex(text, [f.text for f in facts])
            for r, fact in enumerate(facts):
                lit = literal_match(fact, text).kept
                feats = features(fact, r, index) if fact.category not in EXACT_CATEGORIES else None
                x = vector(feats) if feats else []
                out.append(Row(gf.trace, s.id, s.style, part_of(s.split), fact.id, fact.category,
                               s.facts[fact.id][0], lit, x, bool(feats and feats["rule_kept"])))
    return out


def _fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, solver="lbfgs", max_iter=2000, tol=1e-8)
    model.fit(X, y)
    return model.coef_[0], float(model.intercept_[0])


def _exact_rate(rs: Sequence[Row]) -> dict[str, float]:
    ex = [r for r in rs if r.category in EXACT_CATEGORIES]
    out = {}
    for name, lit in (("kept", True), ("lost", False)):
        sel = [r.gold for r in ex if r.literal == lit]
        out[name] = (sum(sel) + 1) / (len(sel) + 2)  # Laplace: never exactly 0 or 1
    return out


def fit(rs: Sequence[Row]) -> Calibration:
    tune = [r for r in rs if r.part == "tune"]
    meaning = [r for r in tune if r.category not in EXACT_CATEGORIES]
    X = np.asarray([r.x for r in meaning], dtype=float)
    y = np.asarray([r.gold for r in meaning], dtype=int)
    coef, intercept = _fit(X, y)
    digest = hashlib.sha256(json.dumps([[r.trace, r.summary, r.fact, r.gold] for r in tune]).encode()).hexdigest()[:16]
    return Calibration(
        tuple(float(c) for c in coef), intercept, _exact_rate(tune), VERSION,
        {"facts": len(tune), "meaning_facts": len(meaning), "traces": len({r.trace for r in tune}),
         "gold_digest": digest, "C": C},
    )


def cross_validated(rs: Sequence[Row]) -> list[tuple[Row, bool, float]]:
    """Out-of-fold (row, predicted kept, probability) on the tune part, folds grouped by
    trace: a trace's summaries are never scored by a model that saw that trace."""
    from sklearn.model_selection import GroupKFold

    tune = [r for r in rs if r.part == "tune"]
    groups = np.asarray([r.trace for r in tune])
    n_splits = min(FOLDS, len(set(groups)))
    out: dict[int, tuple[bool, float]] = {}
    for train_i, test_i in GroupKFold(n_splits=n_splits).split(np.zeros(len(tune)), groups=groups):
        cal = fit([tune[i] for i in train_i])
        for i in test_i:
            out[i] = decide(cal, tune[i])
    return [(tune[i], *out[i]) for i in range(len(tune))]


def decide(cal: Calibration, r: Row) -> tuple[bool, float]:
    if r.category in EXACT_CATEGORIES:
        return r.literal, cal.exact_probability(r.literal)
    p = cal.probability(dict(zip(FEATURES, r.x, strict=True)))
    return calibrated_kept(p, r.rule_kept), p


def write(cal: Calibration, path: Path) -> None:
    from compaction_eval.contracts.runfiles import write_json_atomic

    write_json_atomic(path, cal.to_json())


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m compaction_eval.validation.refit", description=__doc__.split("\n\n")[0])
    p.add_argument("--gold", default="labels/gold", help="gold directory (default labels/gold)")
    p.add_argument("--out", default=str(MODEL_PATH), help="model file to write (default: the packaged one)")
    p.add_argument("--check", action="store_true", help="do not write; exit 1 when the refit differs from --out")
    args = p.parse_args(argv)
    from compaction_eval.contracts.problems import ContractError

    try:
        cal = fit(rows(load_gold(args.gold)))
    except ContractError as exc:
        for prob in exc.problems:
            print(f"error: {prob}", file=sys.stderr)
        return 2
    new = cal.to_json()
    if args.check:
        old = parse_json_text(Path(args.out).read_text(encoding="utf-8"), str(Path(args.out))) if Path(args.out).is_file() else None
        if old != json.loads(json.dumps(new)):
            print(f"{args.out} differs from a refit on {args.gold}", file=sys.stderr)
            return 1
        print(f"{args.out} matches a refit on {args.gold}")
        return 0
    write(cal, Path(args.out))
    print(f"wrote {args.out}: {new['trained_on']}")
    return 0


def summary_table(results: Sequence[tuple[Row, bool, float]]) -> dict[str, Any]:
    """Kappa of out-of-fold verdicts: overall, by category, by style."""
    from compaction_eval.validation.matchers import agreement

    def agree(sel):
        return agreement([r.gold for r, _, _ in sel], [k for _, k, _ in sel])

    return {
        "overall": agree(results),
        "by_category": {c: agree([t for t in results if t[0].category == c]) for c in dict.fromkeys(t[0].category for t in results)},
        "by_style": {s: agree([t for t in results if t[0].style == s]) for s in dict.fromkeys(t[0].style for t in results)},
    }


if __name__ == "__main__":
    raise SystemExit(main())
