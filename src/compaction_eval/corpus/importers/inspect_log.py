"""inspect-ai eval logs (`.eval` or `.json`): each sample's messages become one trace.

Read with `inspect_ai.log.read_eval_log`. System messages become the trace's `system`;
assistant `tool_calls` become tool_use blocks; `tool` messages become tool_result blocks of
the next user message (consecutive tool messages, and a user message right after them, are
one user turn, so every tool_use is answered in the next message). Reasoning content becomes
thinking blocks; images and other media a text note. Trace ids: `<task>-<sample id>[-e<epoch>]`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compaction_eval.corpus.importers.common import fail, finish, safe_id

NAME = "inspect-log"


def is_log_json(data: Any) -> bool:
    """True for the JSON form of an eval log (top-level `eval` and `version`)."""
    return isinstance(data, dict) and isinstance(data.get("eval"), dict) and "version" in data and "schema" not in data


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out = []
    for c in content or []:
        kind = getattr(c, "type", None)
        if kind == "text":
            if c.text:
                out.append({"type": "text", "text": c.text})
        elif kind == "reasoning":
            if getattr(c, "reasoning", ""):
                out.append({"type": "thinking", "thinking": c.reasoning})
        else:
            out.append({"type": "text", "text": f"[{kind} omitted]"})
    return out


def _text(content: Any) -> str:
    return "\n".join(b.get("text", "") for b in _content_blocks(content) if b["type"] == "text")


def _push(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Append `blocks` as a turn of `role`, merged into the last turn when it has that role."""
    if not blocks:
        return
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})


def convert_file(path: Path) -> list[dict[str, Any]]:
    """Every sample of one eval log, as traces."""
    where = str(path)
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:  # pragma: no cover - inspect-ai is a dependency
        fail(where, "", "reading inspect logs needs inspect-ai installed")
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # zip, JSON and schema errors all mean "not a readable log"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(where, "", f"not a readable inspect eval log: {first[:200]}")
    samples = log.samples or []
    if not samples:
        fail(where, "samples", "the log holds no samples (was it written with log_samples=False?)")
    task = log.eval.task or "task"
    many_epochs = len({s.epoch for s in samples}) > 1
    traces = []
    for k, sample in enumerate(samples):
        place = f"samples[{k}]"
        system: list[str] = []
        messages: list[dict[str, Any]] = []
        for j, m in enumerate(sample.messages):
            # m.role (not a copy of it) narrows the message type in each branch
            if m.role == "system":
                system.append(_text(m.content))
            elif m.role == "user":
                _push(messages, "user", _content_blocks(m.content))
            elif m.role == "assistant":
                blocks = _content_blocks(m.content)
                for call in m.tool_calls or []:
                    args = call.arguments if isinstance(call.arguments, dict) else {"arguments": call.arguments}
                    blocks.append({"type": "tool_use", "id": call.id, "name": call.function, "input": args})
                _push(messages, "assistant", blocks)
            elif m.role == "tool":
                if not messages or messages[-1]["role"] == "user" and not any(
                        b["type"] == "tool_result" for b in messages[-1]["content"]):
                    fail(where, f"{place}.messages[{j}]", "tool message without a preceding assistant tool call")
                text = _text(m.content)
                if m.error is not None:
                    text = (text + "\n" if text else "") + f"{m.error.type}: {m.error.message}"
                _push(messages, "user", [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": text,
                                         "is_error": m.error is not None}])
            else:
                fail(where, f"{place}.messages[{j}].role", f"unknown role {m.role!r}")
        for msg in messages:  # tool results first in a user turn, as the API orders them
            if msg["role"] == "user":
                msg["content"].sort(key=lambda b: b["type"] != "tool_result")
        if not messages:
            fail(where, place, "the sample has no user or assistant messages")
        tid = f"{task}-{sample.id}" + (f"-e{sample.epoch}" if many_epochs else "")
        scores = {name: (s.value if isinstance(s.value, (int, float, str, bool)) else json.dumps(s.value, default=str))
                  for name, s in (sample.scores or {}).items()}
        traces.append(finish(
            trace_id=safe_id(tid, where, f"{place}.id"),
            source={"kind": NAME, "path": path.name, "task": task, "model": log.eval.model,
                    "sample_id": sample.id, "epoch": sample.epoch},
            system="\n\n".join(s for s in system if s),
            tools=[],
            messages=messages,
            metadata={"scores": scores, "eval_id": log.eval.eval_id, "created": log.eval.created},
            where=f"{where} {place}",
        ))
    return traces
