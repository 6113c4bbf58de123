"""The matchers on their own: normalisation, literal keys, near misses, invented content,
negation/outcome analysis and the judge's answer parsing."""

from __future__ import annotations

import asyncio
import json

import pytest
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from compaction_eval.contracts.labels import Fact
from compaction_eval.contracts.traces import fold
from compaction_eval.recall.matching.judge import (
    JudgeOutputError,
    judge_facts,
    parse_judge_output,
    verdicts_from_text,
)
from compaction_eval.recall.matching.literal import (
    SourceIndex,
    SummaryText,
    _number_near,
    _path_near,
    find_key,
    find_keys,
    invented,
    literal_match,
    near_misses,
)
from compaction_eval.recall.matching.normalize import (
    all_numbers,
    canonical_number,
    normalize,
    normalize_history,
    number_tokens,
    path_tokens,
    split_units,
    stem,
)
from compaction_eval.recall.matching.semantic import (
    changed_number,
    negation_conflict,
    outcome,
    reason_kept,
    reason_overlap,
    split_reason,
    weakened,
)


def source(text: str) -> SourceIndex:
    return SourceIndex(normalize_history(fold(text)))


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "raw, canonical",
    [("347", "347"), ("1,024", "1024"), ("12,345,678", "12345678"), ("347.0", "347"), ("0.50", "0.5"),
     ("007", "7"), ("3.47", "3.47"), ("3470", "3470"), ("0", "0"), ("abc", None), ("1.2.3", None), ("", None)],
)
def test_canonical_number(raw, canonical):
    assert canonical_number(raw) == canonical


def test_distinct_numbers_stay_distinct():
    assert len({canonical_number(x) for x in ("347", "3.47", "3470", "34.7", "0.347")}) == 5


def test_thousands_separators_only_inside_numbers():
    assert normalize("Processed 1,024 rows and 12,345,678 bytes") == "processed 1024 rows and 12345678 bytes"
    # a list or call arguments keep their commas
    assert normalize("f(1,2) and 1, 024 and (1,2345)") == "f(1,2) and 1, 024 and (1,2345)"


@pytest.mark.parametrize(
    "key, text, found",
    [
        ("347", "we saw 347 rows", True),
        ("347", "we saw 3470 rows", False),
        ("347", "we saw 3.47 rows", False),
        ("347", "took 347.5 s", False),
        ("347", "ratio 0.347", False),
        ("347", "took 347ms", True),
        ("347", "issue #347.", True),
        ("3.47", "we saw 347 rows", False),
        ("3.47", "about 3.47 s", True),
        ("1024", "1,024 bytes", True),
        ("1,024", "1024 bytes", True),
        ("347", "347,000 rows", False),
        ("42", "ran 42 tests", True),
        ("42", "python42 and v42", False),
        ("53", "spec: pop-os/cosmic-epoch/issues/53", False),  # a URL segment is not the number
        ("35", "tests: 31/35 pass", True),  # a fraction's denominator is a number
        ("35", "/35 and page/35", False),
    ],
)
def test_number_keys(key, text, found):
    assert (find_key(normalize(text), key) is not None) is found


def test_number_tokens_hedges_and_exclusions():
    toks = number_tokens(normalize("About 300 rows, ~300, roughly 350 and 400+ files; exactly 347."))
    assert [(t.value, t.raw, t.hedged) for t in toks] == [
        ("300", "about 300", True), ("300", "~300", True), ("350", "roughly 350", True),
        ("400", "400+", True), ("347", "347", False),
    ]
    # identifiers, versions, times, dates, negative numbers and ranges are not standalone numbers
    skipped = "python3.6 utf-8 0xed v1.3.13 3.6.8 11:03:32 2019-02-18 -5 231-245 deletion2.py file.py:235"
    assert number_tokens(normalize(skipped)) == []
    assert number_tokens("handsome 300")[0].hedged is False


def test_all_numbers_of_the_history_include_parts_of_identifiers():
    assert {"3.6", "3", "6", "8", "1024", "0"} <= all_numbers(normalize("python3.6.8 utf-8 0xed 1,024"))


# ---------------------------------------------------------------------------- paths, symbols, words


@pytest.mark.parametrize(
    "key, text, found",
    [
        ("django/db/models/deletion.py", "see django/db/models/deletion.py.", True),
        ("django/db/models/deletion.py", "see `django/db/models/deletion.py:235`", True),
        ("django/db/models/deletion.py", "see django/db/models/deletion.pyc", False),
        ("/opt/miniconda3/envs/testbed", "ran /opt/miniconda3/envs/testbed/bin/python", True),  # a folder key
        ("homarr-labs/dashboard-icons", "https://cdn.jsdelivr.net/gh/homarr-labs/dashboard-icons/png/x.png", True),
        ("envs/testbed", "ran envs/testbed2/bin/python and envs/testbed-old", False),
        ("django/db/models/deletion.py", "see django/db/models/deletion.py/x", False),
        ("django/db/models/deletion.py", "see db/models/deletion2.py", False),
        ("django/db/models/deletion.py", "see mydjango/db/models/deletion.py", False),
        ("django/db/models/deletion.py", "see /testbed/django/db/models/deletion.py", True),
        ("db/models/deletion.py", "see django/db/models/deletion.py", True),
        ("deletion.py", "see django/db/models/deletion.py", True),
        ("deletion.py", "see deletion.py.orig", False),
        ("related_objects", "Collector.related_objects() returns", True),
        ("related_objects", "related objects", False),
        ("related_objects", "related_objects_2", False),
        ("Collector", "Collector.related_objects", True),
        ("UnicodeDecodeError", "raised unicodedecodeerror: bad", True),
        ("delete()", "QuerySet.delete() runs", True),
        ("can't decode byte 0xed", "codec can\u2019t\n   decode  byte 0xed in", True),
        ("'utf-8' codec", 'the "utf-8" codec', True),
        ("test", "tests pass", False),
    ],
)
def test_path_and_symbol_keys(key, text, found):
    assert (find_key(normalize(text), key) is not None) is found


def test_find_keys_returns_the_unit_as_evidence():
    summary = "## Files\n- Fix in `django/db/models/deletion.py`, method `related_objects`.\n- Ran 42 tests."
    assert find_keys(summary, ["django/db/models/deletion.py", "related_objects"]) == (
        "Fix in `django/db/models/deletion.py`, method `related_objects`."
    )
    assert find_keys(summary, ["django/db/models/deletion.py", "42"]) == (
        "Fix in `django/db/models/deletion.py`, method `related_objects`. | Ran 42 tests."
    )
    assert find_keys(summary, ["deletion.py", "43"]) is None


def test_alt_key_sets():
    fact = Fact(id="f", category="artifact", text="t", keys=("django/db/backends/mysql/operations.py", "_convert_field_to_tz"),
                alt_keys=(("mysql/operations.py", "_convert_field_to_tz"),), source=(1,))
    assert literal_match(fact, SummaryText("In mysql/operations.py, `_convert_field_to_tz`.")).kept
    result = literal_match(fact, SummaryText("In mysql/operations.py."))
    assert not result.kept and result.missing == ("_convert_field_to_tz",)


def test_stem_equates_inflections():
    assert stem("modified") == stem("modifying") == stem("modifies") == stem("modify")
    assert stem("tests") == stem("testing") == stem("test")
    assert stem("worked") == stem("works") == stem("work")
    assert stem("related_objects") == "related_objects"


def test_path_tokens():
    text = normalize("See django/db/models/deletion.py, setup.cfg and and/or pre/post; url https://github.com/a/b/pull/1.")
    assert [s.text for s in path_tokens(text)] == [
        "django/db/models/deletion.py", "setup.cfg", "https://github.com/a/b/pull/1"
    ]


def test_split_units():
    summary = """# Summary
## Intent
- Make **delete()** cheaper. It should fetch only the pk.
1. Numbered item
   - nested item
**Files:**
Files touched:
| file | change |
|------|--------|
| deletion.py | related_objects |
```python
qs.only("pk")
```
---
Next: run the tests.
"""
    assert split_units(summary) == [
        "Make **delete()** cheaper.", "It should fetch only the pk.", "Numbered item", "nested item",
        "file; change", "deletion.py; related_objects", 'qs.only("pk")', "Next: run the tests.",
    ]
    assert split_units("") == [] and split_units("# only\n## headings\n") == []


# ---------------------------------------------------------------------------- near misses


def test_exact_fact_whose_file_is_named_in_another_folder_is_not_kept():
    """Issue 16, false keeps: the right file name inside the wrong folder (Windows paths too)."""
    fact = Fact(id="gemini-ps1", category="artifact", text=(
        r"The gemini command is the npm shim C:\Users\M\AppData\Roaming\npm\gemini.ps1 from @google/gemini-cli."),
        keys=("gemini.ps1", "@google/gemini-cli"), source=(1,))
    wrong = SummaryText(r"gemini is the shim C:\Users\M\AppData\Local\npm\gemini.ps1 from @google/gemini-cli.")
    right = SummaryText(r"gemini is the shim AppData\Roaming\npm\gemini.ps1 from @google/gemini-cli.")
    bare = SummaryText("gemini.ps1 (the npm shim of @google/gemini-cli) starts it.")
    assert not literal_match(fact, wrong).kept
    assert literal_match(fact, right).kept
    assert literal_match(fact, bare).kept  # no folder named: nothing contradicts the fact's


@pytest.mark.parametrize(
    "key, found, how",
    [
        ("django/db/backends/mysql/operations.py", "mysql/base.py", "segment"),
        ("django/db/backends/mysql/operations.py", "django/db/backends/mysql/operation.py", "edit"),
        ("django/db/models/deletion.py", "django/db/models/deletion.pyc", "edit"),
        ("django/db/models/deletion.py", "db/models/deletion2.py", "edit"),
        ("django/db/models/deletion.py", "django/db/models/query.py", "segment"),
        ("django/db/models/deletion.py", "django/forms/models.py", None),
        ("django/db/models/deletion.py", "models/deletion.py", None),  # a shorter form of the same path
        ("deletion.py", "query.py", None),
    ],
)
def test_path_near(key, found, how):
    assert _path_near(key, found) == how


@pytest.mark.parametrize(
    "expected, found, hedged, near",
    [
        ("347", "374", False, True),  # transposed digits
        ("347", "300", True, True),  # "about 300"
        ("347", "350", True, True),  # "roughly 350"
        ("347", "3470", False, True),  # shifted point
        ("347", "3.47", False, True),
        ("347", "350", False, True),  # within 10%
        ("347", "1000", False, False),
        ("347", "200", True, False),  # "about 200": too far to be this number
        ("42", "44", False, True),
        ("42", "24", False, True),
    ],
)
def test_number_near(expected, found, hedged, near):
    assert _number_near(expected, found, hedged) is near


def test_drift_against_a_number_seen_in_the_history_is_not_reported():
    fact = Fact(id="n", category="number", text="347 rows were deleted.", keys=("347",), source=(0,))
    history = source("deleted 347 rows; the table has 374 columns")
    drifted = near_misses(fact, SummaryText("- 374 rows were deleted"), history, ["347"])
    assert drifted == []  # 374 is a real number of the history
    drifted = near_misses(fact, SummaryText("- about 300 rows were deleted"), history, ["347"])
    assert [(d.kind, d.found) for d in drifted] == [("drifted_number", "about 300")]
    drifted = near_misses(fact, SummaryText("- 437 rows were deleted"), history, ["347"])
    assert [(d.kind, d.found) for d in drifted] == [("drifted_number", "437")]


def test_near_miss_path_from_the_design_example():
    fact = Fact(id="f", category="artifact", text="The conversion is built in django/db/backends/mysql/operations.py.",
                keys=("django/db/backends/mysql/operations.py",), source=(0,))
    history = source("edit django/db/backends/mysql/operations.py")
    summary = SummaryText("- The conversion is built in mysql/base.py.")
    assert not literal_match(fact, summary).kept
    assert [(d.kind, d.found, d.expected) for d in near_misses(fact, summary, history, list(fact.keys))] == [
        ("near_miss_path", "mysql/base.py", "django/db/backends/mysql/operations.py")
    ]


# ---------------------------------------------------------------------------- invented content


def test_invented_paths_and_numbers_with_precision_guards():
    history = source(
        "$ nl django/db/models/deletion.py\n 231 def related_objects\nRan 42 tests in 0.417s\n"
        "/testbed/tests/delete/tests.py line 256\nPython 3.6.8, mysqlclient 1.3.13 (2019)"
    )
    summary = SummaryText(
        "## 1. Overview\n"
        "1. Edited django/db/models/deletion.py at line 231; 42 tests pass in 0.417s.\n"
        "2. See tests/delete/tests.py:256 and /testbed/django/db/models/deletion.py.\n"
        "3. Python 3.6.8 in 2019; 7 files; about 300 rows; within a 2000-token budget (2000 tokens).\n"
        "4. 100% of the suite; test_42_cases; v9.9.9.\n"
        "5. Also django/db/models/collector.py and 1234 rows and line 999.\n"
    )
    found = [(d.kind, d.found) for d in invented(summary, history)]
    assert found == [("invented_path", "django/db/models/collector.py"), ("invented_number", "1234"),
                     ("invented_number", "999")]


def test_no_false_alarms_on_text_copied_from_the_history():
    history_text = (
        "Traceback: File \"/app/.heroku/python/lib/python3.6/site-packages/django/db/models/deletion.py\", line 223\n"
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xed in position 78\n"
        "SELECT job_log.id FROM job_log WHERE job_log.job_id IN (206573433); args=(206573433,)\n"
        "[2019-02-18 11:03:33,403] DEBUG (0.107) processed 1,024 rows"
    )
    summary = SummaryText("\n".join("- " + line for line in history_text.splitlines()))
    assert invented(summary, source(history_text)) == []


# ---------------------------------------------------------------------------- negation, outcome, reason


@pytest.mark.parametrize(
    "fact, candidate, conflict",
    [
        ("The fix worked.", "The fix did not work.", True),
        ("The fix did not work.", "The fix worked.", True),
        ("Must not modify tests.", "Modify tests as needed.", True),
        ("Do not modify tests.", "Never change any tests.", False),
        ("Do not modify tests or config files.", "Only edit non-test files; tests are off-limits.", False),
        ("Do not modify tests.", "Don't change the test files.", False),
        ("Use only() when there are signal listeners.", "Use only() when there are no signal listeners.", True),
        ("Fetch only the pk instead of every column.", "Do not load every column, only the pk.", False),
        ("The first version broke the test.", "Not only did the first version break the test, it was slow.", False),
        # issue 16, false negation conflicts: a paraphrase moves its negation to another word
        ("The csv target never produced a file; queries went to syslog.",
         "I set the csv target, but the file never appeared, so queries go to syslog.", False),
        # ... and a long prose clause is not read for negation scope (it reaches other claims)
        ("The new timer runs the backup script.",
         "The new timer was added in the fix and the old cron entry that does not run the backup script anymore "
         "stays in the crontab because nobody has had time to remove it from the machine since the migration", False),
        ("The new timer runs the backup script.", "The new timer does not run the backup script.", True),
    ],
)
def test_negation_conflict(fact, candidate, conflict):
    assert negation_conflict(fact, candidate) is conflict


@pytest.mark.parametrize(
    "text, counts",
    [
        ("The fix did not work.", (0, 1)),
        ("The fix worked.", (1, 0)),
        ("It didn't fail.", (1, 0)),
        ("All tests passed with no errors.", (2, 0)),
        ("The change broke test_x and the suite failed.", (0, 2)),
        ("Tried .only() on the queryset.", (0, 0)),
        ("A UnicodeDecodeError in text_log_error.line", (0, 0)),  # identifiers are not outcome words
    ],
)
def test_outcome(text, counts):
    assert outcome(text) == counts


def test_split_reason_and_overlap():
    what, why = split_reason("Use .only() on related_objects, because the collector only needs the pk.")
    assert what == "use .only() on related_objects" and why == "the collector only needs the pk."
    assert split_reason("Run the delete tests.") == ("run the delete tests.", "")
    assert reason_overlap(why, "since the collector just requires the primary key") > 0.5
    assert reason_overlap(why, "it is faster") == 0.0
    assert reason_kept(why, "since the collector just requires the primary key", what)
    # restating the statement's own words is no reason
    assert not reason_kept("the collector needs the pk.", "use .only() for the pk", "use .only() for the pk")


# ---------------------------------------------------------------------------- judge


FACTS = [
    Fact(id="keep-tests", category="constraint", text="Do not modify tests.", keys=("tests",), source=(0,)),
    Fact(id="why-only", category="decision", text="Use .only() because the collector needs only the pk.",
         keys=("only(",), source=(1,)),
]
SUMMARY = "- Never  change the TESTS.\n- Used .only() since the collector needs only the pk."


def test_judge_output_parsed_robustly():
    plain = '[{"id": "keep-tests", "kept": true, "quote": "never change the tests", "reason": "stated"}]'
    fenced = "Here you go:\n```json\n" + plain + "\n```\nDone."
    wrapped = '{"verdicts": ' + plain + "}"
    trailing = plain[:-1] + ",]"
    for text in (plain, fenced, wrapped, trailing, "Sure. " + plain + " Hope this helps."):
        assert parse_judge_output(text)[0]["id"] == "keep-tests"
    for bad in ("", "I think both facts were kept.", '[{"kept": true}]', "```json\n[{oops\n```"):
        with pytest.raises(JudgeOutputError):
            parse_judge_output(bad)


def test_judge_quote_not_in_the_summary_is_flagged_not_overruled():
    answer = json.dumps([
        {"id": "keep-tests", "kept": True, "quote": "\u201cnever change the   tests\u201d", "reason": "stated"},
        {"id": "why-only", "kept": True, "quote": "uses only() because it is faster", "reason": "paraphrase"},
        {"id": "unknown", "kept": True, "quote": "x", "reason": "ignored"},
    ])
    verdicts = verdicts_from_text(answer, SUMMARY, FACTS)
    assert verdicts["keep-tests"].kept and verdicts["keep-tests"].quote == "never change the   tests"
    assert verdicts["keep-tests"].quote_found and verdicts["keep-tests"].checked_kept
    # the judge's verdict stands (the override lowered held-out kappa); the check is recorded
    why = verdicts["why-only"]
    assert why.kept and not why.quote_found and not why.checked_kept and why.reason == "paraphrase"
    assert set(verdicts) == {"keep-tests", "why-only"}


def test_judge_missing_verdicts_are_not_kept_and_quoteless_keeps_are_flagged():
    answer = '[{"id": "keep-tests", "kept": "yes", "quote": "", "reason": "obvious"}]'
    verdicts = verdicts_from_text(answer, SUMMARY, FACTS)
    assert verdicts["keep-tests"].kept and not verdicts["keep-tests"].quote_found and verdicts["keep-tests"].answered
    assert not verdicts["why-only"].kept and not verdicts["why-only"].answered and "no verdict" in verdicts["why-only"].reason


def _output(text: str) -> ModelOutput:
    out = ModelOutput.from_content(model="mockllm/model", content=text)
    out.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)  # else mockllm counts with tiktoken
    return out


def test_judge_facts_one_call_listing_every_fact():
    seen = []

    def respond(input, tools, tool_choice, config):
        seen.append(input)
        return _output('[{"id": "keep-tests", "kept": true, "quote": "Never change the TESTS", "reason": "ok"},'
                       ' {"id": "why-only", "kept": false, "quote": "", "reason": "reason lost"}]')

    model = get_model("mockllm/model", custom_outputs=respond)
    verdicts = asyncio.run(judge_facts(model, SUMMARY, FACTS))
    assert len(seen) == 1
    prompt = seen[0][-1].text
    assert "keep-tests" in prompt and "why-only" in prompt and "Never  change the TESTS." in prompt
    assert verdicts["keep-tests"].kept and not verdicts["why-only"].kept


def test_judge_facts_unparseable_answer_raises():
    model = get_model("mockllm/model", custom_outputs=[_output("Both facts look fine to me.")])
    with pytest.raises(JudgeOutputError, match="not a JSON array"):
        asyncio.run(judge_facts(model, SUMMARY, FACTS))


def test_judge_facts_without_facts_makes_no_call():
    model = get_model("mockllm/model", custom_outputs=[])
    assert asyncio.run(judge_facts(model, SUMMARY, [])) == {}


def test_cosines_match_scikit_learn_tfidf():
    """The index's TF-IDF is scikit-learn's `TfidfVectorizer(sublinear_tf=True)` (smooth idf,
    l2), computed once per document; windows are the sum of their two units' counts."""
    from collections import Counter

    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from compaction_eval.recall.matching.semantic import _cosines

    texts = ["do not modify tests", "use only the primary key key"]
    units = ["tests are off limits", "we use the primary key", "key key key", "nothing relevant"]
    windows = [f"{a} {b}" for a, b in zip(units, units[1:], strict=False)]
    counts = [Counter(d.split()) for d in texts + units]
    ours = _cosines(counts, len(texts))
    vec = TfidfVectorizer(analyzer=str.split, sublinear_tf=True).fit(texts + units)
    theirs = (vec.transform(texts) @ vec.transform(units + windows).T).toarray()
    assert ours.shape == (2, 7)
    assert np.allclose(ours, theirs)


# ------------------------------------------------- false misses of the blind round-5 test part

_NO_TESTS = "Change only non-test source files in /testbed; tests and configuration files must not be modified."


@pytest.mark.parametrize(
    "unit, weak",
    [
        ("I may only edit non-test source files, leaving tests alone.", False),  # a limited permission
        ("Only non-test source files in /testbed may be changed; tests stay untouched.", False),
        ("I am allowed to edit the library source under /testbed but not the tests.", False),
        ("Tests may be changed if needed.", True),  # a weakened rule stays weakened
        ("Tests should preferably not be changed unless required.", True),
        ("Non-test files can be changed; tests may be touched too.", True),
    ],
)
def test_a_permission_with_its_limit_is_the_rule_not_a_hedge(unit, weak):
    assert weakened(_NO_TESTS, normalize(unit)) is weak


@pytest.mark.parametrize(
    "fact, unit, changed",
    [
        # "at message 82" points into the trace; "a 2-block reply" says "two blocks"
        ("Exactly one bash block per reply; a reply with two blocks was rejected at message 82.",
         "EXACTLY ONE bash block per reply (a 2-block reply bounced)", False),
        ("Replies with several blocks were rejected (messages 36, 44, 58).", "multi-block replies bounced 3 times", False),
        ("dedup removed 0 duplicates", "dedup removed 18 duplicates", True),
        ("Phase 1 has four streams", "Phase 1 has 2 streams", False),  # a shared number: not decided here
    ],
)
def test_changed_number_ignores_message_pointers_and_reads_number_words(fact, unit, changed):
    assert changed_number(fact, [normalize(unit)]) is changed


@pytest.mark.parametrize(
    "text, found",
    [("Sphinx v4.1.0 on Python 3.9.20", True), ("python4.1.0", False), ("14.1.0", False), ("4.1.0.", True),
     ("version 4.1.0rc1", False)],
)
def test_a_version_key_is_found_after_a_v(text, found):
    assert (find_key(normalize(text), "4.1.0") is not None) is found
