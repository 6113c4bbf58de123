"""`compaction-eval score`: hand-written summaries of a synthetic trace, fact by fact."""

from __future__ import annotations

import json

import pytest

from compaction_eval.cli.main import main
from conftest import ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"

GOOD = """\
- Goal: get the nightly CI on main green again (run #4812 failed) before the release branch is cut.
- Never modify anything under tests/; report a wrong test instead. Keep the ledgerline.billing public API unchanged, no new dependencies.
- Final reply: root cause as file:line, the fix as a diff, and the exact test command.
- Run #4812: 14 failed, 347 passed, 1 skipped.
- test_midcycle_upgrade_prorates_by_day fails: AssertionError: assert Decimal('1324.50') == Decimal('1342.50').
- Root cause: src/ledgerline/billing/proration.py:222 still adds + 1 day.
- Regression from commit a41c9e2 (BillingPeriod.end made exclusive).
"""

DRIFTED = GOOD.replace("14 failed, 347 passed", "14 failed, 374 passed").replace(
    "src/ledgerline/billing/proration.py:222", "src/ledgerline/billing/period.py:222"
)


def score(tmp_path, capsys, text: str, fmt: str = "json"):
    summary = tmp_path / "summary.md"
    summary.write_text(text)
    code = main(["score", "--labels", str(LABELS), "--trace", str(TRACE), "--summary", str(summary), "--point", "31", "--format", fmt])
    out = capsys.readouterr().out
    return code, (json.loads(out) if fmt == "json" else out)


def test_json_follows_design_section_5(tmp_path, capsys):
    code, result = score(tmp_path, capsys, GOOD)
    assert code == 0
    assert {"recall", "precision", "facts", "avoid"} <= set(result)
    verdicts = {f["id"]: f for f in result["facts"]}
    for fid in ("fail-count", "failing-error", "root-cause", "breaking-commit", "no-test-edits"):
        assert verdicts[fid]["kept"], verdicts[fid]
    assert verdicts["root-cause"]["matcher"] == "literal" and "proration.py" in verdicts["root-cause"]["evidence"]
    assert all({"id", "present"} <= set(a) for a in result["avoid"])


def test_drift_is_a_miss_and_a_distortion(tmp_path, capsys):
    _, good = score(tmp_path, capsys, GOOD)
    _, drifted = score(tmp_path, capsys, DRIFTED)
    verdicts = {f["id"]: f for f in drifted["facts"]}
    assert not verdicts["fail-count"]["kept"] and not verdicts["root-cause"]["kept"]
    kinds = {d["kind"] for d in drifted["distortions"]}
    assert "drifted_number" in kinds and "near_miss_path" in kinds
    assert drifted["recall"] < good["recall"]


def test_text_format_lists_lost_facts(tmp_path, capsys):
    code, out = score(tmp_path, capsys, DRIFTED, fmt="text")
    assert code == 0
    assert "LOST" in out and "fail-count" in out and "distortion" in out


@pytest.mark.parametrize(
    "args, words",
    [
        (["--point", "999"], "outside"),
        (["--summary", "/nonexistent/summary.md"], "file not found"),
    ],
)
def test_bad_arguments_are_one_line_errors(tmp_path, capsys, args, words):
    summary = tmp_path / "s.md"
    summary.write_text(GOOD)
    base = {"--labels": str(LABELS), "--trace": str(TRACE), "--summary": str(summary), "--point": "31"}
    base.update(dict(zip(args[::2], args[1::2], strict=False)))
    code = main(["score", *[x for kv in base.items() for x in kv]])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_labels_of_another_trace_are_refused(tmp_path, capsys):
    summary = tmp_path / "s.md"
    summary.write_text(GOOD)
    code = main(["score", "--labels", str(ROOT / "labels" / "synth-refactor-001.yaml"), "--trace", str(TRACE), "--summary", str(summary), "--point", "31"])
    assert code == 2 and "labels trace 'synth-refactor-001'" in capsys.readouterr().err
