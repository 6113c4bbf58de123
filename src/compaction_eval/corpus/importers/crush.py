"""Crush session stores (`.crush/crush.db`, SQLite, with `crush.db-wal` beside it).

Crush (charmbracelet/crush) keeps a project's sessions in an SQLite database in WAL mode: the
latest writes live in `crush.db-wal` until a checkpoint. The importer reads a temporary copy of
`crush.db` and, when one lies beside it, of `crush.db-wal` (or `crush.db-wal.gz`, decompressed
with the trace size limit), opened read-only with the standard library's sqlite3, so the
source files are never touched (SQLite writes a `-shm` index beside a WAL even to read it).
Without a WAL the database holds its last checkpoint only (`metadata.wal` says which).

Tables read: `sessions` (id, parent_session_id, title, message_count, prompt_tokens,
completion_tokens, cost, summary_message_id, created_at, updated_at) and `messages` (id,
session_id, role user | assistant | tool, parts, model, provider, created_at, finished_at).
`parts` is a JSON list of {type, data}: `text` {text}, `reasoning` {thinking}, `tool_call`
{id, name, input (a JSON string), finished}, `tool_result` {tool_call_id, name, content,
metadata, is_error}, `finish` {reason, time, message?, details?}, `image_url` / `binary`.

Conversion: every session with messages is one trace, id the session id, messages in
(created_at, rowid) order (created_at is in whole seconds, so the insertion order breaks ties):
- a user row -> a user message of its text parts (attachments become a note);
- an assistant row -> an assistant message: reasoning as a thinking block, text, one tool_use
  per tool_call (input JSON-parsed; not an object -> {"_raw": input});
- a tool row -> a user message of its tool_results (what Crush sends back to the model);
- `finish` parts are not conversation: their reasons are counted in `metadata.finish_reasons`
  and the ones with a message (errors, cancellations) listed in `metadata.finish_notes`.
- a tool_call with no result in the next row (the session stopped, or the call was cancelled)
  gets an error tool_result saying so (`metadata.unanswered_tool_calls`); a result whose call
  is not in the row before becomes user text (`metadata.orphan_tool_results`).
- a sub-agent run (Crush's `agent` tool) is a child session whose id is the calling
  tool_call's id: its own trace, with `metadata.parent_session`; the parent lists its children
  in `metadata.sub_agents` [{session, tool_use_id, index}].
- `metadata.row_map[t]` lists the message rows of trace message t; `metadata.user_prompts`
  counts user rows; `models` the assistant rows per model.
A file that is not an SQLite database, a database without these tables, or a row whose
parts are not a JSON list of {type, data} is a ContractError naming the file and the row.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import MAX_TRACE_BYTES, read_trace_bytes, strict_loads
from compaction_eval.corpus.importers.common import fail, finish, safe_id, unique_id

NAME = "crush"
SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_NAMES = ("-wal", "-wal.gz")


def looks_like_store(path: Path) -> bool:
    """True for `crush.db`, or any file with the SQLite header (what else would it be here)."""
    if path.name == "crush.db":
        return True
    try:
        with path.open("rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def is_wal(path: Path) -> bool:
    """True for a WAL file beside a store: it is read with its database, never alone."""
    return path.name.endswith(WAL_NAMES) and path.name.split("-wal")[0].endswith(".db")


def _wal_bytes(path: Path) -> tuple[bytes | None, str]:
    """The WAL beside `path` (plain or gzipped) and which one it was."""
    for suffix in WAL_NAMES:
        wal = path.with_name(path.name + suffix)
        if wal.is_file():
            if suffix.endswith(".gz"):
                return read_trace_bytes(wal), wal.name
            if wal.stat().st_size > MAX_TRACE_BYTES:
                fail(str(wal), "", f"larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB: refused")
            return wal.read_bytes(), wal.name
    return None, "none (the last checkpoint only)"


def read_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """(sessions, messages, which WAL) of a store, read from a temporary copy."""
    where = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        fail(where, "", f"cannot read: {exc.strerror or exc}")
    if head != SQLITE_MAGIC:
        fail(where, "byte 0", "not an SQLite database (a Crush store starts with 'SQLite format 3')")
    if size > MAX_TRACE_BYTES:
        fail(where, "", f"larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB: refused")
    wal, wal_name = _wal_bytes(path)
    with tempfile.TemporaryDirectory(prefix="crush-import-") as tmp:
        copy = Path(tmp) / "crush.db"
        shutil.copyfile(path, copy)
        if wal is not None:
            (Path(tmp) / "crush.db-wal").write_bytes(wal)
        conn = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA trusted_schema = OFF")  # an untrusted file: no functions from its schema
            conn.execute("PRAGMA query_only = ON")
            sessions = [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY created_at, rowid")]
            messages = [dict(r) for r in conn.execute(
                "SELECT id, session_id, role, parts, model, provider, created_at FROM messages ORDER BY created_at, rowid")]
        except sqlite3.DatabaseError as exc:
            fail(where, "", f"not a readable Crush store: {exc}")
        finally:
            conn.close()
    return sessions, messages, wal_name


def _parts(row: dict[str, Any], where: str) -> list[dict[str, Any]]:
    place = f"messages row {row['id']}: parts"
    try:
        parts = strict_loads(row["parts"]) if isinstance(row["parts"], str) else None
    except json.JSONDecodeError as exc:
        fail(where, place, f"invalid JSON at column {exc.colno}: {exc.msg}")
    if not isinstance(parts, list):
        fail(where, place, "must be a JSON list of {type, data}")
    for j, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str) or not isinstance(part.get("data"), dict):
            fail(where, f"{place}[{j}]", "a part must be {type, data: {...}}")
    return parts


def _input(raw: Any) -> dict[str, Any]:
    try:
        parsed = strict_loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_raw": raw}


def _session_trace(path: Path, session: dict[str, Any], rows: list[dict[str, Any]], children: dict[str, str],
                   wal_name: str) -> dict[str, Any]:
    where = str(path)
    messages: list[dict[str, Any]] = []
    row_map: list[list[str]] = []  # trace message -> the rows it holds
    open_calls: dict[str, str] = {}  # Crush call id -> trace tool_use id, of the last assistant message
    used: set[str] = set()
    unanswered: list[dict[str, Any]] = []
    orphans: list[str] = []
    reasons: Counter[str] = Counter()
    notes: list[dict[str, Any]] = []
    models: Counter[str] = Counter()
    sub_agents: list[dict[str, Any]] = []
    tool_messages: set[int] = set()  # trace messages made from tool rows
    user_prompts = 0

    def close_open() -> None:
        """Answer the calls still open with an error result, in the message after their call."""
        if not open_calls:
            return
        if messages[-1]["role"] == "assistant":
            messages.append({"role": "user", "content": []})
            row_map.append([])
        for call_id, tid in open_calls.items():
            messages[-1]["content"].append({"type": "tool_result", "tool_use_id": tid, "is_error": True,
                                            "content": "(no result recorded: the session stopped before this call returned)"})
            unanswered.append({"index": len(messages) - 2, "tool_call_id": call_id})
        open_calls.clear()

    for row in rows:
        parts = _parts(row, where)
        role = row["role"]
        for part in parts:
            if part["type"] == "finish":
                reason = str(part["data"].get("reason"))
                reasons[reason] += 1
                if part["data"].get("message") or part["data"].get("details"):
                    notes.append({"row": row["id"], "reason": reason, "message": part["data"].get("message"),
                                  "details": part["data"].get("details")})
        if role == "tool":
            # results answer the calls of the assistant message before; a second tool row for
            # the same calls joins the first one's message, so every call is answered next
            if messages and len(messages) - 1 in tool_messages and open_calls:
                row_map[-1].append(row["id"])
            else:
                messages.append({"role": "user", "content": []})
                row_map.append([row["id"]])
                tool_messages.add(len(messages) - 1)
            target = messages[-1]["content"]
            for part in parts:
                if part["type"] != "tool_result":
                    continue
                data = part["data"]
                call_id = str(data.get("tool_call_id"))
                content = data.get("content")
                text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                tid = open_calls.pop(call_id, None)
                if tid is None:
                    target.append({"type": "text", "text": f"[tool result for {call_id}; its tool call is not in the "
                                                           f"message before]\n{text}"})
                    orphans.append(row["id"])
                else:
                    target.append({"type": "tool_result", "tool_use_id": tid, "content": text,
                                   "is_error": bool(data.get("is_error"))})
            if not target:
                target.append({"type": "text", "text": "(a tool message without results)"})
            continue
        close_open()
        if role == "user":
            texts = [p["data"].get("text", "") for p in parts if p["type"] == "text"]
            texts += [f"[{p['type']} attachment not kept]" for p in parts if p["type"] in ("image_url", "binary")]
            messages.append({"role": "user", "content": "\n".join(t for t in texts if isinstance(t, str))})
            row_map.append([row["id"]])
            user_prompts += 1
            continue
        if role != "assistant":
            fail(where, f"messages row {row['id']}: role", f"unknown role {role!r} (expected user, assistant or tool)")
        if row.get("model"):
            models[str(row["model"])] += 1
        out: list[dict[str, Any]] = []
        for j, part in enumerate(parts):
            data = part["data"]
            if part["type"] == "reasoning" and isinstance(data.get("thinking"), str) and data["thinking"]:
                out.append({"type": "thinking", "thinking": data["thinking"]})
            elif part["type"] == "text" and isinstance(data.get("text"), str) and data["text"]:
                out.append({"type": "text", "text": data["text"]})
            elif part["type"] == "tool_call":
                call_id, name = data.get("id"), data.get("name")
                if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                    fail(where, f"messages row {row['id']}: parts[{j}]", "tool_call without an id or a name")
                tid = unique_id(call_id, used)
                out.append({"type": "tool_use", "id": tid, "name": name, "input": _input(data.get("input"))})
                open_calls[call_id] = tid
                if call_id in children:
                    sub_agents.append({"session": children[call_id], "tool_use_id": tid, "index": len(messages)})
        messages.append({"role": "assistant", "content": out or ""})  # "": a reply cancelled before any part
        row_map.append([row["id"]])
    if messages:
        close_open()
    metadata: dict[str, Any] = {
        "session_id": session["id"],
        "title": session.get("title"),
        "created_at": session.get("created_at"),
        "row_map": row_map,
        "user_prompts": user_prompts,
        "models": dict(sorted(models.items())),
        "providers": sorted({str(r["provider"]) for r in rows if r.get("provider")}),
        "token_usage": {k: session[k] for k in ("prompt_tokens", "completion_tokens") if isinstance(session.get(k), int)},
        "cost": session.get("cost"),
        "finish_reasons": dict(sorted(reasons.items())),
        "wal": wal_name,
    }
    if session.get("parent_session_id"):
        metadata["parent_session"] = session["parent_session_id"]
        metadata["sub_agent"] = True
    if sub_agents:
        metadata["sub_agents"] = sub_agents
    if notes:
        metadata["finish_notes"] = notes
    if unanswered:
        metadata["unanswered_tool_calls"] = unanswered
    if orphans:
        metadata["orphan_tool_results"] = orphans
    if session.get("summary_message_id"):
        metadata["summary_message_id"] = session["summary_message_id"]
    return finish(trace_id=safe_id(session["id"], where, f"sessions row {session['id']}: id"),
                  source={"kind": NAME, "path": path.name, "session": session["id"]}, system="", tools=[],
                  messages=messages, metadata=metadata, where=where)


def convert_file(path: Path) -> list[dict[str, Any]]:
    """One trace per session with messages, in the order the sessions were created."""
    where = str(path)
    if is_wal(path):
        fail(where, "", f"a Crush WAL file: import the database beside it ({path.name.split('-wal')[0]}), which reads it too")
    sessions, rows, wal_name = read_rows(path)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_session.setdefault(str(row["session_id"]), []).append(row)
    known = {str(s["id"]) for s in sessions}
    lost = sorted(set(by_session) - known)
    if lost:
        fail(where, f"messages of session {lost[0]}", "the session is not in the sessions table")
    children = {str(s["id"]): str(s["id"]) for s in sessions if s.get("parent_session_id")}
    traces = []
    for session in sessions:
        if by_session.get(str(session["id"])):
            traces.append(_session_trace(path, session, by_session[str(session["id"])], children, wal_name))
    if not traces:
        fail(where, "", "no session with messages")
    return traces
