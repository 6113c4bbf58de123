"""Score one summary against the labels of one (trace, point): per-fact verdicts, recall,
precision, avoid items and distortions (DESIGN.md 4 and 5).

Two tiers decide the verdicts. The matcher tier (offline, free): exact categories (artifact,
number, bug) by the literal matcher, meaning categories by the calibrated semantic matcher. The
judge tier, when an LLM judge's verdicts are passed in: the judge decides every category it
answered, and the matcher's verdict stays beside it (`matcher_kept`) as a cross-check whose
disagreements are counted, not applied.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from compaction_eval.contracts.labels import EXACT_CATEGORIES, AvoidItem, Fact, Labels
from compaction_eval.contracts.traces import Trace
from compaction_eval.recall.matching.calibrated import (
    calibrated_kept,
    default_calibration,
    features,
    is_uncertain,
)
from compaction_eval.recall.matching.literal import (
    Distortion,
    SummaryText,
    find_key,
    invented,
    is_exact_key,
    literal_match,
    match_key_sets,
    missing_keys,
    near_misses,
    source_index,
)
from compaction_eval.recall.matching.semantic import (
    KEEP_THRESHOLD,
    RELEVANT_THRESHOLD,
    RELEVANT_WITH_KEY_THRESHOLD,
    SemanticIndex,
    has_key,
    negation_conflict,
    outcome,
    semantic_match,
)
from compaction_eval.stats.blas import one_blas_thread

if TYPE_CHECKING:  # the judge imports inspect; scoring does not need it
    from compaction_eval.recall.matching.judge import JudgeVerdict

JUDGE_TIER_FIELDS = ("matcher_kept", "quote_found", "contradiction", "keys_found", "judge_answered")
"""FactVerdict fields only the judge tier fills (absent from a matcher-tier verdict's JSON)."""

__all__ = ["AvoidVerdict", "Distortion", "FactScore", "FactVerdict", "SummaryScore", "relevant_unit_flags", "score_facts", "score_summary"]


@dataclass
class FactVerdict:
    """Whether one expected fact survived.

    Args:
        id, category, weight, critical: from the label.
        kept: the verdict.
        matcher: who decided: "literal" | "semantic" | "judge".
        tier: the tier that produced the verdict: "matcher" | "judge".
        evidence: the summary text that carries it (or, when not kept, the closest unit).
        similarity: the semantic similarity of the evidence (meaning categories).
        distortion: the kind of near miss found for this fact, if any.
        note: why a fact was not kept, or the judge's reason.
        matcher_kept: in the judge tier, the offline matcher's verdict (the cross-check;
            `probability` is its calibrated probability).
        quote_found, contradiction: in the judge tier, the recorded checks of the judge's
            quote (`matching.judge`): flags, not overrides.
        keys_found: in the judge tier, whether all keys of some key set occur (recorded; keys
            overrule no judge verdict either).
        judge_answered: in the judge tier, False when the judge gave no readable verdict for
            the fact (it is then not kept).
        probability: the calibrated probability that a careful reader would judge the fact
            kept (`recall.matching.calibrated`); for exact categories the tune part's rate
            given the literal verdict.
        uncertain: the probability is near 0.5 (`calibrated.UNCERTAIN_MARGIN`): a verdict
            worth a human look (`compaction-eval review`).
    """

    id: str
    category: str
    kept: bool
    matcher: str
    evidence: str | None
    weight: float
    critical: bool
    similarity: float | None = None
    distortion: str | None = None
    note: str | None = None
    probability: float | None = None
    uncertain: bool | None = None
    tier: str = "matcher"
    matcher_kept: bool | None = None
    quote_found: bool | None = None
    contradiction: bool | None = None
    keys_found: bool | None = None
    judge_answered: bool | None = None


@dataclass
class AvoidVerdict:
    """Whether content that must not survive (a secret, a superseded plan, noise) is present."""

    id: str
    reason: str
    present: bool
    evidence: str | None


@dataclass
class SummaryScore:
    """The score of one summary at one point.

    Args:
        recall: kept weight / expected weight (Fact.weight). 1.0 when nothing is expected;
            0.0 for a summary without units.
        recall_by_category: the same per category, for categories with expected facts.
        precision: relevant units / units; 0.0 for a summary without units.
        facts: one verdict per expected fact, in label order.
        avoid: one verdict per avoid item whose source is in the history.
        distortions: near misses of facts, then invented paths and numbers.
        critical_lost: ids of critical facts not kept.
        units: summary units (bullets, lines, sentences; headings and empty lines excluded).
        relevant_units: units that support some expected fact.
    """

    recall: float
    recall_by_category: dict[str, float]
    precision: float
    facts: list[FactVerdict]
    avoid: list[AvoidVerdict]
    distortions: list[Distortion]
    critical_lost: list[str]
    units: int
    relevant_units: int

    def to_json(self) -> dict[str, Any]:
        """DESIGN.md 5: recall, precision, facts, avoid, plus the finer fields."""
        return {
            "recall": round(self.recall, 4),
            "precision": round(self.precision, 4),
            "facts": [_fact_json(v) for v in self.facts],
            "avoid": [asdict(a) for a in self.avoid],
            "recall_by_category": {k: round(v, 4) for k, v in self.recall_by_category.items()},
            "distortions": [d.to_json() for d in self.distortions],
            "critical_lost": list(self.critical_lost),
            "units": self.units,
            "relevant_units": self.relevant_units,
        }


def _fact_json(v: FactVerdict) -> dict[str, Any]:
    out = asdict(v)
    if out["similarity"] is not None:
        out["similarity"] = round(out["similarity"], 4)
    for optional in ("probability", "uncertain", *JUDGE_TIER_FIELDS):  # optional fields (DESIGN.md 5): absent, not null
        if out[optional] is None:
            del out[optional]
    if out.get("probability") is not None:
        out["probability"] = round(out["probability"], 4)
    return out


def score_summary(
    summary: str,
    labels: Labels,
    trace: Trace,
    at: int,
    *,
    judged: dict[str, JudgeVerdict] | None = None,
) -> SummaryScore:
    """Score `summary`, the compaction of `trace.messages[0:at]`, against `labels`.

    Args:
        summary: the compacted text.
        labels: the trace's labels; only `labels.expected(at)` are scored.
        trace: the trace (its history tells invented paths and numbers from real ones).
        at: the compaction point.
        judged: verdicts of `matching.judge.judge_facts` by fact id; when given, each
            decides its fact, whatever the category (the judge tier); the matcher's verdict is
            kept beside it.

    A summary without units (empty, or headings only) keeps nothing: recall and precision 0.0.
    """
    with one_blas_thread():
        sample = _Sample(summary, labels, at)
        verdicts, missing = sample.verdicts(judged)
        source = source_index(trace, at)
        distortions: list[Distortion] = []
        for fact, verdict, lost_keys in zip(sample.facts, verdicts, missing, strict=True):
            if not verdict.kept and lost_keys:
                found = near_misses(fact, sample.text, source, lost_keys)
                if found:
                    verdict.distortion = found[0].kind
                    distortions += found
        text, index, facts = sample.text, sample.index, sample.facts
        distortions += invented(text, source, ignore={d.found for d in distortions})
        relevant = _relevant_units(text, index, facts)
        avoid = [_avoid_verdict(a, text, index, sample.avoid_rows.get(a.id), len(facts)) for a in sample.avoid_items]
    units = len(text.units)
    return SummaryScore(
        recall=0.0 if sample.empty else _recall(verdicts),
        recall_by_category=_recall_by_category(verdicts, zero=sample.empty),
        precision=relevant / units if units else 0.0,
        facts=verdicts,
        avoid=avoid,
        distortions=distortions,
        critical_lost=[v.id for v in verdicts if v.critical and not v.kept],
        units=units,
        relevant_units=relevant,
    )


@dataclass
class FactScore:
    """Which expected facts a text keeps, and nothing else (see `score_facts`)."""

    recall: float
    recall_by_category: dict[str, float]
    facts: list[FactVerdict]


def score_facts(text: str, labels: Labels, at: int) -> FactScore:
    """The fact verdicts and recall of `score_summary`, without precision, avoid items or
    distortions: what the whole compacted context is scored for.

    The verdicts, recall and recall by category are the ones `score_summary` gives for the
    same text (the same index, fitted on the same texts); a verdict's `distortion` is not
    looked for. On a long context that skips most of the work: near misses and invented
    paths over every message, and the relevance of every unit.
    """
    with one_blas_thread():
        sample = _Sample(text, labels, at)
        verdicts, _ = sample.verdicts(None)
    return FactScore(
        recall=0.0 if sample.empty else _recall(verdicts),
        recall_by_category=_recall_by_category(verdicts, zero=sample.empty),
        facts=verdicts,
    )


class _Sample:
    """One text against the labels at one point: the expected facts, the avoid items whose
    source is in the history, and one semantic index (rows: the facts, then the keyless avoid
    items; every row shares the index's idf, so the rows fitted decide the similarities)."""

    def __init__(self, summary: str, labels: Labels, at: int):
        self.facts = labels.expected(at)
        self.text = SummaryText(summary)
        self.avoid_items = [a for a in labels.avoid if any(s < at for s in a.source)]
        keyless_avoid = [a for a in self.avoid_items if not a.keys]
        self.index = SemanticIndex(self.text, [f.text for f in self.facts] + [a.text for a in keyless_avoid])
        self.avoid_rows = {a.id: len(self.facts) + i for i, a in enumerate(keyless_avoid)}
        self.empty = not self.text.units

    def verdicts(self, judged: dict[str, JudgeVerdict] | None) -> tuple[list[FactVerdict], list[list[str]]]:
        """One verdict per expected fact, and the keys each lost fact misses (for near misses)."""
        verdicts, missing = [], []
        for row, fact in enumerate(self.facts):
            verdict, lost_keys = _fact_verdict(fact, row, self.text, self.index, judged)
            if self.empty:
                verdict.kept, verdict.evidence, verdict.note = False, None, "summary has no units"
            verdicts.append(verdict)
            missing.append(lost_keys)
        return verdicts, missing


def _fact_verdict(
    fact: Fact, row: int, text: SummaryText, index: SemanticIndex, judged: dict[str, JudgeVerdict] | None
) -> tuple[FactVerdict, list[str]]:
    """The verdict on one fact and its missing keys (for near-miss detection)."""
    verdict, missing = _matcher_verdict(fact, row, text, index)
    if judged is None or fact.id not in judged:
        return verdict, missing
    jv = judged[fact.id]
    # The judge decides, exact categories too (numbers: judge κ 0.93 against the matcher's
    # 0.67 on held-out data). No rule overrules it: the quote, contradiction and key checks
    # lowered or never raised out-of-sample κ, so they are recorded as flags.
    keys_found = match_key_sets(text, fact.key_sets, inflect=fact.category not in EXACT_CATEGORIES) is not None
    judge_verdict = FactVerdict(
        id=verdict.id, category=verdict.category, kept=jv.kept, matcher="judge", evidence=jv.quote or None,
        weight=verdict.weight, critical=verdict.critical, similarity=verdict.similarity, note=jv.reason or None,
        probability=verdict.probability, uncertain=verdict.uncertain, tier="judge", matcher_kept=verdict.kept,
        quote_found=jv.quote_found, contradiction=jv.contradiction, keys_found=keys_found, judge_answered=jv.answered,
    )
    return judge_verdict, missing


def _matcher_verdict(fact: Fact, row: int, text: SummaryText, index: SemanticIndex) -> tuple[FactVerdict, list[str]]:
    """The matcher tier's verdict on one fact and its missing keys."""
    base: dict[str, Any] = {"id": fact.id, "category": fact.category, "weight": fact.weight, "critical": fact.critical}
    cal = default_calibration()
    if fact.category in EXACT_CATEGORIES:
        # exact categories stay exact: the literal rule decides, calibration adds the probability
        lit = literal_match(fact, text)
        note = None if lit.kept else "missing: " + ", ".join(lit.missing)
        p = cal.exact_probability(lit.kept)
        return FactVerdict(kept=lit.kept, matcher="literal", evidence=lit.evidence, note=note,
                           probability=p, uncertain=is_uncertain(p), **base), list(lit.missing)
    sem = semantic_match(fact, row, index)
    p = cal.probability(features(fact, row, index, sem))
    kept = calibrated_kept(p, sem.kept)
    missing = [] if kept else missing_keys(text, fact.key_sets, inflect=True)
    if kept == sem.kept:
        note = sem.note
    else:
        note = f"calibrated p={p:.2f} overrides the rule ({sem.note or 'rule kept'})"
    return FactVerdict(
        kept=kept, matcher="semantic", evidence=sem.evidence, similarity=sem.similarity, note=note,
        probability=p, uncertain=is_uncertain(p), **base
    ), missing


def _recall(verdicts: list[FactVerdict]) -> float:
    total = sum(v.weight for v in verdicts)
    return sum(v.weight for v in verdicts if v.kept) / total if total else 1.0


def _recall_by_category(verdicts: list[FactVerdict], *, zero: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for category in dict.fromkeys(v.category for v in verdicts):
        out[category] = 0.0 if zero else _recall([v for v in verdicts if v.category == category])
    return out


def _relevant_units(text: SummaryText, index: SemanticIndex, facts: list[Fact]) -> int:
    return sum(relevant_unit_flags(text, index, facts))


def relevant_unit_flags(text: SummaryText, index: SemanticIndex, facts: list[Fact]) -> list[bool]:
    """Per unit of `text`, whether it supports some expected fact: it holds a literal key of
    one (a path, symbol, number or error text; or a complete key set of an exact fact), or is
    similar to one (RELEVANT_THRESHOLD; RELEVANT_WITH_KEY_THRESHOLD for a unit with one of its
    keys). `index` must have the facts as its first rows."""
    if not text.units or not facts:
        return [False] * len(text.units)
    exact_keys = {k for f in facts for ks in f.key_sets for k in ks if is_exact_key(k)}
    exact_sets = [ks for f in facts if f.category in EXACT_CATEGORIES for ks in f.key_sets]
    sims = index.sim[: len(facts), : len(text.units)]
    flags = []
    for i, unit in enumerate(text.units_norm):
        column = sims[:, i]
        if column.max(initial=0.0) >= RELEVANT_THRESHOLD:
            flags.append(True)
        elif any(find_key(unit, k) for k in exact_keys) or any(all(find_key(unit, k) for k in ks) for ks in exact_sets):
            flags.append(True)
        else:
            flags.append(any(
                column[r] >= RELEVANT_WITH_KEY_THRESHOLD and any(has_key(unit, k, True) for ks in f.key_sets for k in ks)
                for r, f in enumerate(facts)
            ))
    return flags


def _avoid_verdict(item: AvoidItem, text: SummaryText, index: SemanticIndex, row: int | None, n_facts: int) -> AvoidVerdict:
    """Present when all its keys occur; a keyless item (a superseded plan) when some unit
    says the same thing: similar above the keep threshold, more similar to the item than to
    any expected fact (rows 0..n_facts-1 of `index`), not negated, same outcome."""
    if item.keys:
        hit = match_key_sets(text, [item.keys])
        evidence = text.evidence(hit[1]) if hit else None
        return AvoidVerdict(item.id, item.reason, hit is not None, evidence)
    if row is None or not index.candidates:
        return AvoidVerdict(item.id, item.reason, False, None)
    sims = index.sim[row]
    item_outcome = outcome(item.text)
    for c in sims.argsort()[::-1]:
        if sims[c] < KEEP_THRESHOLD:
            break
        cand = index.candidates[int(c)]
        # a unit that says an expected fact better than the item is that fact, not the item
        if sims[c] <= index.sim[:n_facts, c].max(initial=0.0):
            continue
        # a superseded plan reported as a failed attempt is history, not the plan
        cand_outcome = outcome(cand)
        if cand_outcome != (0, 0) and _sign(cand_outcome) != _sign(item_outcome):
            continue
        if not negation_conflict(item.text, cand):
            evidence = " ".join(text.units[i] for i in index.spans[int(c)])
            return AvoidVerdict(item.id, item.reason, True, evidence)
    return AvoidVerdict(item.id, item.reason, False, None)


def _sign(counts: tuple[int, int]) -> int:
    return (counts[0] > counts[1]) - (counts[1] > counts[0])
