"""score_summary on a real trace: mini-swe-agent django__django-11087 (the raw trajectory,
shipped gzipped in tests/data/scoring/ with its SOURCE.md), hand-labelled there, against
hand-written summaries.

summary-faithful.md keeps every expected fact at point 84; each test edits one line of it
(the edit is asserted to apply, so a changed fixture cannot silently test nothing).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from pathlib import Path

import pytest
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from compaction_eval.contracts.labels import lint_against_trace, load_labels
from compaction_eval.contracts.traces import Trace, trace_from_json, validate_trace
from compaction_eval.recall.matching.judge import JudgeVerdict, judge_facts
from compaction_eval.recall.matching.literal import source_index
from compaction_eval.recall.scoring import SummaryScore, score_facts, score_summary

DATA = Path(__file__).resolve().parents[1] / "data" / "scoring"
AT = 84


def trace_from_mini_swe(path: Path) -> Trace:
    """trace@1 from a mini-swe-agent trajectory: messages[0] (the system prompt) becomes
    `system`, the other messages keep their role and string content (trace index i is
    trajectory index i + 1)."""
    raw = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    first, *rest = raw["messages"]
    assert first["role"] == "system"
    data = {
        "schema": "compaction-eval/trace@1",
        "id": "swe-" + raw["instance_id"].replace("__", "-"),
        "source": {"kind": "mini-swe-agent", "path": path.name, "license": "MIT"},
        "system": first["content"],
        "messages": [{"role": m["role"], "content": m["content"]} for m in rest],
    }
    assert validate_trace(data, str(path)) == []
    return trace_from_json(data)


ROUND2_LIMIT = pytest.mark.xfail(
    strict=True,
    reason="round-2 matcher (issue 16): the fact's keys present elsewhere in the summary and no "
    "contradiction check failing outweigh the statement's absence; a known limit of the "
    "key-coverage decision chosen by grouped CV on the gold tune part, kept as a strict xfail "
    "so a fix shows up",
)


@pytest.fixture(scope="module")
def trace() -> Trace:
    # its own trace from the raw file: other ids and indices than fixtures/real
    return trace_from_mini_swe(DATA / "django__django-11087.traj.json.gz")


@pytest.fixture(scope="module")
def labels():
    return load_labels(DATA / "swe-django-django-11087.yaml")


@pytest.fixture(scope="module")
def faithful() -> str:
    return (DATA / "summary-faithful.md").read_text(encoding="utf-8")


def edit(text: str, old: str, new: str) -> str:
    assert old in text, f"fixture changed: {old!r} not in summary"
    return text.replace(old, new)


def verdict(score: SummaryScore, fact_id: str):
    return next(v for v in score.facts if v.id == fact_id)


# ---------------------------------------------------------------------------- the labels


def test_labels_are_consistent_with_the_trace(trace, labels):
    assert trace.id == labels.trace
    assert lint_against_trace(labels, trace) == []
    assert len(labels.expected(AT)) == 9
    assert [f.id for f in labels.expected(45)] == [
        "intent-only-required-fields", "no-test-changes", "fix-location", "unicode-error", "only-pk-and-parents"
    ]


# ---------------------------------------------------------------------------- faithful summaries


def test_faithful_summary_keeps_everything_without_distortions(trace, labels, faithful):
    score = score_summary(faithful, labels, trace, AT)
    assert [v.id for v in score.facts if not v.kept] == []
    assert score.recall == 1.0 and score.critical_lost == []
    assert score.precision == 1.0 and score.units == score.relevant_units == 9
    assert score.distortions == []
    assert {a.id: a.present for a in score.avoid} == {"plan-without-signal-check": False, "locale-listing": False}
    matchers = {v.id: v.matcher for v in score.facts}
    assert matchers["fix-location"] == matchers["unicode-error"] == matchers["delete-suite-size"] == "literal"
    assert matchers["intent-only-required-fields"] == matchers["first-fix-broke-signal-test"] == "semantic"


def test_exact_path_kept_with_the_unit_as_evidence(trace, labels, faithful):
    v = verdict(score_summary(faithful, labels, trace, AT), "fix-location")
    assert v.kept and v.matcher == "literal"
    assert v.evidence == "Fix location: `Collector.related_objects` in `django/db/models/deletion.py`."


def test_prose_paraphrase_keeps_intent_decisions_and_attempt(trace, labels):
    prose = (DATA / "summary-prose.md").read_text(encoding="utf-8")
    score = score_summary(prose, labels, trace, AT)
    kept = {v.id: v.kept for v in score.facts}
    for fid in ("intent-only-required-fields", "no-test-changes", "only-pk-and-parents",
                "signals-need-full-rows", "first-fix-broke-signal-test", "verify-dependency-case"):
        assert kept[fid], (fid, verdict(score, fid).note)
    # the prose summary drops the error message text: the bug is lost, literally
    assert not kept["unicode-error"]
    assert verdict(score, "unicode-error").note == "missing: can't decode byte 0xed"
    decision = verdict(score, "only-pk-and-parents")
    assert "needs nothing but the pk" in decision.evidence and decision.similarity > 0.24
    assert score.distortions == []


def test_terse_paraphrase_with_the_keys_and_no_contradiction_is_kept(trace, labels):
    """An abbreviated rewording with few shared words ("Tests/config are off-limits") is a
    paraphrase, kept by the rule (DESIGN 4): the round-2 decision rests on key coverage and
    contradiction checks, not on a similarity bar that such rewordings fall below."""
    terse = (DATA / "summary-terse.md").read_text(encoding="utf-8")
    score = score_summary(terse, labels, trace, AT)
    kept = {v.id for v in score.facts if v.kept}
    assert {"fix-location", "unicode-error", "only-pk-and-parents", "first-fix-broke-signal-test",
            "delete-suite-size", "verify-dependency-case", "no-test-changes"} <= kept
    assert score.distortions == []


# ---------------------------------------------------------------------------- distortions


def test_near_miss_path_is_a_distortion_not_kept(trace, labels, faithful):
    summary = edit(faithful, "`django/db/models/deletion.py`", "`django/db/models/deletions.py`")
    score = score_summary(summary, labels, trace, AT)
    v = verdict(score, "fix-location")
    assert not v.kept and v.distortion == "near_miss_path"
    assert [(d.kind, d.found, d.expected, d.fact) for d in score.distortions] == [
        ("near_miss_path", "django/db/models/deletions.py", "django/db/models/deletion.py", "fix-location")
    ]
    assert "fix-location" in score.critical_lost


def test_wrong_real_file_where_the_fact_is_stated_is_a_near_miss(trace, labels, faithful):
    # query.py exists in the history, but it is named where the fix location belongs
    summary = edit(faithful, "`django/db/models/deletion.py`", "`django/db/models/query.py`")
    score = score_summary(summary, labels, trace, AT)
    assert [(d.kind, d.found) for d in score.distortions] == [("near_miss_path", "django/db/models/query.py")]


def test_real_file_mentioned_elsewhere_is_no_near_miss(trace, labels, faithful):
    summary = edit(faithful, " in `django/db/models/deletion.py`.", ".")
    summary = edit(summary, "## Decisions", "- The traceback passes through django/db/models/query.py.\n\n## Decisions")
    score = score_summary(summary, labels, trace, AT)
    v = verdict(score, "fix-location")
    assert not v.kept and v.distortion is None and score.distortions == []


def test_hedged_number_is_a_drift(trace, labels, faithful):
    score = score_summary(edit(faithful, "ran 42 tests", "ran about 40 tests"), labels, trace, AT)
    v = verdict(score, "delete-suite-size")
    assert not v.kept and v.distortion == "drifted_number"
    assert [(d.kind, d.found, d.expected) for d in score.distortions] == [("drifted_number", "about 40", "42")]


def test_changed_number_is_a_drift(trace, labels, faithful):
    score = score_summary(edit(faithful, "ran 42 tests", "ran 44 tests"), labels, trace, AT)
    assert [(d.kind, d.found, d.fact) for d in score.distortions] == [("drifted_number", "44", "delete-suite-size")]


def test_near_miss_symbol(trace, labels, faithful):
    score = score_summary(faithful.replace("related_objects", "related_object"), labels, trace, AT)
    for fid in ("fix-location", "only-pk-and-parents"):
        v = verdict(score, fid)
        assert not v.kept and v.distortion == "near_miss_symbol", fid
    assert {(d.found, d.expected, d.fact) for d in score.distortions} == {
        ("related_object", "related_objects", "fix-location"),
        ("related_object", "related_objects", "only-pk-and-parents"),
    }


def test_error_message_with_one_token_changed_is_a_near_miss(trace, labels, faithful):
    score = score_summary(edit(faithful, "byte 0xed", "byte 0xff"), labels, trace, AT)
    v = verdict(score, "unicode-error")
    assert not v.kept and v.distortion == "near_miss_symbol"
    assert score.distortions[0].found == "can't decode byte 0xff"


def test_invented_path_and_number(trace, labels, faithful):
    summary = edit(faithful, "## Next step", "- The collector also lives in django/db/models/collector.py, see line 347.\n\n## Next step")
    score = score_summary(summary, labels, trace, AT)
    assert score.recall == 1.0
    assert [(d.kind, d.found, d.expected, d.fact) for d in score.distortions] == [
        ("invented_path", "django/db/models/collector.py", None, None),
        ("invented_number", "347", None, None),
    ]


# ---------------------------------------------------------------------------- meaning categories


def test_negated_attempt_not_kept(trace, labels, faithful):
    summary = edit(faithful, ") failed test_relational", ") did not fail test_relational")
    v = verdict(score_summary(summary, labels, trace, AT), "first-fix-broke-signal-test")
    assert not v.kept and v.note == "inverted outcome"


def test_attempt_never_made_not_kept(trace, labels, faithful):
    summary = edit(
        faithful,
        "- The first version (.only() without checking signal listeners) failed test_relational_post_delete_signals_happen_before_parent_object, because the post_delete handler read the deferred `r_id`.",
        "- We never tried .only() without checking signal listeners; test_relational_post_delete_signals_happen_before_parent_object was not involved.",
    )
    assert not verdict(score_summary(summary, labels, trace, AT), "first-fix-broke-signal-test").kept


def test_attempt_reported_with_the_opposite_outcome_not_kept(trace, labels, faithful):
    summary = edit(faithful, ") failed test_relational", ") passed test_relational")
    score = score_summary(summary, labels, trace, AT)
    v = verdict(score, "first-fix-broke-signal-test")
    assert not v.kept and v.note == "inverted outcome" and v.similarity > 0.5
    assert score.recall == pytest.approx(9 / 10)


@ROUND2_LIMIT
def test_vaguer_constraint_without_keys_not_kept(trace, labels, faithful):
    summary = edit(faithful, "- Do not touch tests or config files (setup.cfg etc.); only edit non-test source.",
                   "- Keep the change minimal and consistent with the codebase.")
    v = verdict(score_summary(summary, labels, trace, AT), "no-test-changes")
    assert not v.kept


def test_negated_constraint_not_kept(trace, labels, faithful):
    summary = edit(faithful, "- Do not touch tests or config files (setup.cfg etc.); only edit non-test source.",
                   "- Modify tests and config files (setup.cfg etc.) as needed.")
    v = verdict(score_summary(summary, labels, trace, AT), "no-test-changes")
    assert not v.kept and v.note == "negated"


def test_negated_decision_not_kept(trace, labels, faithful):
    summary = edit(faithful, "If the related model has pre_delete", "If the related model has no pre_delete")
    v = verdict(score_summary(summary, labels, trace, AT), "signals-need-full-rows")
    assert not v.kept and v.note == "negated"


@ROUND2_LIMIT
def test_decision_without_its_reason_not_kept(trace, labels, faithful):
    summary = edit(faithful, ", since the collector only needs the pk to delete rows and the parent pointers to cascade up to parent models.", ".")
    assert not verdict(score_summary(summary, labels, trace, AT), "only-pk-and-parents").kept


@pytest.mark.parametrize(
    "fact_id, old, new",
    [
        ("only-pk-and-parents",
         "since the collector only needs the pk to delete rows and the parent pointers to cascade up to parent models.",
         "since it is what the Django docs recommend for querysets of the primary key and parent link fields."),
        pytest.param("signals-need-full-rows", "because signal handlers may access any field of the instance.",
                     "because that is what the Django docs recommend.", marks=ROUND2_LIMIT),
        ("first-fix-broke-signal-test", "because the post_delete handler read the deferred `r_id`.",
         "because the test database was not set up."),
    ],
)
def test_decision_or_attempt_with_another_reason_not_kept(trace, labels, faithful, fact_id, old, new):
    v = verdict(score_summary(edit(faithful, old, new), labels, trace, AT), fact_id)
    assert not v.kept and v.note in ("reason lost", "window spans another fact")
    assert v.similarity > 0.24  # similar enough: the reason check is what rejects it


@pytest.mark.xfail(strict=True, reason="known false keep of the calibrated decision (p=0.75): the model "
                   "overrules the rule's 'keys not in the matching unit' when the key occurs elsewhere")
def test_constraint_that_drops_what_it_protects_not_kept(trace, labels, faithful):
    # "tests" still occurs elsewhere in the summary (42 tests), not in the constraint
    summary = edit(faithful, "- Do not touch tests or config files (setup.cfg etc.); only edit non-test source.",
                   "- Do not touch config files (setup.cfg etc.); only edit source files.")
    v = verdict(score_summary(summary, labels, trace, AT), "no-test-changes")
    assert not v.kept and v.note == "keys not in the matching unit" and v.similarity > 0.5


@ROUND2_LIMIT
def test_vaguer_intent_not_kept(trace, labels, faithful):
    old = ("The user wants `.delete()` to fetch only the fields it needs (just the primary key) rather than every "
           "column, so that bad bytes in an unneeded column like `text_log_error.line` no longer crash the deletion.")
    score = score_summary(edit(faithful, old, "The user reported a problem with `.delete()` in Django."), labels, trace, AT)
    assert not verdict(score, "intent-only-required-fields").kept
    assert score.critical_lost == ["intent-only-required-fields"]


# ---------------------------------------------------------------------------- avoid, precision, recall


def test_avoid_item_with_keys_present(trace, labels, faithful):
    summary = edit(faithful, "## Next step", "- Locale files: django/conf/locale/af/LC_MESSAGES.\n\n## Next step")
    avoid = {a.id: a for a in score_summary(summary, labels, trace, AT).avoid}
    assert avoid["locale-listing"].present and "LC_MESSAGES" in avoid["locale-listing"].evidence
    assert not avoid["plan-without-signal-check"].present


def test_superseded_plan_stated_as_current_is_present(trace, labels, faithful):
    summary = edit(faithful, "## Next step", "- Plan: return qs.only(pk, parent links) for every related model "
                   "without a generic foreign key, without checking signal listeners.\n\n## Next step")
    avoid = {a.id: a for a in score_summary(summary, labels, trace, AT).avoid}
    assert avoid["plan-without-signal-check"].present
    assert avoid["plan-without-signal-check"].evidence.startswith("Plan: return qs.only(pk")


def test_superseded_plan_reported_as_a_failed_attempt_is_not_present(trace, labels, faithful):
    summary = edit(faithful, "## Next step", "- Returning qs.only(pk, parent links) for every related model without a "
                   "generic foreign key, without checking signal listeners, failed the delete tests.\n\n## Next step")
    avoid = {a.id: a for a in score_summary(summary, labels, trace, AT).avoid}
    assert not avoid["plan-without-signal-check"].present


def test_precision_counts_filler_units(trace, labels, faithful):
    filler = ("- The agent worked hard on this task.\n- Overall, good progress was made and things look promising.\n"
              "- The repository is large and has many files.\n")
    score = score_summary(edit(faithful, "## Next step", filler + "\n## Next step"), labels, trace, AT)
    assert (score.units, score.relevant_units) == (12, 9)
    assert score.precision == pytest.approx(9 / 12)
    assert score.recall == 1.0


@ROUND2_LIMIT
def test_recall_is_weighted_and_critical_losses_listed(trace, labels, faithful):
    summary = "\n".join(
        line for line in faithful.splitlines() if not line.startswith(("The user wants", "- Fix location"))
    )
    score = score_summary(summary, labels, trace, AT)
    # weights: intent 2.0, eight others 1.0; intent and fix-location lost
    assert score.recall == pytest.approx(7 / 10)
    assert score.critical_lost == ["intent-only-required-fields", "fix-location"]
    assert score.recall_by_category["intent"] == 0.0 and score.recall_by_category["artifact"] == 0.0
    assert score.recall_by_category["decision"] == 1.0
    assert set(score.recall_by_category) == {f.category for f in labels.expected(AT)}


def test_only_facts_expected_at_the_point_are_scored(trace, labels, faithful):
    score = score_summary(faithful, labels, trace, 45)
    assert [v.id for v in score.facts] == [f.id for f in labels.expected(45)]
    assert set(score.recall_by_category) == {"intent", "constraint", "artifact", "bug", "decision"}
    assert score.recall == 1.0


def test_empty_and_heading_only_summaries_score_zero(trace, labels):
    for summary in ("", "\n\n", "# django/db/models/deletion.py\n## related_objects\n"):
        score = score_summary(summary, labels, trace, AT)
        assert (score.units, score.recall, score.precision) == (0, 0.0, 0.0)
        assert not any(v.kept for v in score.facts)
        assert set(score.recall_by_category.values()) == {0.0}


def test_to_json_has_the_results_contract_keys(trace, labels, faithful):
    data = score_summary(faithful, labels, trace, AT).to_json()
    assert {"recall", "precision", "facts", "avoid", "recall_by_category", "distortions", "critical_lost",
            "units", "relevant_units"} <= data.keys()
    fact = data["facts"][0]
    assert {"id", "category", "kept", "matcher", "evidence", "weight", "critical", "similarity", "distortion"} <= fact.keys()
    assert {"id", "present"} <= data["avoid"][0].keys()
    json.dumps(data)  # serialisable as is


# ---------------------------------------------------------------------------- judge


def test_judge_tier_decides_every_category_beside_the_matcher(trace, labels, faithful):
    judged = {
        "intent-only-required-fields": JudgeVerdict(False, "", "too vague"),
        "no-test-changes": JudgeVerdict(True, "Do not touch tests", "stated"),
        # an exact fact: the judge decides it too; the literal matcher's verdict stays beside it
        "fix-location": JudgeVerdict(False, "", "another file"),
    }
    score = score_summary(faithful, labels, trace, AT, judged=judged)
    intent = verdict(score, "intent-only-required-fields")
    assert (intent.kept, intent.matcher, intent.tier, intent.note, intent.matcher_kept) == (False, "judge", "judge", "too vague", True)
    constraint = verdict(score, "no-test-changes")
    assert (constraint.kept, constraint.matcher, constraint.evidence) == (True, "judge", "Do not touch tests")
    exact = verdict(score, "fix-location")
    assert (exact.kept, exact.tier, exact.matcher_kept, exact.keys_found) == (False, "judge", True, True)
    # facts the judge did not answer for stay with the matcher tier
    assert (verdict(score, "only-pk-and-parents").matcher, verdict(score, "only-pk-and-parents").tier) == ("semantic", "matcher")
    assert score.critical_lost == ["intent-only-required-fields", "fix-location"]
    facts = {f["id"]: f for f in score.to_json()["facts"]}
    assert facts["fix-location"]["matcher_kept"] is True and facts["fix-location"]["tier"] == "judge"
    assert "matcher_kept" not in facts["only-pk-and-parents"]  # judge-tier fields: absent in the matcher tier


def test_judge_keep_without_the_keys_stands_and_is_flagged(trace, labels, faithful):
    summary = edit(faithful, "- Do not touch tests or config files (setup.cfg etc.); only edit non-test source.",
                   "- Keep the change minimal.")
    summary = summary.replace("tests", "suite")
    score = score_summary(summary, labels, trace, AT, judged={"no-test-changes": JudgeVerdict(True, "Keep the change minimal", "ok")})
    v = verdict(score, "no-test-changes")
    assert v.kept and v.keys_found is False and v.note == "ok"


def test_judge_through_inspect_mockllm_end_to_end(trace, labels, faithful):
    facts = labels.expected(AT)
    answer = json.dumps([
        {"id": "intent-only-required-fields", "kept": True, "quote": "fetch only the fields it needs", "reason": "paraphrased"},
        {"id": "no-test-changes", "kept": True, "quote": "Do not touch tests or config files", "reason": "stated"},
        {"id": "first-fix-broke-signal-test", "kept": True, "quote": "the first attempt worked", "reason": "invented quote"},
    ])
    output = ModelOutput.from_content(model="mockllm/model", content=answer)
    output.usage = ModelUsage(input_tokens=900, output_tokens=120, total_tokens=1020)
    model = get_model("mockllm/model", custom_outputs=[output])  # a second call would raise
    judged = asyncio.run(judge_facts(model, faithful, facts))
    assert judged["intent-only-required-fields"].kept
    wrong = judged["first-fix-broke-signal-test"]
    assert wrong.kept and not wrong.quote_found  # kept as the judge said, its quote flagged
    score = score_summary(faithful, labels, trace, AT, judged=judged)
    assert verdict(score, "first-fix-broke-signal-test").matcher == "judge"
    # the facts the judge skipped are not kept: 3 expected facts survive
    assert {v.id for v in score.facts if v.kept} == {"intent-only-required-fields", "no-test-changes", "first-fix-broke-signal-test"}
    assert sum(1 for v in score.facts if not v.judge_answered) == len(facts) - 3


# ---------------------------------------------------------------------------- the whole context


@pytest.mark.parametrize("summary", ["faithful", "vague", "empty"])
def test_the_context_pass_gives_the_verdicts_of_the_full_score(trace, labels, faithful, summary):
    """score_facts (the recall suite's pass over the whole compacted context) skips precision,
    avoid items and distortions, not the verdicts: on a real context (head, summary, anchor,
    tail) it keeps and loses the same facts, with the same evidence, as score_summary."""
    from compaction_eval.compaction.compact import assemble_context
    from compaction_eval.compaction.split import split_history

    text = {"faithful": faithful, "vague": "- We are fixing something in Django.", "empty": ""}[summary]
    context = assemble_context(trace, split_history(trace, AT, 4), text)
    full, facts = score_summary(context, labels, trace, AT), score_facts(context, labels, AT)

    def fields(v):
        return (v.id, v.kept, v.matcher, v.evidence, v.similarity, v.note, v.probability, v.uncertain)

    assert [fields(v) for v in facts.facts] == [fields(v) for v in full.facts]
    assert (facts.recall, facts.recall_by_category) == (full.recall, full.recall_by_category)
    kept = sum(v.kept for v in facts.facts)
    # the tail and head keep some facts whatever the summary says; a faithful summary keeps all
    assert kept == len(facts.facts) if summary == "faithful" else 0 < kept < len(facts.facts)


# ---------------------------------------------------------------------------- speed


def test_source_index_is_built_once_per_trace_and_point(trace):
    assert source_index(trace, AT) is source_index(trace, AT)
    assert source_index(trace, 45) is not source_index(trace, AT)


def test_scoring_100_summaries_is_fast(trace, labels, faithful):
    prose = (DATA / "summary-prose.md").read_text(encoding="utf-8")
    terse = (DATA / "summary-terse.md").read_text(encoding="utf-8")
    bases = [faithful, prose, terse]
    score_summary(faithful, labels, trace, AT)  # builds the history index once
    start = time.perf_counter()
    for i in range(100):
        score_summary(bases[i % 3] + f"\n- Run {i}: step {i * 13} checked.", labels, trace, AT)
    # ~0.6 s on 2 cores; the bound catches per-fact refits or re-reading the history
    assert time.perf_counter() - start < 4.0
