"""Candidate prompt templates: headers, rendering, field ablation."""

from __future__ import annotations

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.prompts import load_candidate, load_candidates
from conftest import ROOT


@pytest.fixture(scope="module")
def candidates():
    return {c.name: c for c in load_candidates([ROOT / "prompts"])}


def test_the_four_candidates_are_there(candidates):
    assert {"handoff", "inspect_default", "recall_max", "terse"} <= set(candidates)
    for c in candidates.values():
        assert c.description and c.fields


def test_render_receives_span_budget_and_focus(candidates):
    text = candidates["handoff"].render(budget=640, span="[user]\nfix it", focus="keep the failing test name")
    assert text.startswith("<conversation>\n[user]\nfix it\n</conversation>")
    assert "640 tokens" in text and "Focus: keep the failing test name" in text
    assert "exact error text" in text and "Discard raw tool output" in text


def test_messages_shape_has_no_span(candidates):
    for c in candidates.values():
        text = c.render(budget=500)
        assert "<conversation>" not in text and "500" in text


def test_removing_a_field_removes_its_block(candidates):
    full = candidates["recall_max"]
    assert "## Numbers" in full.render(budget=500)
    ablated = full.without("numbers")
    assert ablated.name == "recall_max-numbers"
    text = ablated.render(budget=500)
    assert "## Numbers" not in text and "## Decisions" in text


def test_missing_header_is_an_error(tmp_path):
    bad = tmp_path / "x.j2"
    bad.write_text("Summarise {{ span }}")
    with pytest.raises(ContractError, match=r"x.j2: line 1: missing metadata header"):
        load_candidate(bad)


def test_template_syntax_error_names_line(tmp_path):
    bad = tmp_path / "x.j2"
    bad.write_text("{#-\nname: x\nfields: []\n-#}\nhello\n{% if span %}\n")
    with pytest.raises(ContractError, match=r"x.j2: line \d+: template error"):
        load_candidate(bad)


def test_duplicate_names_are_an_error(tmp_path):
    for n in ("a", "b"):
        (tmp_path / f"{n}.j2").write_text("{#-\nname: same\nfields: []\n-#}\nhi {{ budget }}\n")
    with pytest.raises(ContractError, match="also used by"):
        load_candidates([tmp_path])
