"""The calibrated decision (recall/matching/calibrated.py) and the matcher's failure classes
of issue 16, each on a summary that triggers it."""

from __future__ import annotations

import json
from pathlib import Path

from compaction_eval.contracts.labels import Fact
from compaction_eval.recall.matching.calibrated import (
    MODEL_PATH,
    default_calibration,
    features,
    is_uncertain,
    path_elsewhere,
)
from compaction_eval.recall.matching.literal import SummaryText
from compaction_eval.recall.matching.semantic import (
    SemanticIndex,
    _attempt_outcome,
    negation_conflict,
    split_reason,
)
from compaction_eval.validation import refit

ROOT = Path(__file__).resolve().parents[2]


def fact(category: str, text: str, keys: list[str]) -> Fact:
    return Fact(id="f", category=category, text=text, keys=tuple(keys), source=(0,))


def test_refit_from_the_committed_gold_gives_the_committed_file(tmp_path):
    out = tmp_path / "calibration.json"
    assert refit.main(["--gold", str(ROOT / "labels/gold"), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(MODEL_PATH.read_text())
    assert refit.main(["--gold", str(ROOT / "labels/gold"), "--out", str(MODEL_PATH), "--check"]) == 0


def test_refit_ignores_the_test_part(tmp_path):
    rows = refit.rows(refit.load_gold(ROOT / "labels/gold"))
    tune = [r for r in rows if r.part != "test"]
    for r in tune[:40]:
        r.part = "test"
    fitted = refit.fit(rows)
    assert fitted.trained_on["facts"] == len(tune) - 40


def test_probability_and_uncertain_are_in_the_verdict_json():
    from compaction_eval.contracts.labels import Labels
    from compaction_eval.contracts.traces import Trace
    from compaction_eval.recall.scoring import score_summary

    f = fact("constraint", "Do not modify anything under migrations/.", ["migrations/"])
    labels = Labels(trace="t", labelled_by="human", points=(5,), facts=(f,), avoid=())
    score = score_summary("- migrations/ must not be modified.", labels, Trace(id="t", messages=[]), 5)
    v = score.to_json()["facts"][0]
    assert 0.0 <= v["probability"] <= 1.0 and v["uncertain"] == is_uncertain(v["probability"])
    assert v["kept"]


def test_wrong_folder_is_a_near_miss():
    fact_text = "resolve_tenant is defined in src/quarry/tenancy/resolver.py (line 133)."
    assert path_elsewhere(fact_text, "defined in src/quarry/resolver.py")
    assert not path_elsewhere(fact_text, "defined in src/quarry/tenancy/resolver.py")


def test_negation_is_scoped_to_the_clause_with_the_fact_key():
    # false negation conflict: "changed" belongs to the next rule on the same line
    f = "Keep the endpoint URL /api/exports/transactions.csv unchanged: the mobile app hardcodes it."
    unit = "/api/exports/transactions.csv must stay as-is (mobile app hardcodes it); reply w/ what changed + timings."
    assert negation_conflict(f, [unit])  # the whole line: "changed" against "unchanged"
    assert not negation_conflict(f, [unit], ["/api/exports/transactions.csv"])


def test_code_span_is_not_prose():
    assert not negation_conflict("Run the migration with the flag enabled.", ["Run the migration with `--not-dry-run` enabled."])


def test_leading_because_and_reason_colon():
    assert split_reason("Because PgBouncer disables cursors, use keyset pagination.") == (
        "use keyset pagination.", "pgbouncer disables cursors")
    what, why = split_reason("Use keyset pagination. Reason: PgBouncer disables cursors.")
    assert "pgbouncer" in why and "pgbouncer" not in what


def test_outcome_words_missing_from_the_vocabulary():
    assert _attempt_outcome("streaming over iterator() made little difference", "attempt")[1] >= 1
    assert _attempt_outcome("the numbers are now reliable", "decision")[0] >= 1


def test_features_flag_a_contradicting_unit():
    f = fact("constraint", "Do not touch anything under migrations/: the files are frozen.", ["migrations/"])
    text = SummaryText("- Nothing under migrations/ is touched.\n- Files under migrations/ can be edited as needed.")
    feats = features(f, 0, SemanticIndex(text, [f.text]))
    assert feats["contradicting_units"] > 0


def test_shipped_model_loads_without_code_execution():
    cal = default_calibration()
    assert len(cal.coef) == len(json.loads(MODEL_PATH.read_text())["features"])
