"""Tool calls written inline in assistant text (`<function=NAME>...</function>`).

SWE-agent's XML function-calling prompt (the SWE-smith trajectories) and OpenHands in
non-native function-calling mode (the SWE-Play trajectories) describe the tools in the system
prompt and let the model answer with

    reasoning text
    <function=bash>
    <parameter=command>ls</parameter>
    </function>

The harness runs the call and sends its output back as the next user message
("OBSERVATION: ...", "EXECUTION RESULT of [bash]: ...", "Your command ran successfully ...").
Both formats allow one call per message, so the pairing is certain, and `parse_inline_calls`
turns such a pair into a tool_use and its tool_result, in place: one trace message per source
message still. It does so only when

- the assistant message is plain text holding exactly one `<function=NAME>` block, closed by
  `</function>`, with nothing but whitespace after it;
- the block's body is nothing but `<parameter=NAME>value</parameter>` elements, each name once;
- the next message is a plain-text user message (the harness's answer to that call).

Anything else keeps its text and is listed in `metadata.inline_calls.kept_as_text` with the
reason: a call that is malformed or not the end of its message, several calls in one message,
or a call in the last message (the final `submit` / `finish`, which never ran).

What the parsed form keeps: the text before the call as a text block (trailing whitespace
removed), the parameters as strings exactly as written except for one leading and one
trailing newline (the format puts a long value on its own lines; types are not guessed), and
the observation unchanged as the tool_result content. Tool ids are `inline_<message index>`.
"""

from __future__ import annotations

import re
from typing import Any

_OPEN = re.compile(r"<function=([A-Za-z0-9_.\-]+)>")
_CLOSE = "</function>"
# Scanned with find(), left to right, never a lazy `(.*?)</parameter>` regex: that one rescans
# to the end of the text from every unclosed `<parameter=a>` (80k of them in a 1 MB message
# took minutes: quadratic). Each character is looked at a bounded number of times.
_PARAM_OPEN = re.compile(r"<parameter=([A-Za-z0-9_.\-]+)>")
_PARAM_CLOSE = "</parameter>"
_OUTSIDE = "the call holds text outside <parameter=...> elements"


def has_inline_calls(messages: list[dict[str, Any]]) -> bool:
    """True when some assistant message writes a `<function=...>` call in its text."""
    return any(m["role"] == "assistant" and isinstance(m["content"], str) and _OPEN.search(m["content"])
               for m in messages)


def _strip_one_newline(value: str) -> str:
    return value.removeprefix("\n").removesuffix("\n")


def _parse_call(text: str) -> tuple[str, str, dict[str, str]] | str:
    """(text before the call, tool name, parameters), or the reason it is not one clean call."""
    opens = list(_OPEN.finditer(text))
    if len(opens) != 1:
        return f"{len(opens)} <function=...> blocks in one message"
    start = opens[0]
    end = text.find(_CLOSE, start.end())
    if end < 0:
        return "<function=...> block without </function>"
    if text[end + len(_CLOSE):].strip():
        return "text after </function>"
    params = _parameters(text[start.end():end])
    if isinstance(params, str):
        return params
    return text[: start.start()].rstrip(), start.group(1), params


def _parameters(body: str) -> dict[str, str] | str:
    """The `<parameter=NAME>value</parameter>` elements of a call's body, in linear time, or
    the reason the body is not only such elements."""
    params: dict[str, str] = {}
    pos = 0
    while True:
        m = _PARAM_OPEN.search(body, pos)
        gap = body[pos:] if m is None else body[pos:m.start()]
        if gap.strip():
            return _OUTSIDE
        if m is None:
            return params
        close = body.find(_PARAM_CLOSE, m.end())
        if close < 0:
            return _OUTSIDE  # an unclosed element is text
        if m.group(1) in params:
            return f"parameter {m.group(1)!r} given twice"
        params[m.group(1)] = _strip_one_newline(body[m.end():close])
        pos = close + len(_PARAM_CLOSE)


def parse_inline_calls(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Messages with every certain inline call as tool_use + tool_result, and what was done.

    Returns the new message list (same length and roles) and
    {"parsed": <count>, "kept_as_text": [{"index", "reason"}]}.
    """
    out = [dict(m) for m in messages]
    parsed = 0
    kept: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        text = msg["content"]
        if msg["role"] != "assistant" or not isinstance(text, str) or not _OPEN.search(text):
            continue
        call = _parse_call(text)
        if isinstance(call, str):
            kept.append({"index": i, "reason": call})
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if nxt is None:
            kept.append({"index": i, "reason": f"the last message: the {call[1]} call never ran"})
            continue
        if nxt["role"] != "user" or not isinstance(nxt["content"], str):
            kept.append({"index": i, "reason": "not followed by a plain-text user message"})
            continue
        before, name, params = call
        tool_id = f"inline_{i:04d}"
        blocks: list[dict[str, Any]] = [{"type": "text", "text": before}] if before else []
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": params})
        out[i] = {"role": "assistant", "content": blocks}
        out[i + 1] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                   "content": nxt["content"], "is_error": False}]}
        parsed += 1
    return out, {"parsed": parsed, "kept_as_text": kept}
