r"""The two input shapes a summariser receives, reduced to (conversation text, instruction).

*inline*: one user message holding ``<conversation>\n...span...\n</conversation>`` and the
compaction prompt. *messages*: the span as chat messages followed by a last user message
holding only the prompt. Both become the same conversation text, rendered as::

    [user]
    <text>

    [assistant]
    <text>
    [tool call bash] {"command": "grep -rn foo src/"}

    [tool result]
    <output>

so that a summary does not depend on the shape it was asked in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inspect_ai.model import ChatMessage, ChatMessageAssistant

OPEN_TAG = "<conversation>"
CLOSE_TAG = "</conversation>"

ROLE_HEADERS = {"system": "[system]", "user": "[user]", "assistant": "[assistant]", "tool": "[tool result]"}


@dataclass(frozen=True)
class Request:
    """A summarisation request.

    Args:
        conversation: the span to summarise, as rendered text.
        instruction: the compaction prompt (everything that is not the span).
        shape: "inline" when the span came inside `<conversation>` tags, else "messages".
    """

    conversation: str
    instruction: str
    shape: Literal["inline", "messages"]


def render_tool_call(function: str, arguments: Any) -> str:
    """One tool call as a line: `[tool call bash] {"command": "ls"}` (arguments as JSON)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"[tool call {function}] {args}"


def render_message(message: ChatMessage) -> str:
    """One chat message as a block of the conversation text (header line, then its text)."""
    lines = [ROLE_HEADERS.get(message.role, f"[{message.role}]")]
    text = message.text.strip("\n")
    if text:
        lines.append(text)
    if isinstance(message, ChatMessageAssistant):
        lines += [render_tool_call(call.function, call.arguments) for call in message.tool_calls or []]
    return "\n".join(lines)


def render_messages(messages: Sequence[ChatMessage]) -> str:
    """Chat messages as conversation text (blocks separated by a blank line)."""
    return "\n\n".join(render_message(m) for m in messages)


def split_request(messages: Sequence[ChatMessage]) -> Request:
    """Separate the span from the instruction, whichever shape `messages` has.

    The instruction is the last user message (minus the tagged span, if any); every other
    message is conversation. Tool messages count as conversation even when last.
    """
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if last_user is None:
        return Request(render_messages(messages), "", "messages")
    before = [m for i, m in enumerate(messages) if i != last_user]
    text = messages[last_user].text
    start = text.find(OPEN_TAG)
    end = text.rfind(CLOSE_TAG)
    if start < 0 or end < start:
        return Request(render_messages(before), text.strip(), "messages")
    span = _strip_one_newline(text[start + len(OPEN_TAG) : end])
    instruction = (text[:start] + "\n" + text[end + len(CLOSE_TAG) :]).strip()
    conversation = "\n\n".join(part for part in (render_messages(before), span) if part)
    return Request(conversation, instruction, "inline")


def _strip_one_newline(span: str) -> str:
    # The tag sits on its own line: drop exactly the newline after <conversation> and the
    # one before </conversation>, keeping any other whitespace that belongs to the span.
    if span.startswith("\n"):
        span = span[1:]
    if span.endswith("\n"):
        span = span[:-1]
    return span


@dataclass(frozen=True)
class Segment:
    """One piece of the conversation text.

    Args:
        index: position among the segments (0-based).
        role: "system", "user", "assistant", "tool_call" or "tool_result".
        text: the segment's text (for a tool call, the command or the arguments).
        tool: the tool's name, for tool calls.
    """

    index: int
    role: str
    text: str
    tool: str = ""


_HEADER = re.compile(r"^\[(system|user|assistant|tool result|tool)\][ \t]*$")
_TOOL_CALL = re.compile(r"^\[tool call ([^\]\n]*)\] ?(.*)$")
# Observations of agents that run commands without structured tool calls (mini-swe-agent)
# arrive as user messages; their shape gives them away.
_OBSERVATION = re.compile(r"^\s*<(returncode|output|observation)>")


def parse_conversation(text: str) -> list[Segment]:
    """Conversation text (see module docstring) as segments, in order.

    Text with no role headers is read as one user message. A user message that looks like a
    command's observation (`<returncode>...`) is read as a tool result.
    """
    pieces: list[tuple[str, list[str], str]] = []  # (role, lines, tool)
    role, tool = "user", ""
    lines: list[str] = []
    for line in text.split("\n"):
        header = _HEADER.match(line)
        call = _TOOL_CALL.match(line) if not header else None
        if header or call:
            pieces.append((role, lines, tool))
            if header:
                name = header.group(1)
                role, lines, tool = ("tool_result" if name.startswith("tool") else name), [], ""
            else:
                assert call is not None
                pieces.append(("tool_call", [_call_text(call.group(2))], call.group(1)))
                # Text after a tool call (rare) still belongs to the assistant turn.
                role, lines, tool = "assistant", [], ""
            continue
        lines.append(line)
    pieces.append((role, lines, tool))

    segments: list[Segment] = []
    for role, lines, tool in pieces:
        body = "\n".join(lines).strip("\n")
        if not body.strip():
            continue
        if role == "user" and _OBSERVATION.match(body):
            role = "tool_result"
        segments.append(Segment(len(segments), role, body, tool))
    return segments


def _call_text(arguments: str) -> str:
    # A call's arguments are JSON; a reader needs the command, not the JSON wrapping.
    try:
        args = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(args, str):
        return args
    if not isinstance(args, dict):
        return arguments
    scalars = {k: v for k, v in args.items() if isinstance(v, (str, int, float, bool))}
    if len(args) == 1 and len(scalars) == 1:
        return str(next(iter(scalars.values())))
    if scalars:
        return " ".join(f"{k}={v}" for k, v in scalars.items())
    return json.dumps(args, ensure_ascii=False)
