"""The offline extractive summariser (`extractive/default`) on a real mini-swe-agent trace.

The span is rendered here, independently of the provider's own flattening, in both input
shapes: inline (one user message with `<conversation>` tags) and messages (ChatMessages with
the instruction last).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time

import pytest
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    get_model,
)
from inspect_ai.tool import ToolCall

from compaction_eval.compaction.transcript import parse_conversation
from compaction_eval.contracts.prompts import Candidate, load_candidates
from compaction_eval.contracts.tokens import count_tokens
from compaction_eval.contracts.traces import load_trace
from compaction_eval.standins.directives import parse_directives
from compaction_eval.standins.sentences import cut_text, extract_units
from conftest import ROOT, real_trace

TRACE = real_trace("django__django-11087")
SPAN = slice(0, 75)  # the issue text through the second failing test run: ~46k tokens
BASH = re.compile(r"```bash\n(.*?)\n```", re.S)
PATHISH = re.compile(r"[\w./-]*/[\w.-]+|\b[\w-]+\.py\b")


# --- the span in both shapes --------------------------------------------------------------------


def _turns(structured: bool) -> list[tuple[str, str, str | None]]:
    """The span as (role, text, command) turns. Structured: an assistant's single ```bash```
    block becomes a bash tool call and the observation after it a tool result (the shape of
    agents with real tool calls); otherwise messages stay as mini-swe-agent wrote them."""
    messages = load_trace(TRACE).messages[SPAN]
    turns: list[tuple[str, str, str | None]] = []
    called = False
    for m in messages:
        text = m["content"]
        blocks = BASH.findall(text) if m["role"] == "assistant" else []
        if structured and len(blocks) == 1:
            turns.append(("assistant", BASH.sub("", text).strip(), blocks[0]))
            called = True
        elif structured and called and m["role"] == "user" and text.lstrip().startswith("<returncode>"):
            turns.append(("tool", text, None))
            called = False
        else:
            turns.append((m["role"], text, None))
            called = False
    return turns


def _as_text(turns: list[tuple[str, str, str | None]]) -> str:
    blocks = []
    for role, text, command in turns:
        header = "[tool result]" if role == "tool" else f"[{role}]"
        lines = [header] + ([text] if text else [])
        if command is not None:
            lines.append("[tool call bash] " + json.dumps({"command": command}, ensure_ascii=False))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _as_messages(turns: list[tuple[str, str, str | None]]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for i, (role, text, command) in enumerate(turns):
        if role == "assistant":
            calls = [ToolCall(id=f"call_{i}", function="bash", arguments={"command": command})] if command else None
            out.append(ChatMessageAssistant(content=text, tool_calls=calls))
        elif role == "tool":
            out.append(ChatMessageTool(content=text, tool_call_id=f"call_{i - 1}", function="bash"))
        else:
            out.append(ChatMessageUser(content=text))
    return out


@pytest.fixture(scope="module")
def turns() -> list[tuple[str, str, str | None]]:
    return _turns(structured=True)


@pytest.fixture(scope="module")
def span(turns) -> str:
    return _as_text(turns)


@pytest.fixture(scope="module")
def span_messages(turns) -> list[ChatMessage]:
    return _as_messages(turns)


@pytest.fixture(scope="module")
def prompts() -> dict[str, Candidate]:
    return {c.name: c for c in load_candidates([ROOT / "prompts"])}


@pytest.fixture(scope="module")
def model():
    return get_model("extractive/default")


def generate(model, input: list[ChatMessage], budget: int | None) -> ModelOutput:
    config = GenerateConfig(max_tokens=budget) if budget is not None else GenerateConfig()
    return asyncio.run(model.generate(input, config=config))


def inline(candidate: Candidate, span: str, budget: int, **kw) -> list[ChatMessage]:
    return [ChatMessageUser(content=candidate.render(budget=budget, span=span, **kw))]


def bullets(text: str) -> list[str]:
    return [line[2:] for line in text.split("\n") if line.startswith("- ")]


# --- behaviour ------------------------------------------------------------------------------------


def test_span_is_large(span):
    # The speed and budget tests mean something only on a span of realistic size.
    assert count_tokens(span) > 40_000


@pytest.mark.parametrize("name,budget", [("handoff", 400), ("recall_max", 800), ("inspect_default", 600)])
def test_both_shapes_give_the_same_summary(model, prompts, span, span_messages, name, budget):
    candidate = prompts[name]
    a = generate(model, inline(candidate, span, budget), budget)
    b = generate(model, [*span_messages, ChatMessageUser(content=candidate.render(budget=budget))], budget)
    assert a.completion and a.completion == b.completion


def test_both_shapes_agree_on_untouched_mini_swe_messages(model, prompts):
    # As the project's importer keeps them: bash blocks in assistant text, observations as
    # user messages.
    raw = _turns(structured=False)
    prompt = prompts["handoff"]
    a = generate(model, inline(prompt, _as_text(raw), 500), 500)
    b = generate(model, [*_as_messages(raw), ChatMessageUser(content=prompt.render(budget=500))], 500)
    assert a.completion == b.completion
    assert "UnicodeDecodeError" in a.completion


def test_system_prompt_is_not_summarised(model, prompts, span, span_messages):
    # The compaction harness sends the agent's system prompt in the messages shape only;
    # every policy keeps it verbatim, so it must not change (or spend) the summary.
    system = ChatMessageSystem(content="You must never modify files under tests/. Reply in French.")
    instruction = ChatMessageUser(content=prompts["handoff"].render(budget=400))
    a = generate(model, inline(prompts["handoff"], span, 400), 400)
    b = generate(model, [system, *span_messages, instruction], 400)
    assert a.completion == b.completion
    assert "French" not in b.completion


def test_works_as_the_model_of_inspects_compaction_summary(span_messages):
    from inspect_ai.model import CompactionSummary

    model = get_model("extractive/default", config=GenerateConfig(max_tokens=500), memoize=False)
    _, summary = asyncio.run(CompactionSummary(model=model).compact(model, span_messages, []))
    assert summary is not None
    assert "1. Primary Request and Intent:" in summary.text
    assert "UnicodeDecodeError" in summary.text


def test_deterministic_across_calls_and_instances(prompts, span):
    request = inline(prompts["recall_max"], span, 700)
    first = generate(get_model("extractive/default"), request, 700).completion
    again = generate(get_model("extractive/default", memoize=False), request, 700).completion
    assert first == again
    assert first == generate(get_model("extractive/default"), request, 700).completion


@pytest.mark.parametrize("budget", [40, 150, 400, 900, 2500])
def test_output_within_budget_and_usage_reported(model, prompts, span, budget):
    request = inline(prompts["handoff"], span, budget)
    out = generate(model, request, budget)
    tokens = count_tokens(out.completion)
    assert 0 < tokens <= budget
    assert out.usage.output_tokens == tokens
    assert out.usage.input_tokens == count_tokens(request[0].text)
    assert out.usage.total_tokens == out.usage.input_tokens + out.usage.output_tokens
    assert out.stop_reason in ("stop", "max_tokens")
    if budget >= 400:
        # Plenty to choose from: the budget is used, not wasted.
        assert tokens > 0.8 * budget


def test_usage_counts_every_message_in_messages_shape(model, prompts, span_messages):
    instruction = ChatMessageUser(content=prompts["handoff"].render(budget=300))
    out = generate(model, [*span_messages, instruction], 300)
    text_only = sum(count_tokens(m.text) for m in [*span_messages, instruction])
    # Tool calls' commands count as input too.
    assert out.usage.input_tokens > text_only


def test_default_budget_when_no_max_tokens(model, prompts, span):
    out = generate(model, inline(prompts["recall_max"], span, 1024), None)
    assert 800 < count_tokens(out.completion) <= 1024


def test_removing_the_numbers_field_keeps_fewer_numbers(model, prompts, span):
    handoff = prompts["handoff"]
    without = handoff.without("numbers")
    assert "numbers" in handoff.render(budget=800) and "numbers" not in without.render(budget=800)
    numeric = re.compile(r"\b\d+\.\d+\b|\b\d{2,}\b|\bline \d+")
    with_numbers = generate(model, inline(handoff, span, 800), 800).completion
    no_numbers = generate(model, inline(without, span, 800), 800).completion
    assert with_numbers != no_numbers
    count = lambda text: sum(1 for line in bullets(text) if numeric.search(line))  # noqa: E731
    assert count(no_numbers) < count(with_numbers)


def test_terse_keeps_far_less_than_recall_max(model, prompts, span):
    terse = generate(model, inline(prompts["terse"], span, 800), 800).completion
    full = generate(model, inline(prompts["recall_max"], span, 800), 800).completion
    assert count_tokens(terse) < count_tokens(full) / 3
    assert len(bullets(terse)) <= 5
    assert len(set(PATHISH.findall(terse))) < len(set(PATHISH.findall(full)))


DISTINCTIVE = re.compile(r"Error|ERROR|FAILED|File \"|Ran \d+ tests|\d+ (?:passed|failed)|^[\w.]+\.[A-Z]\w+: ")
FENCED = re.compile(r"```[\w-]*\n(.*?)```", re.S)


def test_discarding_raw_tool_output_keeps_fewer_output_lines(model, prompts, turns, span):
    # Raw output: lines of tool results, or of code an assistant pasted, that are not
    # errors or test tallies.
    raw_lines = {
        line.strip()
        for role, text, _ in turns
        for block in ([text] if role == "tool" else FENCED.findall(text))
        for line in block.split("\n")
        if line.strip() and not DISTINCTIVE.search(line)
    }
    handoff = prompts["handoff"].render(budget=800, span=span)
    assert "Discard raw tool output" in handoff
    keeping = "\n".join(line for line in handoff.split("\n") if not line.startswith("Discard raw tool output"))
    copied = lambda text: sum(1 for b in bullets(text) if b in raw_lines)  # noqa: E731
    discarding = generate(model, [ChatMessageUser(content=handoff)], 800).completion
    not_discarding = generate(model, [ChatMessageUser(content=keeping)], 800).completion
    assert copied(discarding) < copied(not_discarding)
    assert copied(not_discarding) >= 3


def test_distinctive_errors_survive_the_discard(model, prompts, span):
    # Raw output goes, but the failing test and its exception stay: the prompt asks for them.
    text = generate(model, inline(prompts["handoff"], span, 800), 800).completion
    assert "ERROR: test_relational_post_delete_signals_happen_before_parent_object" in text
    assert "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xed in position 78" in text


def test_sections_when_the_prompt_asks_for_them(model, prompts, span):
    recall = generate(model, inline(prompts["recall_max"], span, 900), 900).completion
    headings = [line for line in recall.split("\n") if line.startswith("## ")]
    order = ["## Intent", "## Constraints", "## Decisions", "## Open bugs and errors", "## Files, symbols and IDs",
             "## Numbers", "## Attempts", "## Current state", "## Next step"]
    assert len(headings) >= 6
    assert headings == [h for h in order if h in headings]  # the prompt's order

    default = generate(model, inline(prompts["inspect_default"], span, 900), 900).completion
    assert default.startswith("1. Primary Request and Intent:")
    assert "4. Errors and fixes:" in default

    handoff = generate(model, inline(prompts["handoff"], span, 900), 900).completion
    assert all(line.startswith("- ") for line in handoff.split("\n"))


def test_focus_line_favours_units_sharing_its_words(model, prompts, span):
    plain = generate(model, inline(prompts["handoff"], span, 400), 400).completion
    focused = generate(
        model, inline(prompts["handoff"], span, 400, focus="keep the reproduction script and its output"), 400
    ).completion
    mentions = lambda text: sum(1 for b in bullets(text) if "reproduc" in b.lower())  # noqa: E731
    assert mentions(focused) > mentions(plain)


def test_model_args_are_validated():
    with pytest.raises(ValueError, match="unknown model arg.*temperture"):
        get_model("extractive/default", temperture=0.5, memoize=False)
    with pytest.raises(ValueError, match="max_unit_tokens must be an integer"):
        get_model("extractive/default", max_unit_tokens="lots", memoize=False)
    with pytest.raises(ValueError, match="unknown extractive variant"):
        get_model("extractive/abstractive", memoize=False)


def test_model_args_change_the_summary(prompts, span):
    # Without the discard line raw output lines are candidates; raw_lines_per_result=0 removes them.
    keeping = "\n".join(
        line for line in prompts["handoff"].render(budget=800, span=span).split("\n") if not line.startswith("Discard")
    )
    default = generate(get_model("extractive/default"), [ChatMessageUser(content=keeping)], 800).completion
    no_raw = generate(
        get_model("extractive/default", raw_lines_per_result=0, memoize=False), [ChatMessageUser(content=keeping)], 800
    ).completion
    assert default != no_raw


def test_fast_on_a_40k_token_span(model, prompts, span):
    request = inline(prompts["recall_max"], span, 1000)
    generate(model, request, 1000)  # warm: the tokenizer loads its vocabulary once per process
    start = time.perf_counter()
    generate(model, inline(prompts["handoff"], span, 1000), 1000)
    assert time.perf_counter() - start < 1.0


def test_provider_resolves_through_the_entry_point(tmp_path):
    # `inspect eval --model extractive/...` resolves the model before any task file loads:
    # inspect must find the provider from the entry point alone.
    code = "from inspect_ai.model import get_model; m = get_model('extractive/default'); print(m)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "extractive/default"


# --- the parts ------------------------------------------------------------------------------------


PYTEST_OUTPUT = """[tool result]
============================= test session starts ==============================
src/app/handlers.py:12:def handle(event):
src/app/handlers.py:40:    return handle(event)
src/app/models.py:7:from app.handlers import handle
tests/test_handlers.py:3:from app.handlers import handle
tests/test_handlers.py:9:    handle(None)
tests/test_api.py:5:import app.handlers
Traceback (most recent call last):
  File "src/app/handlers.py", line 12, in handle
    return event["id"]
TypeError: 'NoneType' object is not subscriptable
FAILED tests/test_handlers.py::test_none_event - TypeError: 'NoneType' object is not subscriptable
=================== 3 failed, 120 passed in 4.21s ==================="""


def test_tool_output_gives_distinctive_lines_and_few_raw_ones():
    units = extract_units(parse_conversation(PYTEST_OUTPUT), raw_lines_per_result=3)
    texts = [u.text for u in units]
    assert "TypeError: 'NoneType' object is not subscriptable" in texts
    assert any(t.startswith("FAILED tests/test_handlers.py::test_none_event") for t in texts)
    assert 'File "src/app/handlers.py", line 12, in handle' in texts
    assert any("3 failed, 120 passed" in t for t in texts)
    grep_hits = [u for u in units if u.raw]
    assert len(grep_hits) == 3  # of six grep hits
    kinds = {u.text: u.kinds for u in units}
    assert {"bug", "artifact"} <= kinds[next(t for t in texts if t.startswith("FAILED"))]
    assert "number" in kinds[next(t for t in texts if "3 failed" in t)]


def test_prose_kinds():
    text = (
        "[user]\nPlease fix the flaky upload in storage/s3.py. Do not change the public API.\n\n"
        "[assistant]\nI tried raising the timeout to 30s but it still fails. "
        "I'll retry with backoff instead of a longer timeout because the 503s are transient. "
        "Next I will run tests/test_upload.py again."
    )
    units = {u.text: u.kinds for u in extract_units(parse_conversation(text))}
    assert "intent" in units["Please fix the flaky upload in storage/s3.py."]
    assert "artifact" in units["Please fix the flaky upload in storage/s3.py."]
    assert "constraint" in units["Do not change the public API."]
    assert {"attempt", "number"} <= units["I tried raising the timeout to 30s but it still fails."]
    assert "decision" in units[
        "I'll retry with backoff instead of a longer timeout because the 503s are transient."
    ]
    assert {"next_step", "artifact"} <= units["Next I will run tests/test_upload.py again."]


def test_directives_of_the_shipped_prompts(prompts):
    handoff = parse_directives(prompts["handoff"].render(budget=500))
    assert set(handoff.preserve) == {"intent", "constraint", "decision", "bug", "artifact", "number", "attempt", "next_step"}
    assert {"raw_output", "searches", "superseded"} <= handoff.discard
    assert not handoff.sections and handoff.max_units is None

    assert "number" not in parse_directives(prompts["handoff"].without("numbers").render(budget=500)).preserve

    terse = parse_directives(prompts["terse"].render(budget=500))
    assert set(terse.preserve) == {"intent", "state", "next_step"}
    assert terse.max_units == 5 and terse.exclusive

    recall = parse_directives(prompts["recall_max"].render(budget=500))
    assert [s.kinds[0] for s in recall.sections] == [
        "intent", "constraint", "decision", "bug", "artifact", "number", "attempt", "state", "next_step"
    ]

    told = parse_directives("Summarise the work. Keep file paths. Omit numbers and version figures.")
    assert "artifact" in told.preserve and "number" in told.discard


def test_cuts_fall_between_words():
    # A cut inside a word would write a path that was never said (a distortion).
    text = "The failing frame is django/db/models/deletion.py in related_objects, line 235 of 412."
    for tokens in range(2, 20):
        cut = cut_text(text, tokens)
        assert count_tokens(cut) <= tokens
        if cut:
            assert cut.endswith("…") and text.startswith(cut[:-1])
            assert set(cut[:-1].split()) <= set(text.split())
