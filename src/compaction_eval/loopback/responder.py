"""Deterministic answers to Messages API requests.

A request is flattened to inspect chat messages and then to (conversation, instruction) by
`models.transcript.split_request`, exactly as the offline extractive provider sees it, and
answered by `models.summarise.summarise` within `max_tokens`. A request that offers tools
and whose last user text has a line `CALL <tool> <json arguments>` is answered with that
tool call; a request whose tools belong to a long-horizon world (the workspace tag in their
descriptions) is answered by the offline scripted agent, `standins.scripted`; a probe (a
last user message with the probe marker of `standins.reader`) by the offline reader. A request
of the LLM judge (`recall.matching.judge`: its system prompt) is answered from a judge script
when the server has one (`judge_answer`): scripted right, wrong, malformed or unquoted verdicts.
A prompt optimiser's request (`tune.optimize.OPTIMISER_MARKER`) by `tune.optimize.scripted_revision`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall

from compaction_eval.compaction.transcript import split_request
from compaction_eval.contracts.tokens import count_tokens, truncate_tokens
from compaction_eval.standins.reader import parse_probe, read_answer
from compaction_eval.standins.summarise import summarise

_CALL = re.compile(r"^CALL (\S+) (\{.*\})\s*$", re.MULTILINE)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif isinstance(block, dict) and isinstance(block.get("content"), (str, list)):
            parts.append(_text(block["content"]))
    return "\n".join(parts)


def to_chat_messages(request: dict[str, Any]) -> list[ChatMessage]:
    """The request's system prompt and messages as inspect chat messages."""
    out: list[ChatMessage] = []
    names: dict[str, str] = {}  # tool_use id -> tool name, so results know their function
    system = _text(request.get("system")) if request.get("system") else ""
    if system:
        out.append(ChatMessageSystem(content=system))
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])  # request JSON
        if message.get("role") == "assistant":
            text = "\n".join(b.get("text", "") or b.get("thinking", "") for b in blocks if b.get("type") in ("text", "thinking"))
            calls = [
                ToolCall(id=b["id"], function=b["name"], arguments=b.get("input") or {}) for b in blocks if b.get("type") == "tool_use"
            ]
            names.update((c.id, c.function) for c in calls)
            out.append(ChatMessageAssistant(content=text, tool_calls=calls or None))
            continue
        prose: list[str] = []
        for b in blocks:
            if b.get("type") == "tool_result":
                if prose:
                    out.append(ChatMessageUser(content="\n".join(prose)))
                    prose = []
                tid = b.get("tool_use_id")
                out.append(ChatMessageTool(content=_text(b.get("content")), tool_call_id=tid, function=names.get(tid)))
            elif b.get("type") == "text":
                prose.append(b.get("text", ""))
        if prose:
            out.append(ChatMessageUser(content="\n".join(prose)))
    return out


def request_key(request: dict[str, Any]) -> str:
    """A short identity of what was asked (model, system, messages, max_tokens, tools)."""
    ident = {k: request.get(k) for k in ("model", "system", "messages", "max_tokens", "tools")}
    text = json.dumps(ident, sort_keys=True, ensure_ascii=False)
    text = re.sub(r',?\s*"cache_control": \{[^}]*\}', "", text)  # markers are not the question
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _scripted(request: dict[str, Any]) -> tuple[str, list[ToolCall]] | None:
    """The scripted agent's next action, when the request's tools belong to a world."""
    from inspect_ai.tool import ToolInfo, ToolParams

    from compaction_eval.standins.scripted import _world_from_tools, next_action

    tools = []
    for t in request.get("tools") or []:
        try:
            tools.append(ToolInfo(name=t["name"], description=t.get("description", ""),
                                  parameters=ToolParams.model_validate(t.get("input_schema") or {})))
        except (KeyError, ValueError):
            continue
    world = _world_from_tools(tools)
    if world is None:
        return None
    return next_action(world, to_chat_messages(request), {t.name for t in tools})


JudgeScript = Callable[[str, list[dict[str, Any]]], str]
"""(summary, facts as the judge prompt lists them: {"id", "category", "fact"}) -> the raw
answer text, exactly as a model would return it (malformed on purpose if the script wants)."""

_JUDGE_SYSTEM_HEAD = "You check which facts of an agent's conversation survived"
_SUMMARY = re.compile(r"<summary>\n(.*)\n</summary>", re.DOTALL)
_FACTS = re.compile(r"<facts>\n(.*)\n</facts>", re.DOTALL)


def judge_request(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | None:
    """(summary, facts) of an LLM judge request, None for any other request."""
    if not _text(request.get("system")).startswith(_JUDGE_SYSTEM_HEAD):
        return None
    messages = request.get("messages") or []
    prompt = _text(messages[-1].get("content")) if messages else ""
    s, f = _SUMMARY.search(prompt), _FACTS.search(prompt)
    if not s or not f:
        return None
    return s.group(1), [json.loads(line) for line in f.group(1).splitlines() if line.strip()]


def judge_answer(request: dict[str, Any], script: JudgeScript) -> str | None:
    """The scripted judge's answer text to `request`, None when it is not a judge request."""
    asked = judge_request(request)
    return None if asked is None else script(*asked)


def answer(request: dict[str, Any], message_id: str, judge_script: JudgeScript | None = None) -> dict[str, Any]:
    """A complete Messages API answer (without usage input fields; the server adds them)."""
    budget = int(request.get("max_tokens") or 1024)
    content: list[dict[str, Any]]
    tool_names = {t.get("name") for t in request.get("tools") or []}
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    call = _CALL.search(_text(last.get("content"))) if last.get("role") == "user" else None
    scripted = _scripted(request) if tool_names and not call else None
    from compaction_eval.tune.optimize import OPTIMISER_MARKER, scripted_revision

    last_text = _text(last.get("content")) if last.get("role") == "user" else ""
    judged = judge_answer(request, judge_script) if judge_script is not None and not tool_names else None
    if judged is not None:
        content = [{"type": "text", "text": judged}]
        stop_reason, output_tokens = "end_turn", count_tokens(judged)
    elif OPTIMISER_MARKER in last_text and not call:
        text = scripted_revision(last_text)
        content = [{"type": "text", "text": text}]
        stop_reason, output_tokens = "end_turn", count_tokens(text)
    elif call and call.group(1) in tool_names:
        content = [{"type": "tool_use", "id": f"toolu_{message_id[4:]}", "name": call.group(1), "input": json.loads(call.group(2))}]
        stop_reason, output_tokens = "tool_use", count_tokens(call.group(0))
    elif scripted is not None:
        text, calls = scripted
        content = [{"type": "text", "text": text}] if text.strip() else []
        content += [{"type": "tool_use", "id": c.id, "name": c.function, "input": c.arguments} for c in calls]
        stop_reason = "tool_use" if calls else "end_turn"
        output_tokens = count_tokens(json.dumps(content))
    elif (probe := parse_probe(_text(last.get("content")))) is not None:
        # a probe (replay.probes): the offline reader answers from the context it was given
        text = read_answer(*probe)
        text = truncate_tokens(text, budget) if count_tokens(text) > budget else text
        content = [{"type": "text", "text": text}]
        stop_reason, output_tokens = "end_turn", count_tokens(text)
    else:
        split = split_request(to_chat_messages(request))
        summary = summarise(split.conversation, split.instruction, budget)
        content = [{"type": "text", "text": summary.text or "(nothing to summarise)"}]
        stop_reason = "max_tokens" if summary.cut else "end_turn"
        output_tokens = count_tokens(content[0]["text"])
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude-test"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"output_tokens": output_tokens},
    }
