"""Candidate prompt templates: headers, rendering, field ablation."""

from __future__ import annotations

import re

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


# Issue 24 item 5: a render has an output budget and a loop budget, checked before a string is
# built. Each of these ran for minutes or took gigabytes before (217 s at 1.8 GB for the first).
HOSTILE_TEMPLATES = {
    "repeat": ("{{ 'A ' * 150000000 }}", "a repeated string or list would be 300000000 characters"),
    "percent-width": ("{{ '%0999999999d' % 1 }}", "a %-formatted string would be"),
    "format-filter": ("{{ '%0999999999d'|format(1) }}", "the format filter's output would be"),
    "format-method": ("{{ '{:>999999999}'.format(1) }}", "a .format() string would be"),
    "center": ("{{ 'x'|center(999999999) }}", "the center filter's output would be"),
    "ljust": ("{{ 'x'.ljust(999999999) }}", "the result of ljust() would be"),
    "nested-range": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "loops ran more than 1000000 times"),
    "doubling": ("{% set a = 'A' * 1000000 %}{% set b = a ~ a %}{% set c = b ~ b %}{{ c }}", "a ~ concatenation would be"),
    "power": ("{{ 2 ** 999999999 }}", "too large a number"),
    "output": ("{% for i in range(100) %}{{ 'A' * 100000 }}{% endfor %}", "the rendered prompt would be"),
    "recursion": ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "nested too deeply"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TEMPLATES))
def test_a_template_over_its_budget_is_refused_at_once(tmp_path, name):
    body, message = HOSTILE_TEMPLATES[name]
    path = tmp_path / "evil.j2"
    path.write_text("{#-\nname: evil\nfields: [intent]\n-#}\n" + body + "\n")
    with pytest.raises(ContractError, match=re.escape(message)) as info:
        load_candidate(path)
    assert str(path) in str(info.value)


def test_ordinary_templates_render_within_their_budgets(candidates, tmp_path):
    path = tmp_path / "fine.j2"
    path.write_text("{#-\nname: fine\nfields: [intent]\n-#}\n{% for f in fields %}{{ loop.index }}. {{ f }}{% endfor %}"
                    "{{ 'a' ~ 'b' }} {{ '%d' % budget }} {{ '-' * 40 }} {{ '{:>5}'.format(1) }}\n{{ span }}\n")
    span = "x" * 3_000_000  # a long conversation: the output budget grows with the context
    assert load_candidate(path).render(budget=800, span=span).count("x") == 3_000_000
    for c in candidates.values():
        assert c.render(budget=800, span=span)
