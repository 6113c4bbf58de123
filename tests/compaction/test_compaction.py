"""Compaction of one sample: the split, both prompt shapes, the enforced budget, the context."""

from __future__ import annotations

import asyncio

import pytest
from inspect_ai.model import (
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)

from compaction_eval.compaction.compact import (
    ANCHOR_LABEL,
    SUMMARY_LABEL,
    build_request,
    compact_sample,
)
from compaction_eval.compaction.split import split_history
from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.contracts.tokens import count_tokens
from compaction_eval.contracts.traces import load_trace, trace_from_json
from conftest import ROOT
from conftest import real_trace as shipped_trace
from test_lint import TRACE


@pytest.fixture(scope="module")
def real_trace():
    return load_trace(shipped_trace("django__django-11087"))


@pytest.fixture(scope="module")
def prompts():
    return {c.name: c for c in load_candidates([ROOT / "prompts"])}


def test_split_keeps_head_and_tail_and_never_orphans_a_tool_result():
    trace = trace_from_json(TRACE)
    # keep_last=2 would start the tail at messages[3]; keep_last=3 at messages[2], a tool
    # result whose call is in messages[1]: the tail moves back to include the call.
    split = split_history(trace, 5, keep_last=3)
    assert (split.head_end, split.tail_start) == (1, 1)
    split = split_history(trace, 5, keep_last=2)
    assert (split.head_end, split.tail_start) == (1, 3)
    assert list(split.middle) == [1, 2]


def test_both_shapes_carry_the_same_span(real_trace, prompts):
    split = split_history(real_trace, 40, keep_last=4)
    inline = build_request(real_trace, split, prompts["handoff"], budget=500, shape="inline", focus=None)
    assert len(inline) == 1 and "<conversation>" in inline[0].text
    chat = build_request(real_trace, split, prompts["handoff"], budget=500, shape="messages", focus=None)
    assert chat[0].role == "system" and isinstance(chat[-1], ChatMessageUser)
    assert "<conversation>" not in chat[-1].text and "500 tokens" in chat[-1].text
    # the request and a command from the end of the span appear in both shapes; the tail does not
    for probe in (real_trace.texts[0][:60], real_trace.texts[split.tail_start - 1][:60]):
        assert probe in inline[0].text and any(probe in m.text for m in chat)
    tail_probe = real_trace.texts[split.tail_start + 1][:60]
    assert tail_probe not in inline[0].text


def test_messages_shape_shares_its_prefix_across_prompts(real_trace, prompts):
    """The cache-friendly shape: only the last message differs between prompts."""
    split = split_history(real_trace, 40, keep_last=4)
    a = build_request(real_trace, split, prompts["handoff"], budget=500, shape="messages", focus=None)
    b = build_request(real_trace, split, prompts["terse"], budget=500, shape="messages", focus=None)
    assert [m.model_dump(exclude={"id"}) for m in a[:-1]] == [m.model_dump(exclude={"id"}) for m in b[:-1]]
    assert a[-1].text != b[-1].text


def test_tool_results_become_tool_messages_with_their_calls():
    trace = trace_from_json(TRACE)
    split = split_history(trace, 5, keep_last=0)
    from compaction_eval.contracts.prompts import load_candidate

    chat = build_request(trace, split, load_candidate(ROOT / "prompts" / "terse.j2"), budget=100, shape="messages", focus=None)
    tools = [m for m in chat if isinstance(m, ChatMessageTool)]
    assert len(tools) == 1 and tools[0].tool_call_id == "call_1" and tools[0].function == "bash"


def _verbose_model(text: str):
    def respond(input, tools, tool_choice, config):
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        out.usage = ModelUsage(input_tokens=1000, output_tokens=count_tokens(text), total_tokens=1000 + count_tokens(text))
        return out

    return get_model("mockllm/model", custom_outputs=respond)


def test_budget_is_enforced_not_requested(real_trace, prompts):
    """A model that ignores max_tokens still yields a summary within the budget."""
    long_text = " ".join(f"django/db/models/deletion.py line {i} was read." for i in range(400))
    model = _verbose_model(long_text)
    result = asyncio.run(compact_sample(model, real_trace, 40, prompts["handoff"], budget=120))
    assert result.summary_tokens <= 120 < result.raw_summary_tokens
    assert result.budget_truncated
    assert result.output_tokens == count_tokens(long_text) and result.input_tokens == 1000


def test_context_is_head_summary_anchor_tail(real_trace, prompts):
    model = _verbose_model("SUMMARY-MARKER the fix goes in deletion.py")
    result = asyncio.run(compact_sample(model, real_trace, 40, prompts["terse"], budget=300, keep_last=4))
    ctx = result.context
    head = real_trace.texts[0][:80]
    tail = real_trace.texts[39][:80]
    order = [ctx.index(real_trace.system[:60]), ctx.index(head), ctx.index(SUMMARY_LABEL), ctx.index("SUMMARY-MARKER"), ctx.index(ANCHOR_LABEL), ctx.rindex(tail)]
    assert order == sorted(order)
    # the summarised middle is not in the context verbatim
    middle_text = real_trace.texts[result.split.head_end + 1][:80]
    assert middle_text not in ctx
    assert result.span_tokens == sum(real_trace.token_counts[i] for i in result.split.summarised)
    assert result.context_tokens < result.history_tokens
