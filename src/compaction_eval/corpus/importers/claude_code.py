"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is one event. Conversation events have `type` "user" or "assistant", a `message`
in the Anthropic Messages shape ({role, content}), a `uuid` and the `parentUuid` of the event
before it; `isSidechain: true` marks the conversation of a sub-agent (Task tool). Other lines
(`summary`, `system`, `progress`, `file-history-snapshot`, `queue-operation`, ...) carry no
conversation; they are counted by type in `metadata.skipped_event_types`.

The main thread is the chain of parentUuid links from the last conversation event back to the
root, plus what hangs off it: newer versions write the blocks of one reply as a chain, each
result of parallel tool calls as a child of the line holding its tool_use, and continue from
whichever result came last; so the other blocks of a reply on the chain, and results that
answer its tool_uses, belong to the thread. A `compact_boundary` (parentUuid null) is followed
across through its `logicalParentUuid`. Resumed sessions: a resume writes the conversation
again, under new uuids, into the same file, keeping only the chain (parallel calls off the
chain are lost in the copy); when the thread starts with such a copy of an earlier thread,
the trace is the earlier thread followed by what the resumed session added
(`metadata.resumed_sessions`; the copy counts in `resumed_copy_events`). Everything else is
left out and counted in `other_branch_events_skipped` (abandoned branches: a message edited
and resent; and the resumed copies).
Claude Code logs one event per content block of a streamed reply; consecutive assistant events
of one message.id are merged back into one message, and consecutive user events (results of
parallel calls, text) into one, so every tool_use is answered in the next message as the
trace contract requires. `metadata.line_map[t]` lists
the source lines of trace message t.

What real transcripts contain, and what the importer does with it:
- `//` comment lines (test fixtures add them): skipped, counted in `metadata.comment_lines`.
- lines that are not valid JSON (a redaction script that cut lines): skipped, each logged as
  `<file>: line N: ...` and listed in `metadata.skipped_lines` [{line, reason}]. A chain link
  through such a line is bridged: its parentUuid is read from the line's intact beginning; the
  skipped line that held the missing uuid is the one naming it, else the nearest skipped line
  before the child (`metadata.chain_bridges`). A final line without a newline that does not
  parse means the file was cut short: an error, as is a parent found nowhere.
- a tool_use whose result is lost (on a skipped line, or never written: interrupted) gets an
  error tool_result saying so (`unanswered_tool_uses`); a tool_result whose tool_use is lost
  becomes a text block "[tool result for <id>; its tool call is not in the transcript] ..."
  with the result text (`orphan_tool_results`).
- `thinking` blocks are kept (signatures dropped); `redacted_thinking` carries nothing
  readable and is counted (`redacted_thinking_blocks`); images and documents become a note.
- the summary Claude Code writes when it compacts a session (`isCompactSummary`) is not
  conversation: it is left out of the messages and kept in `metadata.compact_summaries`.
- sub-agents: sidechain events inside a main transcript are left out
  (`sidechain_events_skipped`); a transcript made only of sidechain events
  (`agent-<id>.jsonl`) is imported as its own trace, id `<sessionId>-agent-<agentId>`,
  with `metadata.sidechain` true and `metadata.parent_session`. A main trace lists the
  sub-agents it started in `metadata.sub_agents` (agent id, tool_use id, source line).
- `metadata.user_prompts` counts the user messages a person typed (not tool results, not
  meta / command-output / interruption / background-task notes, not compact summaries).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import strict_loads
from compaction_eval.corpus.importers.common import fail, file_stem, finish, safe_id, unique_id, warn

NAME = "claude-code"
CONVERSATION = ("user", "assistant")
NOT_PROMPTS = ("<local-command-stdout>", "<local-command-stderr>", "Caveat: The messages below", "[Request interrupted",
               "<ide_opened_file>", "<ide_selection>", "<system-reminder>", "<task-notification>")
_BROKEN_PARENT = re.compile(r'^\s*\{\s*"parentUuid"\s*:\s*(?:null|"([^"]*)")')
_BROKEN_UUID = re.compile(r'"uuid"\s*:\s*"([^"]+)"')
_BROKEN_TOOL_USE = re.compile(r'"type"\s*:\s*"tool_use"\s*,\s*"id"\s*:\s*"([^"]+)"')
_BROKEN_TOOL_RESULT = re.compile(r'"tool_use_id"\s*:\s*"([^"]+)"')

Event = tuple[int, dict[str, Any]]


@dataclass
class _Skipped:
    """A line that is not valid JSON, and what can still be read from its beginning."""

    line: int
    reason: str
    parent_known: bool = False
    parent: str | None = None
    uuid: str | None = None
    tool_uses: list[str] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)


@dataclass
class Transcript:
    events: list[Event]
    skipped: list[_Skipped]
    comment_lines: int


def read_transcript(path: Path) -> Transcript:
    """Every JSON-object line as (line number, event); broken lines skipped (and warned about)."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        fail(where, "", f"cannot read: {exc.strerror or exc}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(where, f"byte {exc.start}", "not UTF-8 text")
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    events: list[Event] = []
    skipped: list[_Skipped] = []
    comments = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("//"):
            comments += 1
            continue
        try:
            event = strict_loads(line)
        except json.JSONDecodeError as exc:
            if n == last and not text.endswith(("\n", "\r")):
                fail(where, f"line {n}, column {exc.colno}", f"invalid JSON: {exc.msg} (the file ends inside this line: cut short?)")
            s = _Skipped(n, f"invalid JSON at column {exc.colno}: {exc.msg}")
            m = _BROKEN_PARENT.match(line)
            if m:
                s.parent_known, s.parent = True, m.group(1)
            uuids = _BROKEN_UUID.findall(line)
            s.uuid = uuids[-1] if uuids else None
            s.tool_uses = _BROKEN_TOOL_USE.findall(line)
            s.tool_results = _BROKEN_TOOL_RESULT.findall(line)
            skipped.append(s)
            warn(where, f"line {n}", f"skipped: {s.reason}")
            continue
        if not isinstance(event, dict):
            fail(where, f"line {n}", "an event must be a JSON object")
        events.append((n, event))
    if not events:
        fail(where, "", "empty transcript")
    return Transcript(events, skipped, comments)


def read_events(path: Path) -> list[Event]:
    """(line number, event) for every JSON-object line (see `read_transcript`)."""
    return read_transcript(path).events


def detect_events(events: list[Event]) -> bool:
    """True when the lines look like Claude Code events (conversation events with uuids)."""
    conv = [e for _, e in events if e.get("type") in CONVERSATION]
    return bool(conv) and all("uuid" in e and isinstance(e.get("message"), dict) for e in conv)


def _find_skipped(skipped: list[_Skipped], uuid: str, before: int, used: set[int], known: dict[str, Event]) -> tuple[_Skipped, str] | None:
    """The skipped line that held event `uuid`: the one naming it, else the nearest before `before`."""
    named = [s for s in skipped if s.uuid == uuid and s.line not in used and s.parent_known]
    if named:
        return named[-1], "uuid"
    near = [s for s in skipped if s.line < before and s.line not in used and s.parent_known
            and (s.uuid is None or s.uuid not in known)]
    return (near[-1], "position") if near else None


def _spine(events: list[Event], skipped: list[_Skipped], leaf: Event, where: str) -> tuple[dict[Any, int], list[dict[str, Any]]]:
    """Map of uuid -> line of every event on the chain from `leaf` back to the root, and the bridges
    taken through skipped lines."""
    by_uuid = {e["uuid"]: (n, e) for n, e in events if isinstance(e.get("uuid"), str)}
    spine: dict[Any, int] = {}  # uuids as found: the leaf's is not checked to be a string
    bridges: list[dict[str, Any]] = []
    used: set[int] = set()
    node: Event | None = leaf
    while node is not None:
        n, e = node
        uid = e.get("uuid")
        if uid in spine:
            fail(where, f"line {n}", f"parentUuid cycle at {uid!r}")
        spine[uid] = n
        parent = e.get("parentUuid")
        logical = parent is None and isinstance(e.get("logicalParentUuid"), str)
        if logical:
            parent = e["logicalParentUuid"]  # across a compaction boundary
        at = n
        while parent is not None and parent not in by_uuid:
            found = _find_skipped(skipped, parent, at, used, by_uuid)
            if found is None:
                if logical:
                    parent = None  # the compacted part is not in this file
                    break
                fail(where, f"line {n}", f"parentUuid {parent!r} names no event in the file")
            s, how = found
            used.add(s.line)
            bridges.append({"line": at, "missing_parent": parent, "via_skipped_line": s.line, "matched_by": how})
            parent, at = s.parent, s.line
        node = by_uuid[parent] if parent is not None else None
    return spine, bridges


def _results(event: dict[str, Any]) -> list[str] | None:
    """The tool_use ids a user event answers, when it holds nothing but tool results."""
    content = event.get("message", {}).get("content")
    if not isinstance(content, list) or not content:
        return None
    if not all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    return [b.get("tool_use_id") for b in content]


def _uses(event: dict[str, Any]) -> list[Any]:
    content = event.get("message", {}).get("content")
    if not isinstance(content, list):
        return []
    return [b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]  # ids as found


def _attach(tr: Transcript, mine: list[Event], leaf: Event, where: str) -> tuple[list[Event], list[dict[str, Any]]]:
    """The events of the thread ending at `leaf`, in file order, and the bridges taken."""
    spine, bridges = _spine(tr.events, tr.skipped, leaf, where)
    on_spine = [(n, e) for n, e in mine if e.get("uuid") in spine and spine[e["uuid"]] == n]
    uses = {u for _, e in on_spine if e.get("type") == "assistant" for u in _uses(e)}
    answered = {r for _, e in on_spine if e.get("type") == "user" for r in (_results(e) or [])}
    reply_ids = {e["message"].get("id") for _, e in on_spine if e.get("type") == "assistant"}
    known = {e["uuid"] for _, e in tr.events if isinstance(e.get("uuid"), str)}
    # Off the chain but part of the thread: the other blocks of a reply on the chain (Claude
    # Code continues the chain from whichever parallel call finished last) and the results
    # hanging off them; the uuids of skipped lines the chain was bridged through count as on it.
    attached = set(spine) | {b["missing_parent"] for b in bridges}
    extra: list[Event] = []
    changed = True
    while changed:
        changed = False
        for n, e in mine:
            uid = e.get("uuid")
            if uid in attached:
                continue
            parent = e.get("parentUuid")
            ids = _results(e) if e.get("type") == "user" else None
            if e.get("type") == "assistant" and parent in attached and e["message"].get("id") in reply_ids:
                uses |= set(_uses(e))
            elif ids is not None and parent in attached and set(ids) <= uses - answered:
                answered |= set(ids)
            elif ids is not None and parent is not None and parent not in known and not set(ids) & answered:
                answered |= set(ids)  # a result whose tool_use line was not valid JSON
            else:
                continue
            attached.add(uid)
            extra.append((n, e))
            changed = True
    return sorted(on_spine + extra, key=lambda ne: ne[0]), bridges


def _block_signatures(e: dict[str, Any]) -> set[tuple[str, str]]:
    """What an event says, independent of its uuid: a resumed session rewrites the earlier
    conversation under new uuids (and splits or merges user text differently)."""
    msg = e.get("message", {})
    content = msg.get("content")
    if isinstance(content, str):
        return {("t", content)}
    out = set()
    for b in content or []:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "tool_use":
            out.add(("u", str(b.get("id"))))
        elif kind == "tool_result":
            out.add(("r", str(b.get("tool_use_id"))))
        elif kind == "text":
            out.add(("t", str(b.get("text"))))
        elif kind == "thinking":
            out.add(("k", str(b.get("thinking"))))
        else:
            out.add((str(kind), json.dumps(b, sort_keys=True)))
    return out


def _thread(tr: Transcript, where: str) -> tuple[list[Event], dict[str, Any]]:
    """The events of the trace, in file order, and what the choice left out.

    The thread ending at the last event; when that thread starts with a copy of an earlier
    thread of the file (a resumed session), the earlier thread followed by what the resumed
    one added: the copy may be partial (a resume keeps only the chain, not parallel calls).
    """
    conv = [(n, e) for n, e in tr.events if e.get("type") in CONVERSATION]
    sidechain = all(e.get("isSidechain") for _, e in conv)  # a sub-agent transcript
    mine = [(n, e) for n, e in conv if bool(e.get("isSidechain")) == sidechain]
    if not mine:
        fail(where, "", "no main-thread user or assistant events")
    kept, bridges = _attach(tr, mine, mine[-1], where)
    copies: set[int] = set()
    resumes: list[dict[str, Any]] = []
    while True:
        kept_lines = {n for n, _ in kept}
        left = [(n, e) for n, e in mine if n not in kept_lines and n not in copies]
        if not left or left[-1][0] > kept[0][0]:
            break
        earlier, earlier_bridges = _attach(tr, mine, left[-1], where)
        if {n for n, _ in earlier} & kept_lines:
            break  # shares events with the thread: an abandoned branch, not a resumed session
        said = set().union(*(_block_signatures(e) for _, e in earlier))
        copied = [(n, e) for n, e in kept if _block_signatures(e) <= said]
        if not copied or copied[0] != kept[0]:
            break
        copies |= {n for n, _ in copied}
        resumes.append({"earlier_thread_lines": [earlier[0][0], earlier[-1][0]], "resumed_at_line": kept[0][0],
                        "copied_events": len(copied)})
        kept = sorted(earlier + [ev for ev in kept if ev[0] not in copies], key=lambda ne: ne[0])
        bridges = earlier_bridges + bridges
    kept_lines = {n for n, _ in kept}
    info = {
        "sidechain": sidechain,
        "sidechain_events_skipped": 0 if sidechain else sum(1 for _, e in conv if e.get("isSidechain")),
        "other_branch_events_skipped": sum(1 for n, _ in mine if n not in kept_lines),
        "resumed_copy_events": len(copies),
        "resumed_sessions": resumes,
        "chain_bridges": bridges,
    }
    return kept, info


def _tool_result_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(str(b.get("text", "")))
            elif isinstance(b, dict):
                parts.append(f"[{b.get('type', 'block')} omitted]")
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _blocks(content: Any, where: str, place: str, counts: Counter[str]) -> list[dict[str, Any]]:
    """The message content as trace@1 blocks (images and documents become a text note)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        fail(where, place, "message.content must be a string or a list of blocks")
    out: list[dict[str, Any]] = []
    for b in content:
        if not isinstance(b, dict):
            fail(where, place, "a content block must be an object")
        kind = b.get("type")
        if kind == "text":
            if b.get("text"):
                out.append({"type": "text", "text": str(b["text"])})
        elif kind == "thinking":
            out.append({"type": "thinking", "thinking": str(b.get("thinking", ""))})
        elif kind == "redacted_thinking":
            counts["redacted_thinking_blocks"] += 1  # encrypted: nothing a summariser could read
        elif kind == "tool_use":
            out.append({"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": b.get("input", {})})
        elif kind == "tool_result":
            out.append({"type": "tool_result", "tool_use_id": b.get("tool_use_id"),
                        "content": _tool_result_content(b.get("content")), "is_error": bool(b.get("is_error"))})
        else:
            counts[f"{kind}_blocks_as_note"] += 1
            out.append({"type": "text", "text": f"[{kind} omitted]"})
    return out


def _is_prompt(e: dict[str, Any]) -> bool:
    """A message a person typed: user text that is not a tool result, meta or a CLI note."""
    if e.get("isMeta") or e.get("isCompactSummary"):
        return False
    content = e["message"].get("content")
    texts = [content] if isinstance(content, str) else [
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    return any(t.strip() and not t.lstrip().startswith(NOT_PROMPTS) for t in texts)


def convert_transcript(tr: Transcript, path: Path) -> list[dict[str, Any]]:
    """One trace from one session transcript."""
    where = str(path)
    kept, info = _thread(tr, where)
    counts: Counter[str] = Counter()
    messages: list[dict[str, Any]] = []
    line_map: list[list[int]] = []
    prompt_messages: set[int] = set()
    compact: list[dict[str, Any]] = []
    sub_agents: list[dict[str, Any]] = []
    models: Counter[str] = Counter()
    last_id: Any = None
    for n, e in kept:
        msg = e["message"]
        role = msg.get("role", e["type"])
        if role not in CONVERSATION:
            fail(where, f"line {n}", f"message.role {role!r} is not user or assistant")
        if e.get("isCompactSummary"):
            compact.append({"line": n, "before_message": len(messages), "text": _tool_result_content(msg.get("content"))})
            continue
        blocks = _blocks(msg.get("content"), where, f"line {n}: message.content", counts)
        if not blocks:
            counts["empty_events"] += 1
            continue
        if role == "assistant" and isinstance(msg.get("model"), str):
            models[msg["model"]] += 1
        # One streamed reply is one message; two replies in a row stay two (the user turn
        # between them was on a skipped line, or the first was an API error notice).
        same = role == "user" or msg.get("id") is None or last_id is None or msg.get("id") == last_id
        if messages and messages[-1]["role"] == role and same:
            messages[-1]["content"].extend(blocks)
            line_map[-1].append(n)
        else:
            messages.append({"role": role, "content": blocks})
            line_map.append([n])
        last_id = msg.get("id") if role == "assistant" else None
        if role == "user" and _is_prompt(e):
            prompt_messages.add(len(messages) - 1)
        result = e.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            ids: list[str] | list[None] = _results(e) or [None]
            sub_agents.append({"agent_id": result["agentId"], "tool_use_id": ids[0], "line": n})
    if not messages:
        fail(where, "", "the main thread has no message content")
    out = _pair(messages, line_map, tr.skipped, counts)
    first = kept[0][1]
    session = first.get("sessionId") or file_stem(path)
    metadata: dict[str, Any] = {
        "session_id": first.get("sessionId"),
        "cwd": first.get("cwd"),
        "version": first.get("version"),
        "git_branch": first.get("gitBranch"),
        "events": len(tr.events),
        "main_thread_events": len(kept),
        "sidechain_events_skipped": info["sidechain_events_skipped"],
        "other_branch_events_skipped": info["other_branch_events_skipped"],
        "resumed_copy_events": info["resumed_copy_events"],
        "summaries": [e.get("summary") for _, e in tr.events if e.get("type") == "summary"],
        "unanswered_tool_uses": counts.pop("unanswered_tool_uses", 0),
        "orphan_tool_results": counts.pop("orphan_tool_results", 0),
        "user_prompts": len(prompt_messages),
        "models": dict(sorted(models.items())),
        "skipped_event_types": dict(sorted(Counter(e.get("type", "?") for _, e in tr.events
                                                    if e.get("type") not in CONVERSATION).items())),
        "skipped_lines": [{"line": s.line, "reason": s.reason} for s in tr.skipped],
        "line_map": line_map,
    }
    if tr.comment_lines:
        metadata["comment_lines"] = tr.comment_lines
    if info["chain_bridges"]:
        metadata["chain_bridges"] = info["chain_bridges"]
    if info["resumed_sessions"]:
        metadata["resumed_sessions"] = info["resumed_sessions"]
    if compact:
        metadata["compact_summaries"] = compact
    if sub_agents:
        metadata["sub_agents"] = sub_agents
    metadata.update(sorted(counts.items()))
    trace_id = session
    if info["sidechain"]:
        agent = first.get("agentId") or file_stem(path)
        metadata.update(sidechain=True, agent_id=first.get("agentId"), parent_session=first.get("sessionId"))
        trace_id = f"{session}-agent-{agent}" if first.get("sessionId") else file_stem(path)
    return [finish(trace_id=safe_id(trace_id, where, "sessionId"), source={"kind": NAME, "path": path.name},
                   system="", tools=[], messages=out, metadata={k: v for k, v in metadata.items() if v is not None},
                   where=where)]


def _pair(messages: list[dict[str, Any]], line_map: list[list[int]], skipped: list[_Skipped],
          counts: Counter[str]) -> list[dict[str, Any]]:
    """Every tool_use answered once in the next message: lost results get an error result,
    results without their tool_use become text, repeated ids get a suffix."""
    lost_result = {r: s.line for s in skipped for r in s.tool_results}
    lost_use = {u: s.line for s in skipped for u in s.tool_uses}
    used: set[str] = set()
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            for b in m["content"]:
                if b["type"] == "tool_use":
                    new = unique_id(str(b["id"]), used)
                    if new != b["id"]:
                        counts["tool_use_ids_renamed"] += 1
                        b["id"] = new
            out.append(m)
            uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if uses and (nxt is None or nxt["role"] != "user"):
                nxt = {"role": "user", "content": []}
                out.append(nxt)
                line_map.insert(len(out) - 1, [])
                m["_filler"] = nxt
            continue
        prev = out[-1] if out and out[-1]["role"] == "assistant" else None
        _answer(m, prev, lost_result, lost_use, counts)
        out.append(m)
    for m in out:
        filler = m.pop("_filler", None)
        if filler is not None:
            _answer(filler, m, lost_result, lost_use, counts)
    return out


def _answer(user: dict[str, Any], prev: dict[str, Any] | None, lost_result: dict[str, int],
            lost_use: dict[str, int], counts: Counter[str]) -> None:
    uses = [b["id"] for b in prev["content"] if b["type"] == "tool_use"] if prev else []
    answered: set[str] = set()
    content: list[dict[str, Any]] = []
    for b in user["content"]:
        if b["type"] != "tool_result":
            content.append(b)
        elif b["tool_use_id"] in uses and b["tool_use_id"] not in answered:
            answered.add(b["tool_use_id"])
            content.append(b)
        else:
            counts["orphan_tool_results"] += 1
            why = f" (line {lost_use[b['tool_use_id']]} is not valid JSON)" if b["tool_use_id"] in lost_use else ""
            content.append({"type": "text", "text": f"[tool result for {b['tool_use_id']}; its tool call is not in "
                                                    f"the transcript{why}]\n{b['content']}"})
    missing = [u for u in uses if u not in answered]
    counts["unanswered_tool_uses"] += len(missing)
    filler = [{"type": "tool_result", "tool_use_id": u, "is_error": True,
               "content": f"(no result: line {lost_result[u]} of the transcript, which held it, is not valid JSON)"
               if u in lost_result else "(no result in the transcript)"} for u in missing]
    content.sort(key=lambda b: b["type"] != "tool_result")  # results first, as the API wants
    user["content"] = filler + content


def convert_file(path: Path) -> list[dict[str, Any]]:
    tr = read_transcript(path)
    if not detect_events(tr.events):
        fail(str(path), "", "not a Claude Code transcript (no user/assistant events with uuid and message)")
    return convert_transcript(tr, path)
