"""The scripted agent acts only on what its window shows."""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

from compaction_eval.horizon.agent import initial_messages
from compaction_eval.horizon.worlds import get_world
from compaction_eval.standins.scripted import next_action

TOOLS = {"read_file", "grep", "list_dir", "run_tests", "query", "submit"}


def play(world, *, notes=False, upto=None):
    """Run the agent with nothing ever dropped; returns the messages and the final action."""
    msgs = initial_messages(world)
    for n in range(200):
        text, calls = next_action(world, msgs, TOOLS | ({"notes"} if notes else set()))
        if calls[0].function == "submit" or (upto is not None and n == upto):
            return msgs, calls[0]
        msgs.append(ChatMessageAssistant(content=text, tool_calls=calls))
        for c in calls:
            out = "Saved." if c.function == "notes" else world.call(c.function, c.arguments)
            msgs.append(ChatMessageTool(content=out, tool_call_id=c.id, function=c.function))
    raise AssertionError("agent never submitted")


def test_follows_the_plan_and_answers_exactly_with_everything_visible():
    for wid in ("build-01", "audit-02", "query-03"):
        world = get_world(wid)
        msgs, submit = play(world)
        done = [c.function for m in msgs if isinstance(m, ChatMessageAssistant) for c in m.tool_calls]
        assert done == [s.function for s in world.plan]
        verdict = world.check(submit.arguments["answer"], [(c.function, c.arguments) for m in msgs
                                                          if isinstance(m, ChatMessageAssistant) for c in m.tool_calls])
        assert verdict["completed"], (wid, submit.arguments["answer"], verdict)


def test_takes_notes_of_evidence_when_offered_a_notes_tool():
    world = get_world("build-01")
    msgs, _ = play(world, notes=True)
    notes = [c.arguments["text"] for m in msgs if isinstance(m, ChatMessageAssistant) for c in m.tool_calls if c.function == "notes"]
    assert any(world.expected["test"] in n for n in notes) and any(world.expected["code"] in n for n in notes)


def test_reruns_a_tool_whose_result_is_gone():
    world = get_world("build-02")
    msgs, _ = play(world)
    # The run_tests result (the failing test) is evicted: the agent must run the tests again.
    first = next(i for i, m in enumerate(msgs) if isinstance(m, ChatMessageTool))
    msgs[first] = ChatMessageTool(content="[evicted]", tool_call_id=msgs[first].tool_call_id, function="run_tests")
    text, calls = next_action(world, msgs, TOOLS)
    assert calls[0].function == "run_tests" and "no longer in my context" in text


def test_without_the_request_it_knows_neither_format_nor_constraint():
    build = get_world("build-01")
    msgs, submit = play(build)
    assert submit.arguments["answer"].startswith("RESULT ")
    headless = msgs[2:]  # system prompt and request truncated away
    _, calls = next_action(build, headless, TOOLS)
    answer = calls[0].arguments["answer"]
    assert calls[0].function == "submit" and build.expected["code"] in answer
    assert not build.check(answer, [])["format_ok"]
    world = get_world("query-01")
    msgs, _ = play(world)
    # The db constraint lives in the request only.
    _, first = next_action(world, initial_messages(world), TOOLS)
    assert first[0].arguments["db"] == "replica"
    _, later = next_action(world, msgs[3:5], TOOLS)
    assert later[0].arguments.get("db") == "primary"


def test_progress_comes_from_the_latest_visible_call():
    world = get_world("build-03")
    msgs, _ = play(world, upto=4)
    tail = msgs[-2:]  # only the latest call and result survive
    _, calls = next_action(world, tail, TOOLS)
    step = world.plan.index(next(s for s in world.plan if s.key == (calls[0].function, "|".join(f"{k}={v}" for k, v in sorted(calls[0].arguments.items())))))
    assert step == 4  # steps 0-3 were run; only step 3 is still visible
    _, restart = next_action(world, initial_messages(world), TOOLS)
    assert restart[0].function == world.plan[0].function
