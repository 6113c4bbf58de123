"""validate-matchers: the gold set (labels/gold) loads complete, the command runs offline,
the default scorer meets the agreement targets, the judge's wrong answers are rejected, and
the matcher rules added from the gold set behave on real sentences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction_eval.cli.main import main
from compaction_eval.contracts.labels import Fact
from compaction_eval.contracts.problems import ContractError
from compaction_eval.recall.matching.judge import contradicts, verdicts_from_text
from compaction_eval.recall.matching.literal import SummaryText, literal_match
from compaction_eval.recall.matching.semantic import _attempt_outcome as attempt_outcome
from compaction_eval.recall.matching.semantic import (
    changed_number,
    negation_conflict,
    weakened,
)
from compaction_eval.validation.matchers import (
    Control,
    agreement,
    kappa,
    load_gold,
    load_gold_file,
    run_controls,
    validate,
)
from conftest import ROOT

GOLD = ROOT / "labels" / "gold"
CI_LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"


# ---------------------------------------------------------------------------- the whole command


def test_validate_matchers_cli_offline_meets_targets(tmp_path, capsys):
    out = tmp_path / "matchers.json"
    assert main(["validate-matchers", "--gold", str(GOLD), "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "matcher: default" in table and "overall" in table and "judge controls" in table
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["schema"] == "compaction-eval/matcher-validation@1"
    gold = result["gold"]
    assert gold["fact_judgments"] >= 300 and gold["traces"] >= 10
    assert all(gold["styles"][s] > 0 for s in ("thorough", "terse", "drifted", "extractive"))
    assert gold["by_split"]["heldout"] > 0 and gold["by_split"]["fresh"] > 0
    # no judge without --model; `second` is the second reader, where the gold set has one
    assert set(result["facts"]) == {"literal", "semantic", "default", "second"}
    default = result["facts"]["default"]
    # A regression guard on the part the matcher was built on (the tune part, cross-validated by
    # trace); the test part is measured, not guarded (its figure is the headline, whatever it is).
    # Rounds 3-5 folded the earlier test parts into tune; on all 4,560: 0.794 (keys 0.747). Round 6
    # (five agents the matcher had never seen, 1,225 judgments) joined it and the real labels were
    # re-keyed by the key rule (issue 22): on all 5,785, 0.740 (keys 0.709). The guard follows
    # the data: a matcher change that loses ground on it fails here.
    tune = result["headline"]["tune_cross_validated"]
    assert tune["kappa"] >= 0.73 and tune["kappa"] > tune["keys_kappa"] + 0.02
    assert tune["by_category"]["number"]["kappa"] >= 0.87
    assert tune["by_category"]["artifact"]["kappa"] >= 0.87  # drifted paths in prose and commands
    assert tune["by_category"]["bug"]["kappa"] >= 0.85
    # round 6's test part joined the tune part after it was measured: no current test part, and
    # the headline shows that round as measured at its freeze
    assert result["headline"]["test"] is None and result["headline"]["status"] == "no test part yet"
    last = result["headline"]["last_blind_round"]
    assert last["round"] == 6 and last["test"]["n"] >= 1000 and last["stale"] is False
    assert [r["round"] for r in result["headline"]["blind_rounds"]] == [1, 2, 3, 4, 5, 6]
    # every disagreement is listed, with the human's reason
    n_wrong = round(default["overall"]["n"] * (1 - default["overall"]["accuracy"]))
    assert len(result["disagreements"]["default"]) == n_wrong
    assert all(d["reason"] for d in result["disagreements"]["default"])
    assert result["controls"]["passed"] == result["controls"]["n"] >= 8
    assert set(result["thresholds"]) >= {"constraint", "decision", "attempt"}


# ---------------------------------------------------------------------------- the gold files


def _gold_file(tmp_path: Path, facts: str, irrelevant: str = "[]", avoid: str = '{ci-secret: [absent, "no token"]}') -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(
        f"""schema: compaction-eval/gold@1
trace: synth-ci-broken-001
labels: {CI_LABELS}
judged_by: human
summaries:
  - id: s
    point: 31
    style: terse
    text: |
      - Nightly run #4812: 14 failed, 347 passed.
      - Noise line.
    facts: {facts}
    avoid: {avoid}
    irrelevant: {irrelevant}
""",
        encoding="utf-8",
    )
    return path


ALL_31 = ("{answer-format: [lost, x], intent: [lost, x], keep-api: [lost, x], no-test-edits: [lost, x], "
          "fail-count: [kept, x], failing-error: [lost, x], root-cause: [lost, x], breaking-commit: [lost, x], "
          "plan-revert: [lost, x]}")


def test_gold_file_must_judge_every_expected_fact_and_name_units(tmp_path):
    gf = load_gold_file(_gold_file(tmp_path, ALL_31, '["Noise"]'))
    assert gf.summaries[0].facts["fail-count"] == (True, "x")
    with pytest.raises(ContractError, match="expected but not judged"):
        load_gold_file(_gold_file(tmp_path, ALL_31.replace("plan-revert: [lost, x]", "")))
    with pytest.raises(ContractError, match="not expected"):
        load_gold_file(_gold_file(tmp_path, ALL_31.replace("}", ", revert-attempt: [lost, x]}")))
    with pytest.raises(ContractError, match="kept | lost"):
        load_gold_file(_gold_file(tmp_path, ALL_31.replace("[kept, x]", "[yes, x]")))
    with pytest.raises(ContractError, match="exactly one unit"):
        load_gold_file(_gold_file(tmp_path, ALL_31, '["no such unit"]'))
    with pytest.raises(ContractError, match="applicable but not judged"):
        load_gold_file(_gold_file(tmp_path, ALL_31, avoid="{}"))


def test_committed_gold_set_loads_complete():
    gold = load_gold(GOLD)
    assert len({g.trace for g in gold}) >= 10
    assert any(g.labels.path.parent.name == "real" for g in gold)  # real traces too


# ---------------------------------------------------------------------------- agreement


def test_agreement_metrics_by_hand():
    gold = [True, True, True, False, False, True]
    pred = [True, True, False, False, True, True]
    a = agreement(gold, pred)
    # tp=3 fp=1 fn=1 tn=1: po = 4/6, pe = (4/6)(4/6) + (2/6)(2/6) = 20/36
    assert a["accuracy"] == pytest.approx(4 / 6, abs=1e-4)
    assert a["precision"] == pytest.approx(0.75) and a["recall"] == pytest.approx(0.75)
    assert a["kappa"] == pytest.approx((4 / 6 - 20 / 36) / (1 - 20 / 36), abs=1e-4)
    assert kappa(gold, pred) == pytest.approx(a["kappa"], abs=1e-4)
    assert agreement([True, True], [True, True])["kappa"] is None  # undefined, not 1 or nan


# ---------------------------------------------------------------------------- the judge


def _tiny_gold(tmp_path: Path) -> Path:
    gold_dir = tmp_path / "gold"
    gold_dir.mkdir()
    facts = ALL_31.replace("intent: [lost, x]", "intent: [kept, x]").replace("no-test-edits: [lost, x]", "no-test-edits: [kept, x]")
    text = """      - Goal: get the nightly CI on main green again (run #4812) by fixing the root cause before the release cut.
      - Do not modify anything under tests/; report a wrong test instead.
      - Nightly run #4812: 14 failed, 347 passed."""
    path = _gold_file(gold_dir, facts)
    path.write_text(path.read_text().replace("      - Nightly run #4812: 14 failed, 347 passed.\n      - Noise line.", text))
    return gold_dir


def test_validate_with_a_scripted_judge_measures_its_verdicts_and_its_checked_ones(tmp_path):
    from compaction_eval.validation.matchers import scripted_model

    answer = json.dumps([
        {"id": "intent", "kept": True, "quote": "get the nightly CI on main green again", "reason": "stated"},
        # a real constraint, kept on an invented quote: the judge tier keeps it (flagged)
        {"id": "no-test-edits", "kept": True, "quote": "tests/ are read-only forever", "reason": "stated"},
        {"id": "answer-format", "kept": True, "quote": "the reply gives file:line and a diff", "reason": "invented"},
    ])
    result = validate(_tiny_gold(tmp_path), model=scripted_model([answer]))
    judge, checked = result["facts"]["judge"]["overall"], result["facts"]["judge_checked"]["overall"]
    assert judge["n"] == 9 and judge["predicted_positive"] == 3  # the judge's own verdicts decide
    assert checked["n"] == 9 and checked["predicted_positive"] == 1  # only the intent survives its quote check
    wrong = {d["id"] for d in result["disagreements"]["judge"]}
    assert "fail-count" in wrong and "no-test-edits" not in wrong  # skipped by the judge: not kept
    assert "answer-format" in wrong  # kept on an invented quote: the judge is wrong, and it shows
    wrong_checked = {d["id"] for d in result["disagreements"]["judge_checked"]}
    assert "no-test-edits" in wrong_checked and "answer-format" not in wrong_checked
    assert "default+judge" not in result["facts"]  # the judge tier is the judge's verdicts


def test_controls_fail_when_a_wrong_answer_gets_through():
    fact = Fact(id="f", category="next_step", text="Run the full suite as the nightly does, then write the report.",
                keys=("full suite",), source=(0,))
    summary = "- Run the full suite at some point.\n"
    # quote in the summary, keys present, nothing the checks can see: the judge is wrong (the
    # step is vaguer) and the control must report the failure instead of passing
    sneaky = Control("sneaky", "vaguer", summary, fact,
                     '[{"id": "f", "kept": true, "quote": "Run the full suite at some point", "reason": "ok"}]', False)
    caught = Control("caught", "invented_quote", summary, fact,
                     '[{"id": "f", "kept": true, "quote": "run the full suite, then report", "reason": "ok"}]', False)
    result = run_controls([sneaky, caught])
    assert [r["ok"] for r in result["items"]] == [False, True]
    assert result["passed"] == 1


def test_judge_quote_that_contradicts_the_fact_is_flagged():
    fact = Fact(id="a", category="attempt", text="Reverting a41c9e2 broke 6 tests in test_export.py, so the revert was abandoned.",
                keys=("revert",), source=(0,))
    summary = "- The revert of a41c9e2 worked and all tests passed.\n- Reverting a41c9e2 broke 6 export tests; abandoned."
    assert contradicts(fact, "The revert of a41c9e2 worked and all tests passed")
    assert not contradicts(fact, "Reverting a41c9e2 broke 6 export tests; abandoned")
    bad = verdicts_from_text('[{"id": "a", "kept": true, "quote": "The revert of a41c9e2 worked and all tests passed", "reason": "r"}]', summary, [fact])
    good = verdicts_from_text('[{"id": "a", "kept": true, "quote": "Reverting a41c9e2 broke 6 export tests; abandoned", "reason": "r"}]', summary, [fact])
    # flagged, not overruled: the verdict stays the judge's, the checked verdict is measured apart
    assert bad["a"].kept and bad["a"].contradiction and not bad["a"].checked_kept
    assert good["a"].kept and not good["a"].contradiction and good["a"].checked_kept


# ---------------------------------------------------------------------------- rules added from the gold set


@pytest.mark.parametrize(
    "fact, candidate, conflict",
    [
        # "keep X unchanged" is "do not modify X", not "not X"
        ("Keep the public API of orchard.db unchanged.", "The public API of orchard.db stays as it is.", False),
        ("Keep the public API of orchard.db unchanged.", "orchard.db public API must not change.", False),
        ("No changes under contracts/.", "contracts/ frozen (client teams generate code from it).", False),
        ("Keep the endpoint URL unchanged.", "Change the endpoint URL to /v2.", True),
        # "X failed" is "X did not happen"
        ("Reproducing the crash on SQLite failed.", "Did not reproduce the crash on SQLite.", False),
        ("The upgrade failed at import.", "The upgrade did not fail at import.", True),
        # Python's None inside a sentence is a value
        ("locale_dirs = [None, package_dir] keeps None before the bundled catalog.", "Fix it so that None stays before the bundled catalog.", False),
        ("The user dirs come first.", "None of the user dirs come first.", True),  # a sentence-initial None is a negation
    ],
)
def test_negation_rules_from_the_gold_set(fact, candidate, conflict):
    assert negation_conflict(fact, candidate) is conflict


def test_weakened_constraints():
    rule = "Do not modify anything under tests/."
    assert weakened(rule, "tests under tests/ should preferably not be changed unless one is clearly wrong.")
    assert weakened(rule, "tests may be modified if they encode the old behaviour.")
    assert not weakened(rule, "nothing under tests/ may be touched.")  # a negated permission is the rule
    assert not weakened("Only non-test files may be changed.", "only non-test source files may change.")


def test_changed_numbers_and_failed_attempts():
    fact = "dedupe_orders removed 0 duplicates, so dedup is not the cause."
    assert changed_number(fact, ["dedup removed 18 duplicates, which explains the gap."])
    assert not changed_number(fact, ["not dedup (dedupe_orders removed 0)."])
    assert not changed_number(fact, ["dedup is not the cause."])  # a number left out is not a changed one
    neg = attempt_outcome("Inserting bad bytes did not reproduce the crash.", "attempt")
    assert neg[1] > neg[0]  # a failed reproduction, not "no crash"
    assert attempt_outcome("iterator() didn't help.", "attempt") == (0, 1)


def test_symbol_under_the_wrong_class_is_not_kept():
    fact = Fact(id="loc", category="artifact", source=(0,),
                text="The code is MathMLPresentationPrinter._print_Symbol in sympy/printing/mathml.py.",
                keys=("sympy/printing/mathml.py", "_print_Symbol"))
    wrong = literal_match(fact, SummaryText("- Edit MathMLContentPrinter._print_Symbol in sympy/printing/mathml.py."))
    right = literal_match(fact, SummaryText("- Edit MathMLPresentationPrinter._print_Symbol in sympy/printing/mathml.py."))
    bare = literal_match(fact, SummaryText("- Edit _print_Symbol in sympy/printing/mathml.py."))
    assert not wrong.kept and wrong.missing == ("_print_Symbol",)
    assert right.kept and bare.kept
