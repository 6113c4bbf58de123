"""`scripted/default`: the offline scripted agent for the long-horizon worlds (not an LLM).

It follows its world's reference plan, but everything it knows comes from the request it is
sent, so offline completion measures what a context policy keeps, not reasoning:

- which world it is in: the workspace tag in the tool descriptions (tools are sent with every
  request, like a real agent's tool list);
- where it is in the plan: the furthest plan step among the tool calls still visible;
- what the task, the constraint and the answer format are: the request text, if visible;
- the answer fields: extracted only from visible text (tool results, summaries, notes).

When a result the answer needs is no longer visible it re-runs that tool (as forgetful
agents do, at a cost), at most once in a row per step and never more re-runs in view than
plan steps. With a `notes` tool offered, it copies the evidence lines of each result it
needs into a note right after reading them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    GenerateConfig,
    ModelInfo,
    ModelOutput,
    ModelUsage,
    set_model_info,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from compaction_eval.contracts.chat_tokens import (
    message_tokens,
    render_call,
    tools_tokens,
)
from compaction_eval.horizon.worlds import get_world
from compaction_eval.horizon.worlds.model import PlanStep, World
from compaction_eval.standins.local import LocalModelAPI

VARIANTS = ("default",)
CONTEXT_WINDOW = 1_000_000  # the suite, not the model, enforces each world's window
_TAG = re.compile(r"\[workspace ([\w-]+) size=(\w+)\]")
_FORMAT = re.compile(r"Answer format \(one line, exactly\): (.+)")
_DB = re.compile(r'pass db="(\w+)"')
# A tool call as summaries write it (models/transcript.py, policies/full.py): `[tool call f] {json}`.
_NARRATION = re.compile(r"Step (\d+)/(\d+): ")
_RENDERED_CALL = re.compile(r"\[tool call (\w+)\] (\{[^\n]*?\})")


class ScriptedAgent(LocalModelAPI):
    """Offline scripted agent (see module docstring). No model args."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], GenerateConfig() if config is None else config)
        if model_name not in VARIANTS:
            raise ValueError(f"unknown scripted variant {model_name!r}: use scripted/default")
        if model_args:
            raise ValueError(f"scripted/default takes no model args (got {', '.join(sorted(model_args))})")
        set_model_info(
            f"scripted/{model_name}",
            ModelInfo(organization="compaction-eval", model="scripted agent, not an LLM",
                      context_length=CONTEXT_WINDOW, output_tokens=4096),
        )

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        world = _world_from_tools(tools)
        calls: list[ToolCall]
        if world is None:
            text, calls = "I have no workspace tools: nothing to do.", []
        else:
            text, calls = next_action(world, input, {t.name for t in tools})
        message = ChatMessageAssistant(content=text, tool_calls=calls or None, model=f"scripted/{self.model_name}")
        output = ModelOutput.from_message(message, stop_reason="tool_calls" if calls else "stop")
        input_tokens = tools_tokens(tools) + sum(message_tokens(m) for m in input)
        output_tokens = message_tokens(message)
        output.usage = ModelUsage(input_tokens=input_tokens, output_tokens=output_tokens,
                                  total_tokens=input_tokens + output_tokens)
        return output


def _world_from_tools(tools: list[ToolInfo]) -> World | None:
    for t in tools:
        m = _TAG.search(t.description or "")
        if m:
            return get_world(m.group(1), m.group(2))
    return None


def visible_text(messages: list[ChatMessage]) -> str:
    """Everything the agent can read in its window, as one text."""
    parts: list[str] = []
    for m in messages:
        parts.append(m.text)
        if isinstance(m, ChatMessageAssistant):
            for c in m.tool_calls or []:
                parts.append(render_call(c.function, c.arguments))
                # Notes are read as written (the JSON rendering escapes their newlines).
                if c.function == "notes":
                    parts.append(str(c.arguments.get("text", "")))
    return "\n".join(parts)


def call_key(function: str, args: dict[str, Any]) -> tuple[str, str]:
    return PlanStep(function, {k: str(v) for k, v in args.items()}).key


def next_action(world: World, messages: list[ChatMessage], tool_names: set[str]) -> tuple[str, list[ToolCall]]:
    """The agent's next message: (text, tool calls) from what `messages` shows.

    Tool-call ids are derived from the request, so the same request always gets the same
    answer: a rerun's requests then match the generate cache, call for call.
    """
    text, calls = _next_action(world, messages, tool_names)
    seed = hashlib.sha1(f"{len(messages)}|{visible_text(messages)}".encode("utf-8")).hexdigest()
    for i, call in enumerate(calls):
        key = f"{seed}|{i}|{call.function}|{json.dumps(call.arguments, sort_keys=True, default=str)}"
        call.id = "call_" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
    return text, calls


def _next_action(world: World, messages: list[ChatMessage], tool_names: set[str]) -> tuple[str, list[ToolCall]]:
    text = visible_text(messages)
    step_index = {s.key: i for i, s in enumerate(world.plan)}
    calls = [(c.function, c.arguments) for m in messages if isinstance(m, ChatMessageAssistant) for c in m.tool_calls or []]
    keys = [call_key(f, a) for f, a in calls if f not in ("notes", "submit")]
    # Calls a summary mentions count as done too: an agent reading "I ran X" knows it did.
    summarised = [k for k in (_rendered_key(m) for m in _RENDERED_CALL.finditer(text)) if k is not None]
    progress = max((step_index[k] for k in keys + summarised if k in step_index), default=-1)
    # Its own narration ("Step 4/9: ...") survives in summaries that drop the calls.
    narrated = [int(k) - 1 for k, n in _NARRATION.findall(text) if int(n) == len(world.plan)]
    progress = max([progress, *[k for k in narrated if k < len(world.plan)]])
    db_match = _DB.search(text)
    db = db_match.group(1) if db_match else "primary"

    # 1. Copy the evidence of a result just read into notes (when the policy offers notes).
    last = messages[-1] if messages else None
    if "notes" in tool_names and isinstance(last, ChatMessageTool):
        step = _step_of_result(world, messages, last, step_index)
        if step is not None and step.evidence:
            lines = [ln for ln in last.text.splitlines() if re.search(step.evidence, ln)]
            noted = "\n".join(str(a.get("text", "")) for f, a in calls if f == "notes")
            if lines and not all(ln in noted for ln in lines):
                note = f"{step.function} {json.dumps(step.args, sort_keys=True)}:\n" + "\n".join(lines)
                return "Saving the evidence from that result to my notes.", [_call("notes", {"text": note})]

    # 2. Follow the plan from the furthest step still visible.
    if progress < len(world.plan) - 1:
        step = world.plan[progress + 1]
        return f"Step {progress + 2}/{len(world.plan)}: {step.function}.", [_call(step.function, _args(step, db))]

    # 3. Before answering, re-run a step whose needed result is no longer visible.
    constraint_visible = world.constraint in text
    found = world.extract(text, constraint_visible)
    reruns = len(keys) - len(set(keys))
    latest = keys[-1] if keys else None
    for step in world.plan:
        if step.yields and any(found.get(y) is None for y in step.yields):
            if step.key != latest and reruns < len(world.plan):
                return (f"The result of {step.function} I need is no longer in my context: running it again.",
                        [_call(step.function, _args(step, db))])

    # 4. Answer from what is visible, in the format the visible request asks for.
    values = {name: found.get(name) or "unknown" for name in world.expected}
    fmt = _FORMAT.search(text)
    if fmt:
        answer = fmt.group(1).strip()
        for name, value in values.items():
            answer = answer.replace(f"<{name}>", value)
    else:
        answer = "; ".join(f"{name}: {value}" for name, value in values.items())
    return "Submitting the answer.", [_call("submit", {"answer": answer})]


def _rendered_key(match: re.Match) -> tuple[str, str] | None:
    try:
        args = json.loads(match.group(2))
    except json.JSONDecodeError:
        return None
    return call_key(match.group(1), args) if isinstance(args, dict) else None


def _step_of_result(world: World, messages: list[ChatMessage], result: ChatMessageTool,
                    step_index: dict[tuple[str, str], int]) -> PlanStep | None:
    for m in reversed(messages):
        if isinstance(m, ChatMessageAssistant):
            for c in m.tool_calls or []:
                if c.id == result.tool_call_id:
                    i = step_index.get(call_key(c.function, c.arguments))
                    return world.plan[i] if i is not None else None
    return None


def _args(step: PlanStep, db: str) -> dict[str, str]:
    return {**step.args, "db": db} if step.function == "query" else dict(step.args)


def _call(function: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id="", function=function, arguments=arguments)  # id set by next_action
