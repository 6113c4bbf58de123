"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`).

Each line is `{timestamp, type, payload}`:
- `session_meta`: session id, cwd, originator, `cli_version`, git, `instructions`. A resumed
  (or forked) session carries a second one, for the session it continues; all are kept in
  `metadata.sessions`, and the first names the trace's session.
- `turn_context`: per turn model, effort, approval and sandbox policy (absent before CLI 0.36):
  `metadata.models` counts the turns per model.
- `response_item`: the model-visible history, which is what the trace is built from:
  `message` (role user / assistant / developer, `content[]` of input_text / output_text),
  `reasoning` (`summary[]`; the `encrypted_content` blob is unreadable and left out),
  `function_call` {name, arguments (a JSON string), call_id} with `function_call_output`
  {call_id, output}, `custom_tool_call` {name, input (free text, e.g. apply_patch)} with
  `custom_tool_call_output`, `local_shell_call` {action} answered by a `*_output` item.
  Other kinds (`ghost_snapshot`, a UI git snapshot; `web_search_call`, ...) carry no
  conversation the model reads back and are counted in `metadata.skipped_item_types`.
- `event_msg`: UI events (`user_message`, `agent_message`, `agent_reasoning`, `token_count`,
  `task_complete`, `turn_aborted`): copies of what the history already holds, so they add no
  messages (that would double them). `user_message` events are the prompts a person typed:
  `metadata.user_prompts` counts them (the first user history items are harness-injected
  AGENTS.md and environment context); `turn_aborted` counts in `metadata.turns_aborted`.
- `compacted`: Codex's own compaction summary, kept in `metadata.compacted` (not a message).

Conversion, one trace message per history item where the contract allows it:
- a user or developer `message` -> a user message of its text (developer items are listed in
  `metadata.developer_messages`: the contract has no developer role);
- an assistant `message` -> an assistant message; a call -> an assistant message with one
  tool_use; its output -> a user message with the tool_result. Consecutive calls (parallel
  calls) share one assistant message and their outputs one user message, so every tool_use is
  answered in the next message; an assistant message that arrives while calls are open joins
  them. `metadata.index_map[t]` lists the history lines (1-based file lines) of trace message t.
- `reasoning` summaries become a thinking block at the start of the next assistant-side
  message (or their own assistant message when a user item follows).
- call outputs of the form {"output", "metadata": {"exit_code"}} (a JSON string) are
  unwrapped to the output text; a non-zero exit code is appended as "[exit code N]" and marks
  the result as an error.
- a call whose output never came (an interrupted turn) gets an error tool_result saying so
  (`metadata.unanswered_tool_calls`); an output whose call is not open becomes user text
  "[tool output for <call_id>; its call is not in the rollout] ..." (`orphan_tool_outputs`).
- a line that is not JSON, a record without a `type` and object `payload`, a message without a
  role or content list, or a call without a name or call_id is a ContractError naming the line.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import strict_loads
from compaction_eval.corpus.importers.common import fail, file_stem, finish, read_text, safe_id, sniff_jsonl, unique_id

NAME = "codex-cli"
RECORD_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")


def is_record(obj: Any) -> bool:
    """True for one rollout line: {timestamp?, type: session_meta|..., payload: {...}}."""
    return isinstance(obj, dict) and obj.get("type") in RECORD_TYPES and isinstance(obj.get("payload"), dict)


def sniff(path: Path) -> bool:
    """True when the first JSON line of `path` is a Codex rollout record."""
    return sniff_jsonl(path, is_record)


def _text_of(content: Any, where: str, place: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        fail(where, place, "message content must be a list of parts")
    parts: list[str] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            fail(where, f"{place}[{j}]", "a content part must be an object")
        if isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:  # input_image and the like: say that something was there
            parts.append(f"[{part.get('type', 'part')} not kept]")
    return "\n".join(parts)


def _output(raw: Any) -> tuple[str, bool]:
    """(tool_result text, is_error) of a call output."""
    if isinstance(raw, dict):
        data: Any = raw
    elif isinstance(raw, str):
        try:
            data = strict_loads(raw)
        except json.JSONDecodeError:
            return raw, False
    else:
        return json.dumps(raw, ensure_ascii=False), False
    if isinstance(data, dict) and isinstance(data.get("output"), str) and set(data) <= {"output", "metadata"}:
        meta = data.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        if isinstance(code, int) and code != 0:
            return f"{data['output']}\n[exit code {code}]", True
        return data["output"], False
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False), False


def _call_input(p: dict[str, Any]) -> dict[str, Any]:
    kind = p["type"]
    if kind == "function_call":
        args = p.get("arguments")
        try:
            parsed = strict_loads(args) if isinstance(args, str) else args
        except json.JSONDecodeError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"_raw": args}
    if kind == "custom_tool_call":
        return {"input": p.get("input")}
    return {"action": p.get("action")}


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line; a located error on the first bad one."""
    where = str(path)
    text = read_text(path)
    records: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = strict_loads(line)
        except json.JSONDecodeError as exc:
            cut = " (the file ends inside this line: cut short?)" if not text.endswith(("\n", "\r")) and \
                n == len(text.splitlines()) else ""
            fail(where, f"line {n}, column {exc.colno}", f"invalid JSON: {exc.msg}{cut}")
        if not is_record(rec):
            fail(where, f"line {n}", "expected a Codex rollout record {timestamp, type: session_meta|turn_context|"
                                     "response_item|event_msg|compacted, payload: {...}}")
        records.append((n, rec))
    if not records:
        fail(where, "", "empty rollout: no records")
    return records


class _Builder:
    """Trace messages from history items, keeping tool_use / tool_result pairs adjacent."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.messages: list[dict[str, Any]] = []
        self.index_map: list[list[int]] = []
        self.open_calls: dict[str, str] = {}  # source call_id -> trace tool_use id, in the last message
        self.thinking: list[tuple[int, str]] = []
        self.used_ids: set[str] = set()
        self.unanswered: list[dict[str, Any]] = []
        self.orphans: list[int] = []
        self.answered = 0

    def _add(self, role: str, content: Any, line: int) -> None:
        self.messages.append({"role": role, "content": content})
        self.index_map.append([line])

    def _close_calls(self) -> None:
        """Answer calls left open (their turn was interrupted) before anything else follows."""
        if not self.open_calls:
            return
        last = self.messages[-1]
        if last["role"] == "assistant":  # no output came at all: a results message of its own
            self.messages.append({"role": "user", "content": []})
            self.index_map.append([])
        results = self.messages[-1]["content"]
        for call_id, tid in self.open_calls.items():
            results.append({"type": "tool_result", "tool_use_id": tid, "is_error": True,
                            "content": "(no output recorded: the turn ended before this call returned)"})
            self.unanswered.append({"index": len(self.messages) - 2, "call_id": call_id})
        self.open_calls = {}

    def _flush_thinking(self) -> list[dict[str, Any]]:
        return [{"type": "thinking", "thinking": t} for _, t in self.thinking]

    def reasoning(self, line: int, text: str) -> None:
        if text:
            self.thinking.append((line, text))

    def _assistant_blocks(self, line: int, blocks: list[dict[str, Any]]) -> None:
        lines = [n for n, _ in self.thinking]
        blocks = self._flush_thinking() + blocks
        self.thinking = []
        last = self.messages[-1] if self.messages else None
        joining = self.open_calls and last is not None and last["role"] == "assistant"
        if not joining:
            self._close_calls()
            self._add("assistant", blocks, line)
            self.index_map[-1] = [*lines, line]
        else:
            assert last is not None
            last["content"].extend(blocks)
            self.index_map[-1].extend([*lines, line])

    def _user_side(self) -> None:
        """Before a user item: reasoning with no assistant item after it is its own message."""
        if self.thinking:
            lines = [n for n, _ in self.thinking]
            blocks = self._flush_thinking()
            self.thinking = []
            self._close_calls()
            self._add("assistant", blocks, lines[0])
            self.index_map[-1] = lines

    def assistant_text(self, line: int, text: str) -> None:
        self._assistant_blocks(line, [{"type": "text", "text": text}] if text else [])

    def call(self, line: int, call_id: str, name: str, args: dict[str, Any]) -> None:
        tid = unique_id(call_id, self.used_ids)
        self._assistant_blocks(line, [{"type": "tool_use", "id": tid, "name": name, "input": args}])
        self.open_calls[call_id] = tid

    def output(self, line: int, call_id: str, text: str, is_error: bool) -> None:
        self._user_side()
        tid = self.open_calls.pop(call_id, None)
        if tid is None:
            self._close_calls()
            self.orphans.append(line)
            self._add("user", f"[tool output for {call_id}; its call is not in the rollout]\n{text}", line)
            return
        block = {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": is_error}
        last = self.messages[-1]
        if last["role"] == "user" and isinstance(last["content"], list) and last["content"] \
                and last["content"][0].get("type") == "tool_result":
            last["content"].append(block)
            self.index_map[-1].append(line)
        else:
            self._add("user", [block], line)
        self.answered += 1

    def user_text(self, line: int, text: str) -> None:
        self._user_side()
        self._close_calls()
        self._add("user", text, line)

    def done(self) -> None:
        self._user_side()
        self._close_calls()


def convert_file(path: Path) -> list[dict[str, Any]]:
    """One trace from one rollout file."""
    where = str(path)
    records = read_records(path)
    b = _Builder(where)
    sessions: list[dict[str, Any]] = []
    models: Counter[str] = Counter()
    efforts: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    events: Counter[str] = Counter()
    developer: list[int] = []
    compacted: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    user_prompts = aborted = 0
    for n, rec in records:
        kind, p = rec["type"], rec["payload"]
        place = f"line {n}"
        if kind == "session_meta":
            sessions.append({k: p[k] for k in ("id", "timestamp", "cwd", "originator", "cli_version", "source",
                                                "model_provider") if k in p} | {"line": n})
            continue
        if kind == "turn_context":
            if isinstance(p.get("model"), str):
                models[p["model"]] += 1
            if isinstance(p.get("effort"), str):
                efforts[p["effort"]] += 1
            continue
        if kind == "event_msg":
            ev = str(p.get("type"))
            events[ev] += 1
            user_prompts += ev == "user_message"
            aborted += ev == "turn_aborted"
            continue
        if kind == "compacted":
            compacted.append({"line": n, "message": p.get("message")})
            continue
        item = p.get("type")
        if item == "message":
            role = p.get("role")
            if role not in ("user", "assistant", "developer", "system"):
                fail(where, f"{place}: payload.role", f"unknown message role {role!r} (expected user, assistant or developer)")
            text = _text_of(p.get("content"), where, f"{place}: payload.content")
            if role == "assistant":
                b.assistant_text(n, text)
            else:
                if role != "user":
                    developer.append(len(b.messages))
                b.user_text(n, text)
        elif item == "reasoning":
            summary = p.get("summary") or []
            b.reasoning(n, "\n\n".join(s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)))
        elif item in CALL_TYPES:
            call_id, name = p.get("call_id") or p.get("id"), p.get("name") or ("local_shell" if item == "local_shell_call" else None)
            if not isinstance(call_id, str) or not call_id:
                fail(where, f"{place}: payload.call_id", f"{item} without a call_id")
            if not isinstance(name, str) or not name:
                fail(where, f"{place}: payload.name", f"{item} without a name")
            tools.setdefault(name, {"name": name, "input_schema": {"type": "object"}})
            b.call(n, call_id, name, _call_input(p))
        elif isinstance(item, str) and item.endswith("_call_output"):
            call_id = p.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                fail(where, f"{place}: payload.call_id", f"{item} without a call_id")
            text, is_error = _output(p.get("output"))
            b.output(n, call_id, text, is_error)
        else:
            skipped[str(item)] += 1
    b.done()
    if not b.messages:
        fail(where, "", "no conversation: the rollout has no response_item messages or calls")
    first = sessions[0] if sessions else {}
    metadata: dict[str, Any] = {
        "session_id": first.get("id"),
        "cli_version": first.get("cli_version"),
        "sessions": sessions,
        "index_map": b.index_map,
        "user_prompts": user_prompts,
        "models": dict(sorted(models.items())),
        "efforts": dict(sorted(efforts.items())),
        "event_counts": dict(sorted(events.items())),
        "turns_aborted": aborted,
        "tool_calls": b.answered + len(b.unanswered),
    }
    if len(sessions) > 1:
        metadata["resumed"] = True
    if skipped:
        metadata["skipped_item_types"] = dict(sorted(skipped.items()))
    if developer:
        metadata["developer_messages"] = developer
    if compacted:
        metadata["compacted"] = compacted
    if b.unanswered:
        metadata["unanswered_tool_calls"] = b.unanswered
    if b.orphans:
        metadata["orphan_tool_outputs"] = b.orphans
    trace_id = safe_id(file_stem(path).removesuffix(".jsonl"), where, "file name")
    return [finish(trace_id=trace_id, source={"kind": NAME, "path": path.name}, system="",
                   tools=list(tools.values()), messages=b.messages, metadata=metadata, where=where)]
