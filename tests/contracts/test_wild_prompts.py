"""The agents' compaction prompts shipped as data (prompts/wild/<agent>/): each renders, on a
real shipped trace, the agent's words verbatim (read from the original files its SOURCE.md
names), the conversation where the agent puts it, and nothing else; and none of them joins
the default prompt set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compaction_eval.compaction.compact import build_request
from compaction_eval.compaction.promptlint import lint_prompt, trial_trace
from compaction_eval.compaction.render import render_span_text
from compaction_eval.compaction.split import split_history
from compaction_eval.contracts.prompts import Candidate, folder_templates, load_candidates
from compaction_eval.contracts.settings import DEFAULT_KEEP_LAST
from compaction_eval.contracts.yamlfile import load_yaml_text
from compaction_eval.corpus.load import read_trace
from conftest import REAL, ROOT

WILD = ROOT / "prompts" / "wild"
SOURCE_KEYS = {"prompt", "template", "agent", "repository", "commit", "path", "license", "license_files", "retrieved", "original"}
# what the harness itself puts around the conversation (prompts/_span.j2): the only text a
# wild prompt may hold besides the agent's words
SPAN_WRAPPER = ("<conversation>", "</conversation>")


def _source(folder: Path) -> dict:
    text = (folder / "SOURCE.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, f"{folder}/SOURCE.md: no YAML front matter"
    return load_yaml_text(match.group(1), f"{folder}/SOURCE.md")


SOURCES = {folder.name: _source(folder) for folder in sorted(WILD.iterdir()) if (folder / "SOURCE.md").is_file()}


@pytest.fixture(scope="module")
def wild() -> dict[str, Candidate]:
    return {c.name: c for c in load_candidates([WILD])}


@pytest.fixture(scope="module")
def real_request_parts():
    """A real shipped trace cut as the recall suite cuts it: (trace, split, span text)."""
    path = trial_trace()  # the smallest shipped real trace
    assert path is not None and path.resolve().is_relative_to(REAL.resolve())
    trace, _ = read_trace(path)
    assert trace is not None
    split = split_history(trace, len(trace.messages), DEFAULT_KEEP_LAST)
    span = render_span_text([trace.messages[i] for i in split.summarised])
    return trace, split, _normal(span)


def _normal(text: str) -> str:
    # The harness's whitespace rule for every rendered prompt (Candidate.render), and the
    # newlines at a piece's edges, which separate it from what comes before and after.
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def _expected(folder: Path, source: dict) -> list[str | None]:
    """The agent's words in the order it sends them; None where the conversation goes."""
    parts: list[str | None] = []
    marker = source.get("history_placeholder")
    for part in source["original"]:
        if part == "history":
            parts.append(None)
            continue
        text = (folder / part).read_text(encoding="utf-8")
        pieces = text.split(marker) if marker else [text]
        for k, piece in enumerate(pieces):
            if k:
                parts.append(None)
            if piece.strip():
                parts.append(_normal(piece))
    assert parts.count(None) == 1, f"{folder}: the conversation must go in exactly one place"
    return parts


def test_at_least_four_agents_each_with_source_license_and_original():
    assert len(SOURCES) >= 4
    for name, source in SOURCES.items():
        folder = WILD / name
        assert SOURCE_KEYS <= set(source), f"{folder}/SOURCE.md lacks {SOURCE_KEYS - set(source)}"
        assert source["prompt"] == f"wild_{name}" and (folder / source["template"]).is_file()
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), source["commit"]
        assert source["repository"].startswith("https://github.com/")
        assert source["license"] in {"Apache-2.0", "MIT"}  # both allow redistribution with the license kept
        for lic in source["license_files"]:
            text = (folder / lic).read_text(encoding="utf-8")
            assert lic == "NOTICE" or ("Apache License" if source["license"] == "Apache-2.0" else "Permission is hereby granted") in text
        assert "history" in source["original"] or source.get("history_placeholder")


def test_prompts_wild_loads_every_agent(wild):
    assert set(wild) == {s["prompt"] for s in SOURCES.values()}
    for name, source in SOURCES.items():
        assert wild[source["prompt"]].path == WILD / name / source["template"]


def _leftover(agent: str, text: str, parts: list[str | None], span: str | None) -> str:
    """What `text` holds besides `parts` in order (None: `span`) and the span's wrapper;
    fails the test when a part is not found verbatim in its place."""
    cursor, gaps = 0, []
    for part in parts:
        if part is None and span is None:
            continue
        needle = span if part is None else part
        assert needle is not None
        at = text.find(needle, cursor)
        assert at >= 0, f"{agent}: not found verbatim after offset {cursor}: {needle[:120]!r}"
        gaps.append(text[cursor:at])
        cursor = at + len(needle)
    gaps.append(text[cursor:])
    leftover = "".join(gaps)
    if span is not None:
        for tag in SPAN_WRAPPER:
            leftover = leftover.replace(tag, "", 1)
    return leftover.strip()


@pytest.mark.parametrize("agent", sorted(SOURCES))
def test_renders_the_agents_words_verbatim_around_the_real_conversation(agent, wild, real_request_parts):
    source = SOURCES[agent]
    trace, split, span = real_request_parts
    assert len(span) > 1000
    # the request the recall suite sends (inline shape), on a real trace
    [message] = build_request(trace, split, wild[source["prompt"]], budget=777, shape="inline", focus="(a focus line)")
    text = str(message.content)
    # Nothing but the agent's words, the conversation where the agent puts it and its
    # <conversation> wrapper: no budget line, no focus line, no word of the harness's own.
    assert _leftover(agent, text, _expected(WILD / agent, source), span) == ""
    assert "777" not in text.replace(span, "") and "(a focus line)" not in text


@pytest.mark.parametrize("agent", sorted(SOURCES))
def test_messages_shape_sends_the_words_after_the_conversation(agent, wild, real_request_parts):
    source = SOURCES[agent]
    trace, split, span = real_request_parts
    request = build_request(trace, split, wild[source["prompt"]], budget=777, shape="messages", focus=None)
    assert len(request) > 2 and span not in str(request[-1].content)
    assert _leftover(agent, str(request[-1].content), _expected(WILD / agent, source), None) == ""


@pytest.mark.parametrize("agent", sorted(SOURCES))
def test_lint_is_clean_and_every_field_can_be_removed(agent, wild):
    candidate = wild[SOURCES[agent]["prompt"]]
    found = lint_prompt(candidate.path)
    assert not found.problems and not found.warnings, (found.problems, found.warnings)
    full = candidate.render(budget=500, span="(conversation)")
    for field in candidate.fields:
        assert len(candidate.without(field).render(budget=500, span="(conversation)")) < len(full)


def test_the_default_prompt_set_is_unchanged():
    default = load_candidates([ROOT / "prompts"])
    assert [c.name for c in default] == ["handoff", "inspect_default", "recall_max", "terse"]
    assert all(c.path.parent == ROOT / "prompts" for c in default)
    # and by the default name, as `run` and `recall` resolve it
    assert [c.name for c in load_candidates(["prompts"])] == [c.name for c in default]


def test_a_folder_reads_its_subfolders_only_when_it_has_no_template_of_its_own(tmp_path):
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "a.j2").write_text("x")
    (tmp_path / "own" / "sub").mkdir()
    (tmp_path / "own" / "sub" / "b.j2").write_text("x")
    (tmp_path / "own" / "_partial.j2").write_text("x")
    assert folder_templates(tmp_path / "own") == [tmp_path / "own" / "a.j2"]
    (tmp_path / "none" / "one").mkdir(parents=True)
    (tmp_path / "none" / "one" / "c.j2").write_text("x")
    (tmp_path / "none" / "one" / "_span.j2").write_text("x")
    assert folder_templates(tmp_path / "none") == [tmp_path / "none" / "one" / "c.j2"]
