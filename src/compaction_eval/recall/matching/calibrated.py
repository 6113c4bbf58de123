"""Calibrated decision for meaning categories: features per (fact, summary) and a small
logistic regression fitted on the tune part of the gold set (labels/gold).

The rule matcher (`semantic.semantic_match`) gives its verdict and, run without a similarity
bar, the checks its best candidates fail; `features` turns those into numbers (key coverage,
best and second-best similarity, the similarity of the best candidate passing every check,
polarity / number / hedge / outcome / reason failures, a contradiction scan over every unit
that mentions the fact's keys, the fact's file named in another folder). `Calibration` holds
the fitted coefficients, read from a small versioned JSON file shipped in the package
(`calibration.json` beside this module: plain numbers, nothing executed on load). Refit with
`python -m compaction_eval.validation.refit` (deterministic: same gold, same file).

Exact categories (artifact, number, bug) stay decided by the literal rule; they only get a
probability (the tune part's rate of human "kept" given the literal verdict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from compaction_eval.contracts.labels import Fact
from compaction_eval.contracts.traces import parse_json_text
from compaction_eval.recall.matching.literal import SummaryText, match_key_sets, path_elsewhere
from compaction_eval.recall.matching.semantic import (
    HEDGE_CATEGORIES,
    SemanticIndex,
    SemanticResult,
    _attempt_outcome,
    _outcome_sign,
    changed_number,
    has_key,
    negation_conflict,
    semantic_match,
    weakened,
)

SCHEMA = "compaction-eval/matcher-calibration@1"
MODEL_PATH = Path(__file__).with_name("calibration.json")
MEANING_CATEGORIES = ("intent", "constraint", "decision", "attempt", "next_step")
UNCERTAIN_MARGIN = 0.2
"""A verdict whose probability is within this of 0.5 (0.3-0.7) is `uncertain`."""

ALL_FEATURES = (
    "rule_kept",
    "best_sim",
    "second_sim",
    "pass_sim",
    "key_sets_complete",
    "key_units",
    "fail_keys_in_unit",
    "fail_negated",
    "fail_number",
    "fail_weakened",
    "fail_outcome",
    "fail_reason",
    "fail_window",
    "contradicting_units",
    "path_elsewhere",
    "rule_contradiction",
)
"""Everything `features` computes (kept in results and notes for inspection)."""

FEATURES = (
    "key_sets_complete",
    "fail_negated",
    "fail_weakened",
    "fail_reason",
    "fail_number",
    "path_elsewhere",
    "rule_contradiction",
)
"""The model's inputs: key coverage plus the high-precision contradiction checks of the best
candidate unit (negated in the clause naming the keys, weakened constraint, reason lost or
swapped, changed number), a near-miss path, and whether the rule's own best candidate fails
one of those checks. Similarity features fit the summary styles they were tuned on and cost
the others (terse and prose summaries paraphrase with little word overlap), and category
indicators would learn the gold set's share of kept facts per category, so neither is an
input. How they were chosen, round by round: `labels/gold/README.md` and the README."""

_CONTRADICTION_NOTES = frozenset({"negated", "changed number", "weakened", "inverted outcome", "reason lost"})

def features(fact: Fact, row: int, index: SemanticIndex, rule: SemanticResult | None = None) -> dict[str, float]:
    """Features of one (fact, summary) pair, by name (`FEATURES`). `rule`: the rule
    matcher's result for this fact, when the caller already has it."""
    text: SummaryText = index.summary
    out = dict.fromkeys(ALL_FEATURES, 0.0)

    if not index.candidates:
        return out
    rule = rule or semantic_match(fact, row, index)
    out["rule_kept"] = float(rule.kept)
    sims = np.sort(index.sim[row])[::-1]
    out["best_sim"] = float(sims[0])
    out["second_sim"] = float(sims[1]) if len(sims) > 1 else 0.0
    complete = [ks for ks in fact.key_sets if match_key_sets(text, [ks], inflect=True)]
    out["key_sets_complete"] = float(bool(complete))
    keys = {k for ks in complete for k in ks} or {k for ks in fact.key_sets for k in ks}
    key_units = [i for i, u in enumerate(text.units_norm) if any(has_key(u, k, True) for k in keys)]
    out["key_units"] = min(len(key_units), 5) / 5
    loose = semantic_match(fact, row, index, threshold=0.0)
    if loose.kept:
        out["pass_sim"] = loose.similarity
    # the best candidate at the rule's bar fails a contradiction check (a weaker signal than
    # every candidate failing: that candidate may be another fact's unit)
    out["rule_contradiction"] = float(rule.note in _CONTRADICTION_NOTES)
    if not loose.kept:
        note = loose.note or ""
        flag = {
            "keys not in the matching unit": "fail_keys_in_unit",
            "the step's keys are not all in the matching unit": "fail_keys_in_unit",
            "negated": "fail_negated",
            "changed number": "fail_number",
            "weakened": "fail_weakened",
            "inverted outcome": "fail_outcome",
            "outcome lost": "fail_outcome",
            "reason lost": "fail_reason",
            "window spans another fact": "fail_window",
        }.get(note)
        if flag:
            out[flag] = 1.0
    out["contradicting_units"] = min(_contradictions(fact, text, key_units), 3) / 3
    out["path_elsewhere"] = float(path_elsewhere(fact.text, text.norm))
    return out


def _contradictions(fact: Fact, text: SummaryText, key_units: list[int]) -> int:
    """Units mentioning the fact's keys that negate it, hedge it (constraints), change its
    numbers or invert its outcome: the scan covers every such unit, not only the best one."""
    fact_sign = _outcome_sign(_attempt_outcome(fact.text, fact.category)) if fact.category in ("decision", "attempt") else 0
    n = 0
    for i in key_units:
        unit, norm = text.units[i], text.units_norm[i]
        if (
            negation_conflict(fact.text, unit)
            or changed_number(fact.text, [norm])
            or (fact.category in HEDGE_CATEGORIES and weakened(fact.text, norm))
            or (fact_sign and _outcome_sign(_attempt_outcome(norm, fact.category)) == -fact_sign)
        ):
            n += 1
    return n


def vector(feats: dict[str, float]) -> list[float]:
    return [float(feats[name]) for name in FEATURES]


@dataclass(frozen=True)
class Calibration:
    """A fitted model: logistic regression over `FEATURES` (meaning categories) and the
    tune part's kept rate per literal verdict (exact categories)."""

    coef: tuple[float, ...]
    intercept: float
    exact_rate: dict[str, float]
    version: int
    trained_on: dict[str, Any]

    def probability(self, feats: dict[str, float]) -> float:
        z = self.intercept + sum(c * x for c, x in zip(self.coef, vector(feats), strict=True))
        return 1.0 / (1.0 + math.exp(-z))

    def exact_probability(self, literal_kept: bool) -> float:
        return self.exact_rate["kept" if literal_kept else "lost"]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": self.version,
            "features": list(FEATURES),
            "coef": [round(c, 6) for c in self.coef],
            "intercept": round(self.intercept, 6),
            "exact_rate": {k: round(v, 6) for k, v in self.exact_rate.items()},
            "uncertain_margin": UNCERTAIN_MARGIN,
            "trained_on": self.trained_on,
        }


def load_calibration(path: Path | str = MODEL_PATH) -> Calibration:
    """Read a calibration file; a ContractError names the file and the problem."""
    from compaction_eval.contracts.problems import ContractError, Problem

    path = Path(path)
    try:
        data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except (OSError, ValueError) as exc:
        raise ContractError([Problem(str(path), "", f"cannot read calibration: {exc}")]) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"expected schema: {SCHEMA}")])
    if data.get("features") != list(FEATURES):
        raise ContractError([Problem(str(path), "features", "feature list differs from this version's; refit")])
    coef = data.get("coef")
    if not (isinstance(coef, list) and len(coef) == len(FEATURES) and all(isinstance(c, (int, float)) for c in coef)):
        raise ContractError([Problem(str(path), "coef", f"expected {len(FEATURES)} numbers")])
    rate = data.get("exact_rate") or {}
    if set(rate) != {"kept", "lost"}:
        raise ContractError([Problem(str(path), "exact_rate", "expected kept and lost rates")])
    return Calibration(tuple(float(c) for c in coef), float(data.get("intercept", 0.0)),
                       {k: float(v) for k, v in rate.items()}, int(data.get("version", 1)),
                       dict(data.get("trained_on") or {}))


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    return load_calibration(MODEL_PATH)


def calibrated_kept(probability: float, rule_kept: bool) -> bool:
    """The decision: the model's where it is confident, the rule's inside the uncertain band
    (a unit that negates the fact or inverts its outcome lands in the band, and there the
    rule's checks decide)."""
    if HYBRID and is_uncertain(probability):
        return rule_kept
    return probability >= 0.5


HYBRID = True


def is_uncertain(probability: float) -> bool:
    return abs(probability - 0.5) < UNCERTAIN_MARGIN


__all__ = [
    "ALL_FEATURES",
    "FEATURES",
    "MODEL_PATH",
    "UNCERTAIN_MARGIN",
    "Calibration",
    "default_calibration",
    "features",
    "is_uncertain",
    "load_calibration",
    "path_elsewhere",
]
