"""What replay, decay and probes share: the model, recorded traces as chat messages, the
visible text of a context."""

from __future__ import annotations

import re
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.tool import ToolCall, ToolInfo, ToolParams
from inspect_ai.util import JSONSchema

from compaction_eval.compaction.render import to_chat_messages
from compaction_eval.contracts.traces import Trace

# A text-protocol agent (mini-swe-agent) writes its command as a fenced block in the
# assistant text and gets the output back as the next user message: replayed as a tool call
# and its result, so that policies that act on tool results (eviction) see them as such.
_FENCED = re.compile(r"```(?:bash|sh|shell)[ \t]*\n(.*?)```", re.DOTALL)
TEXT_BASH_TOOL = ToolInfo(
    name="bash",
    description="Run a bash command (the recorded agent wrote it as a fenced block; replayed as a tool call).",
    parameters=ToolParams(properties={"command": JSONSchema(type="string", description="the command")}, required=["command"]),
)


def open_model(name: str, *, max_retries: int = 4, timeout: int = 120, model_args: dict[str, Any] | None = None) -> Model:
    """The inspect model `name` with bounded retries (inspect's are unbounded by default)."""
    from compaction_eval.compaction.session import provider_args

    return get_model(name, config=GenerateConfig(max_retries=max_retries, timeout=timeout), **provider_args(name, model_args))


def trace_tools(trace: Trace) -> list[ToolInfo]:
    tools = []
    for t in trace.tools:
        try:
            params = ToolParams.model_validate(t.get("input_schema") or {})
        except ValueError:
            params = ToolParams()
        tools.append(ToolInfo(name=str(t["name"]), description=str(t.get("description") or t["name"]), parameters=params))
    return tools


def _uses_tool_blocks(trace: Trace) -> bool:
    return any(isinstance(m.get("content"), list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in m["content"])
               for m in trace.messages)


def replay_messages(trace: Trace) -> tuple[list[list[ChatMessage]], list[ToolInfo], str]:
    """Per trace message, the chat messages it becomes; the tools; the tool protocol.

    `protocol` is `tool_use` (the trace's own tool calls), `text-bash` (fenced bash blocks
    answered by the next user message, replayed as tool calls) or `none`.
    """
    msgs = trace.messages
    if _uses_tool_blocks(trace):
        out: list[list[ChatMessage]] = []
        for i, m in enumerate(msgs):
            if m.get("role") == "user" and i > 0 and msgs[i - 1].get("role") == "assistant":
                out.append(to_chat_messages([msgs[i - 1], m])[1:])  # results know their call's name
            else:
                out.append(to_chat_messages([m]))
        return out, trace_tools(trace), "tool_use"
    out = []
    pending: str | None = None
    text_calls = False
    for i, m in enumerate(msgs):
        text = trace.texts[i]
        if m.get("role") == "assistant":
            blocks = _FENCED.findall(text)
            answered = i + 1 < len(msgs) and msgs[i + 1].get("role") == "user"
            if len(blocks) == 1 and answered:
                pending = f"replay_{i:05d}"
                text_calls = True
                out.append([ChatMessageAssistant(content=text, tool_calls=[ToolCall(id=pending, function="bash", arguments={"command": blocks[0].strip()})])])
            else:
                pending = None
                out.append([ChatMessageAssistant(content=text)])
        elif pending is not None:
            out.append([ChatMessageTool(content=text, tool_call_id=pending, function="bash")])
            pending = None
        else:
            out.append([ChatMessageUser(content=text)])
    return out, (trace_tools(trace) + [TEXT_BASH_TOOL] if text_calls else trace_tools(trace)), ("text-bash" if text_calls else "none")


def system_messages(trace: Trace) -> list[ChatMessage]:
    return [ChatMessageSystem(content=trace.system)] if trace.system else []


def pairing_problems(view: list[ChatMessage]) -> list[str]:
    """Every way `view` breaks tool-call pairing: a result whose call is not in the assistant
    message just before its run of results, or a call (other than in the last message) left
    without its result."""
    problems = []
    open_calls: set[str] = set()
    for n, m in enumerate(view):
        if isinstance(m, ChatMessageAssistant):
            if open_calls:
                problems.append(f"message {n}: call(s) {sorted(open_calls)} have no result")
            open_calls = {c.id for c in m.tool_calls or []}
        elif isinstance(m, ChatMessageTool):
            if m.tool_call_id not in open_calls:
                problems.append(f"message {n}: result for {m.tool_call_id!r} answers no call of the previous assistant message")
            open_calls.discard(m.tool_call_id or "")
        elif open_calls:
            problems.append(f"message {n}: call(s) {sorted(open_calls)} have no result before the next message")
            open_calls = set()
    return problems
