"""Context policies on small hand-made histories: what each keeps, drops and re-anchors."""

from __future__ import annotations

import asyncio

import pytest
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    get_model,
)
from inspect_ai.tool import ToolCall

from compaction_eval.compaction.compact import ANCHOR_LABEL, SUMMARY_LABEL
from compaction_eval.contracts.chat_tokens import messages_tokens
from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.horizon.policies.eviction import TieredEviction, is_tombstone
from compaction_eval.horizon.policies.full import FullCompaction
from compaction_eval.horizon.policies.notes import NotesBook
from compaction_eval.horizon.policies.resolve import PolicySpec, make_policy
from compaction_eval.horizon.policies.truncation import BaselineTruncation
from conftest import ROOT

REQUEST = "Find the failing test. Answer format (one line, exactly): RESULT test=<test>"
FILLER = "\n".join(f"line {i} of a long tool output with words cache loader session" for i in range(60))


def history(n_steps: int = 6, repeat_first: bool = False):
    msgs = [ChatMessageSystem(content="You are careful."), ChatMessageUser(content=REQUEST)]
    for i in range(n_steps):
        path = "src/a.py" if repeat_first and i in (0, n_steps - 2) else f"src/mod_{i}.py"
        call = ToolCall(id=f"c{i}", function="read_file", arguments={"path": path})
        msgs.append(ChatMessageAssistant(content=f"Step {i}", tool_calls=[call]))
        msgs.append(ChatMessageTool(content=f"{path}\n{FILLER}\nmarker ERR{i}0042", tool_call_id=f"c{i}", function="read_file"))
    return msgs


def pairing_ok(messages) -> bool:
    calls = [c.id for m in messages if isinstance(m, ChatMessageAssistant) for c in m.tool_calls or []]
    results = [m.tool_call_id for m in messages if isinstance(m, ChatMessageTool)]
    return sorted(calls) == sorted(results) and len(set(results)) == len(results)


def run(coro):
    return asyncio.run(coro)


def test_baseline_truncation_drops_the_head_on_overflow():
    msgs = history(8)
    window = messages_tokens(msgs) // 2
    policy = BaselineTruncation(window=window, output_reserve=0)
    out, extra = run(policy.compact(None, msgs, []))
    assert extra is None and messages_tokens(out) <= window
    assert not any(isinstance(m, ChatMessageSystem) for m in out)
    assert all(REQUEST not in m.text for m in out)
    assert policy.preserve_prefix is False
    # No result is left without its call: an orphan becomes plain user text.
    called = {c.id for m in out if isinstance(m, ChatMessageAssistant) for c in m.tool_calls or []}
    assert all(m.tool_call_id in called for m in out if isinstance(m, ChatMessageTool))
    assert out[-1].text.endswith("ERR70042")


def test_eviction_keeps_head_pairing_and_recent_results():
    msgs = history(8)
    window = messages_tokens(msgs[:2]) + 4 * messages_tokens([msgs[3]]) + 200
    policy = TieredEviction(window=window, output_reserve=0, keep_recent=2)
    out, _ = run(policy.compact(None, msgs, []))
    assert out[:2] == msgs[:2]  # the head is never evicted
    assert pairing_ok(out) and len(out) == len(msgs)
    assert messages_tokens(out) <= policy.target(msgs)
    tombstones = [m for m in out if is_tombstone(m)]
    assert tombstones and all("evicted by the context policy" in m.text and "read_file" in m.text for m in tombstones)
    assert "ERR70042" in out[-1].text and "ERR60042" in out[-3].text  # the latest two stay


def test_eviction_headroom_comes_from_the_largest_tool_output():
    msgs = history(3)
    policy = TieredEviction(window=10_000, output_reserve=100)
    largest = max(messages_tokens([m]) for m in msgs if isinstance(m, ChatMessageTool))
    assert policy.target(msgs) == 10_000 - 100 - largest


def test_eviction_evicts_redundant_before_unreferenced_and_spares_cited_results():
    msgs = history(6, repeat_first=True)  # step 0 and step 4 both read src/a.py
    # Step 2's result is cited later: the agent's text names its marker.
    msgs[-2] = ChatMessageAssistant(content="As ERR20042 showed, continue.", tool_calls=msgs[-2].tool_calls)
    one = messages_tokens([msgs[3]])
    policy = TieredEviction(window=messages_tokens(msgs) - one // 2, output_reserve=0, keep_recent=1)
    out = policy.evict(msgs, messages_tokens(msgs) - one // 2)
    evicted = [i for i, m in enumerate(out) if is_tombstone(m)]
    assert evicted == [3]  # the redundant read of src/a.py, nothing else
    assert out[3].metadata["tier"] == "redundant"
    out = policy.evict(msgs, messages_tokens(msgs) - int(3.5 * one))  # needs four evictions (tombstones cost a little)
    tiers = {i: out[i].metadata["tier"] for i, m in enumerate(out) if is_tombstone(m)}
    assert sorted(tiers) == [3, 5, 9, 11] and not is_tombstone(out[7])  # the cited result stays
    assert tiers[3] == "redundant" and {tiers[5], tiers[9], tiers[11]} == {"unreferenced"}
    assert pairing_ok(out)


def test_full_keeps_head_and_tail_verbatim_and_reanchors():
    msgs = history(8)
    notes = NotesBook()
    notes.add("FAILED tests/test_x.py::test_y")
    candidate = next(c for c in load_candidates([ROOT / "prompts"]) if c.name == "handoff")
    window = messages_tokens(msgs) // 2
    policy = FullCompaction(window=window, candidate=candidate, notes=notes, budget=300, keep_last=4, output_reserve=0,
                            compactor=get_model("extractive/default"))
    out, _ = run(policy.compact(get_model("extractive/default"), msgs, []))
    assert out[:2] == msgs[:2]
    assert out[-4:] == msgs[-4:]
    summary = out[2]
    assert isinstance(summary, ChatMessageUser) and summary.metadata == {"summary": True}
    assert SUMMARY_LABEL in summary.text and f"{ANCHOR_LABEL}\n{REQUEST}" in summary.text
    assert "FAILED tests/test_x.py::test_y" in summary.text  # the notes ride with the anchor
    assert policy.calls and policy.calls[0]["output_tokens"] <= 300
    assert messages_tokens(out) < messages_tokens(msgs)
    assert not isinstance(out[3], ChatMessageTool)  # the tail never starts with a result


def test_full_takes_budget_keep_last_and_focus_from_its_compaction_settings():
    from inspect_ai.model import ModelOutput, ModelUsage

    from compaction_eval.contracts.settings import CompactionSettings

    seen = []

    def answer(input, tools, tool_choice, config):  # what the compactor is asked, and within what budget
        seen.append((input[-1].text, config.max_tokens))
        out = ModelOutput.from_content("mockllm/model", "- the summary")
        out.usage = ModelUsage(input_tokens=1, output_tokens=3, total_tokens=4)
        return out

    msgs = history(8)
    settings = CompactionSettings(budget=250, keep_last=2, focus="the flaky signal test")
    spec = PolicySpec("full", prompts_dir=str(ROOT / "prompts"), compaction=settings, output_reserve=0)
    policy = make_policy(spec, messages_tokens(msgs) // 2, NotesBook(), compactor=get_model("mockllm/model", custom_outputs=answer))
    out, _ = run(policy.compact(get_model("extractive/default"), msgs, []))
    [(prompt, max_tokens)] = seen
    assert "Focus: the flaky signal test" in prompt and max_tokens <= 250
    assert out[-2:] == msgs[-2:] and SUMMARY_LABEL in out[-3].text  # two messages kept verbatim, not four


def test_builtins_and_user_strategies_resolve_by_name():
    from inspect_ai.model import CompactionEdit, CompactionSummary, CompactionTrim

    notes = NotesBook()
    assert isinstance(make_policy(PolicySpec("inspect-edit"), 8000, notes), CompactionEdit)
    assert isinstance(make_policy(PolicySpec("inspect-trim"), 8000, notes), CompactionTrim)
    assert isinstance(make_policy(PolicySpec("inspect-summary"), 8000, notes), CompactionSummary)
    user = make_policy(PolicySpec("inspect_ai.model:CompactionTrim"), 8000, notes)
    assert isinstance(user, CompactionTrim) and user.threshold == 8000 - 512
    with pytest.raises(ValueError):
        make_policy(PolicySpec("no_such_module:Thing"), 8000, notes)
    with pytest.raises(ValueError):
        make_policy(PolicySpec("nonsense"), 8000, notes)


def test_full_shortens_a_tail_that_alone_would_overflow():
    msgs = history(8)
    candidate = next(c for c in load_candidates([ROOT / "prompts"]) if c.name == "handoff")
    one = messages_tokens([msgs[3]])
    window = messages_tokens(msgs[:2]) + 2 * one + 400  # four tail messages hold two results: too many
    policy = FullCompaction(window=window, candidate=candidate, notes=NotesBook(), budget=300, keep_last=4,
                            output_reserve=0, compactor=get_model("extractive/default"))
    out, _ = run(policy.compact(get_model("extractive/default"), msgs, []))
    assert messages_tokens(out) <= window - one
    assert out[-2:] == msgs[-2:] and isinstance(out[-2], ChatMessageAssistant)
    assert pairing_ok(out[3:])
