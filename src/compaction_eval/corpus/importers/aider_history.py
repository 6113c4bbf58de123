"""aider's LLM log (`.aider.llm.history`, written with `--llm-history-file`).

The file logs every model call: a line `TO LLM <timestamp>` followed by the whole prompt, each
line prefixed with its role (`SYSTEM `, `USER `, `ASSISTANT `) and messages separated by
`-------` lines, then `LLM RESPONSE <timestamp>` and the reply (`ASSISTANT ` lines). Every
call repeats the context aider keeps (system prompt, repo map, the files in the chat, the chat
so far), so concatenating the prompts would repeat the conversation once per call.

The trace is ONE conversation rebuilt from the calls: the messages each prompt adds beyond
the conversation so far, then its reply.

- The prompt's chat messages are matched, in order, against the conversation rebuilt so far;
  the ones not found are new and appended (aider's own notes such as "I made those changes to
  the files." / "Ok." are new messages too). The prompt's last user message is always the
  new request of that call, except when it repeats the reply just before it: that is aider's
  architect handing its plan to the editor model, and it is not repeated (counted in
  `metadata.editor_handoffs`); the editor's reply follows the architect's.
- The rules aider appends to the last user message of an editing call ("# *SEARCH/REPLACE
  block* Rules: ...") are not part of the conversation (aider drops them from its history):
  they are cut off and kept once in `metadata.reminders`, with the calls and messages they
  were cut from.
- Context messages (the repo map, the files added to the chat, read-only files, aider's
  summary of older chat) and their "Ok, ..." acknowledgements are aider's per-call context,
  rebuilt for each call from the current files. The first call's are kept as the opening
  messages; later ones are left out and counted in `metadata.context_left_out`.
- The system prompt of the first call is the trace `system`; every distinct system prompt
  (aider switches between ask / code / architect / editor prompts) is kept in
  `metadata.system_prompts` with the calls that used it.
- `metadata.calls` lists, per call, its line, timestamp, system prompt, the trace indices of
  the messages it added and of its reply.
No tool calls: aider's edits are SEARCH/REPLACE blocks in the reply text. A line that is
neither a block header, a separator nor role-prefixed is a ContractError naming the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from compaction_eval.corpus.importers.common import fail, finish, read_text, safe_id

NAME = "aider-llm-history"
_HEADER = re.compile(r"^(TO LLM|LLM RESPONSE) (\S+)\s*$")
_ROLE = re.compile(r"^(SYSTEM|USER|ASSISTANT)(?: (.*))?$")
SEPARATOR = "-------"
ROLES = {"USER": "user", "ASSISTANT": "assistant", "SYSTEM": "system"}
# aider's context messages (rebuilt for every call) and its summary of older chat
CONTEXT_PREFIXES = (
    "I am working with you on code in a git repository.",
    "Here are summaries of some files present in my git repo",
    "I have *added these files to the chat*",
    "Here are some READ ONLY files",
    "I switched to a new code base.",
    "I spoke to you previously about a number of things.",
)
# what aider appends to the last user message of an editing call
REMINDER_MARKERS = ("# *SEARCH/REPLACE block* Rules:", "# File editing rules:")
# user messages aider writes itself (not prompts of the person)
AIDER_NOTES = (
    "I made those changes to the files.",
    "I added these files to the chat:",
    "I committed the changes with git hash",
    "I ran this command:",
    "I reverted the changes",
    "I did `git reset --hard HEAD~1`",
    "The edits were not applied",
)


def looks_like_history(path: Path) -> bool:
    """True for a file whose first non-empty line is a `TO LLM <timestamp>` header."""
    if path.name.endswith(".llm.history"):
        return True
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return line.startswith("TO LLM ")
    except (OSError, UnicodeDecodeError):
        return False
    return False


def parse_calls(text: str, where: str) -> list[dict[str, Any]]:
    """[{line, time, prompt: [{role, text, line}], response: {text, line, time} | None}] in order."""
    calls: list[dict[str, Any]] = []
    block: str | None = None
    chunk: list[tuple[int, str, str]] = []  # (line, role, text) of the current prompt message

    def close_chunk() -> None:
        if chunk:
            roles = {r for _, r, _ in chunk}
            if len(roles) > 1:
                fail(where, f"line {chunk[0][0]}", f"one prompt message mixes roles {sorted(roles)} (no {SEPARATOR} between them)")
            calls[-1]["prompt"].append({"role": ROLES[chunk[0][1]], "line": chunk[0][0],
                                        "text": "\n".join(t for _, _, t in chunk)})
            chunk.clear()

    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        head = _HEADER.match(line)
        if head:
            close_chunk()
            if head.group(1) == "TO LLM":
                calls.append({"line": n, "time": head.group(2), "prompt": [], "response": None})
                block = "prompt"
            else:
                if not calls or calls[-1]["response"] is not None:
                    fail(where, f"line {n}", "LLM RESPONSE without a TO LLM block before it")
                calls[-1]["response"] = {"line": n, "time": head.group(2), "lines": []}
                block = "response"
            continue
        if block is None:
            if line.strip():
                fail(where, f"line {n}", "expected a `TO LLM <timestamp>` line (not an aider LLM history?)")
            continue
        if block == "prompt":
            if line == SEPARATOR:
                close_chunk()
                continue
            role = _ROLE.match(line)
            if not role:
                fail(where, f"line {n}", "expected a line starting with SYSTEM, USER or ASSISTANT, or a ------- separator")
            chunk.append((n, role.group(1), role.group(2) or ""))
        else:
            role = _ROLE.match(line)
            if not role or role.group(1) != "ASSISTANT":
                fail(where, f"line {n}", "a reply line must start with ASSISTANT")
            calls[-1]["response"]["lines"].append(role.group(2) or "")
    close_chunk()
    if not calls:
        fail(where, "", "no `TO LLM` blocks: not an aider LLM history")
    for call in calls:
        if call["response"] is not None:
            call["response"]["text"] = "\n".join(call["response"].pop("lines"))
    return calls


def _split_reminder(text: str) -> tuple[str, str]:
    """(message, appended editing rules or '')."""
    cut = min((i for i in (text.find("\n\n" + m) for m in REMINDER_MARKERS) if i >= 0), default=-1)
    return (text, "") if cut < 0 else (text[:cut], text[cut:])


def _context_flags(prompt: list[dict[str, Any]]) -> list[bool]:
    """Which prompt messages are aider context: the system prompt, context user messages and
    the assistant acknowledgement right after each."""
    flags = []
    for j, m in enumerate(prompt):
        if m["role"] == "system":
            flags.append(True)
        elif m["role"] == "user":
            flags.append(m["text"].startswith(CONTEXT_PREFIXES))
        else:
            prev = prompt[j - 1] if j else None
            flags.append(bool(prev and flags[j - 1] and prev["role"] == "user" and m["text"].startswith("Ok")))
    return flags


def convert_file(path: Path) -> list[dict[str, Any]]:
    """One trace: the conversation rebuilt from every call of the log."""
    where = str(path)
    text = read_text(path)
    calls = parse_calls(text, where)
    messages: list[dict[str, Any]] = []
    systems: list[dict[str, Any]] = []
    reminders: list[dict[str, Any]] = []
    call_info: list[dict[str, Any]] = []
    context_left_out = {"messages": 0, "chars": 0}
    handoffs: list[int] = []
    user_prompts = 0

    def note_reminder(reminder: str, call: int, message: int | None) -> None:
        known = next((r for r in reminders if r["text"] == reminder), None)
        if known is None:
            known = {"text": reminder, "calls": [], "messages": []}
            reminders.append(known)
        known["calls"].append(call)
        if message is not None:
            known["messages"].append(message)

    def add(role: str, body: str) -> int:
        nonlocal user_prompts
        messages.append({"role": role, "content": body})
        if role == "user" and not body.startswith(AIDER_NOTES) and not body.startswith(CONTEXT_PREFIXES):
            user_prompts += 1
        return len(messages) - 1

    for k, call in enumerate(calls):
        prompt = call["prompt"]
        place = f"line {call['line']}"
        if not prompt:
            fail(where, place, "a TO LLM block without messages")
        system_text = prompt[0]["text"] if prompt[0]["role"] == "system" else ""
        entry = next((s for s in systems if s["text"] == system_text), None)
        if entry is None:
            entry = {"text": system_text, "calls": []}
            systems.append(entry)
        entry["calls"].append(k)
        flags = _context_flags(prompt)
        added: list[int] = []
        if k == 0:
            for m, is_context in zip(prompt[1:], flags[1:], strict=True):
                if is_context:
                    if m["role"] == "system":
                        fail(where, f"line {m['line']}", "a system message after the first one is not supported")
                    added.append(add(m["role"], m["text"]))
        else:
            for m, is_context in zip(prompt[1:], flags[1:], strict=True):
                if is_context:
                    context_left_out["messages"] += 1
                    context_left_out["chars"] += len(m["text"])
        chat = [m for m, is_context in zip(prompt, flags, strict=True) if not is_context]
        if not chat or chat[-1]["role"] != "user":
            fail(where, place, "the prompt does not end with a user message")
        *history, last = chat
        # history: matched in order against the conversation so far; the rest is new
        pos, matched = 0, 0
        for m in history:
            body, _ = _split_reminder(m["text"])
            hit = next((q for q in range(pos, len(messages))
                        if messages[q]["role"] == m["role"] and messages[q]["content"] == body), None)
            if hit is None:
                added.append(add(m["role"], body))
                pos = len(messages)  # what follows comes after the new message
            else:
                pos, matched = hit + 1, matched + 1
        body, reminder = _split_reminder(last["text"])
        previous = messages[-1] if messages else None
        if previous and previous["role"] == "assistant" and previous["content"] == body and not added:
            handoffs.append(k)
            if reminder:
                note_reminder(reminder, k, None)
        else:
            added.append(add("user", body))
            if reminder:
                note_reminder(reminder, k, added[-1])
        info: dict[str, Any] = {"call": k, "line": call["line"], "time": call["time"], "system_prompt": systems.index(entry),
                                "prompt_messages": len(prompt), "history_matched": matched, "added": added}
        if call["response"] is None:
            info["response"] = None
        else:
            info["response"] = add("assistant", call["response"]["text"])
            info["response_time"] = call["response"]["time"]
        call_info.append(info)
    system = systems[0]["text"]
    metadata: dict[str, Any] = {
        "calls": call_info,
        "user_prompts": user_prompts,
        "system_prompts": [{"first_line": s["text"].split("\n", 1)[0], "calls": s["calls"], "text": s["text"]} for s in systems],
        "reminders": reminders,
        "context_left_out": context_left_out,
        "editor_handoffs": handoffs,
        "calls_without_response": sum(1 for c in calls if c["response"] is None),
    }
    trace_id = safe_id(f"aider-{calls[0]['time']}", where, f"line {calls[0]['line']}")
    return [finish(trace_id=trace_id, source={"kind": NAME, "path": path.name}, system=system, tools=[],
                   messages=messages, metadata=metadata, where=where)]
