"""Recorded answers: a model's answers written once, replayed by request content.

A recording is a JSONL file (or a directory of them, read in name order) of answer records,
one JSON object per line:

    {"schema": "compaction-eval/recorded-answer@1",
     "key": "<64 hex: request_key of the request>",
     "text": "<the answer text>",
     "output": {...},            optional: the whole inspect ModelOutput (tool calls, stop reason)
     "stop_reason": "stop",      optional
     "usage": {"input_tokens": 123, "output_tokens": 45},   optional
     "model": "anthropic/claude-sonnet-4-5",   who answered (a model name, or "person")
     "written_by": "free text: who or what wrote it, and how",
     "written_at": "2026-12-05T08:00:00+00:00",
     "request_sha256": "<the key again: the digest of the canonical request>"}

Any line may instead be a header `{"schema": "compaction-eval/recording@1", "model": ...,
"written_by": ..., "written_at": ...}`: its fields are the defaults of the records after it
(a recording produced in one sitting says once who wrote it).

**The key** (`request_key`) is the sha256 of the canonical JSON (sorted keys, no spaces,
UTF-8) of

    {"system": <every system message's text, joined by a blank line, or null>,
     "messages": [{"role", "content", and "tool_calls" / "tool_call_id" / "function" /
                   "error" where the message has them}],
     "tools": [<ToolInfo without nulls>] or [],
     "tool_choice": <"auto" | "any" | "none" | {"name": ...}>, or null when there are no tools}

where a message's content is a string when it is text only (text blocks joined by a newline,
reasoning blocks left out), otherwise its list of non-text blocks, and consecutive messages of
the same role (user, or assistant without tool calls) are merged into one, their texts joined
by a newline. Why: the key must not depend on the model name, the provider, the sampling
settings or how a provider packs messages (Anthropic's merges consecutive user messages; the
stand-ins do not), so that answers written by any model, a batch API or a person replay
under `recorded/...` for exactly the request they answer, and nothing else. `max_tokens` is
not in the key: the budget is in the prompt's words, and a provider that overshoots is cut
to the budget by the harness either way.

A request with no answer (`recorded/` in strict mode) gets a placeholder answer so the run
can see every request it would send; nothing the run writes is committed while any answer
is missing (`check_complete`, called by the run-directory writers and the CLI), and the CLI
says how many are missing and the exact command that exports them. In collect mode (the
`requests export` command) the same run only gathers the requests.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shlex
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import RECORDED_PROVIDER
from compaction_eval.contracts.traces import strict_loads

ANSWER_SCHEMA = "compaction-eval/recorded-answer@1"
HEADER_SCHEMA = "compaction-eval/recording@1"
REQUEST_SCHEMA = "compaction-eval/request@1"
MANIFEST_FILE = "manifest.yaml"
MAX_RECORDING_BYTES = 256 * 1024 * 1024
MAX_ANSWER_CHARS = 1_000_000  # a summary or a verdict list is kilobytes
NO_ANSWER_MARK = "compaction-eval:no-recorded-answer"
PROVIDER = RECORDED_PROVIDER
_PROVENANCE = ("model", "written_by", "written_at")


# ---------------------------------------------------------------------------- the key


def _text_of(content: Any) -> str | list[dict[str, Any]]:
    """A message's content as the key sees it: text only -> one string; else the blocks."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    blocks: list[dict[str, Any]] = []
    for block in content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "reasoning":
            continue  # a provider's hidden reasoning is not part of what was asked
        else:
            blocks.append(block.model_dump(exclude_none=True))
    if not blocks:
        return "\n".join(texts)
    return [*({"type": "text", "text": t} for t in texts), *blocks]


def canonical_request(input: Sequence[Any], tools: Sequence[Any] = (), tool_choice: Any = None) -> dict[str, Any]:
    """The part of a request the key is computed from (see the module docstring)."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in input:
        content = _text_of(message.content)
        if message.role == "system":
            system.append(content if isinstance(content, str) else json.dumps(content, sort_keys=True))
            continue
        item: dict[str, Any] = {"role": message.role, "content": content}
        calls = getattr(message, "tool_calls", None)
        if calls:
            item["tool_calls"] = [{"id": c.id, "function": c.function, "arguments": c.arguments} for c in calls]
        for name in ("tool_call_id", "function"):
            value = getattr(message, name, None) if message.role == "tool" else None
            if value is not None:
                item[name] = value
        error = getattr(message, "error", None) if message.role == "tool" else None
        if error is not None:
            item["error"] = error.model_dump(exclude_none=True)
        prev = messages[-1] if messages else None
        mergeable = message.role in ("user", "assistant") and "tool_calls" not in item
        if (prev is not None and mergeable and prev["role"] == message.role and set(prev) == {"role", "content"}
                and isinstance(prev["content"], str) and isinstance(content, str)):
            prev["content"] = prev["content"] + "\n" + content
            continue
        messages.append(item)
    tool_list = [t.model_dump(exclude_none=True) if hasattr(t, "model_dump") else t for t in tools or []]
    choice = None
    if tool_list:
        choice = tool_choice.model_dump(exclude_none=True) if hasattr(tool_choice, "model_dump") else tool_choice
    return {"system": "\n\n".join(system) if system else None, "messages": messages, "tools": tool_list, "tool_choice": choice}


def canonical_json(request: Mapping[str, Any]) -> str:
    return json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(request: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of a canonical request."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def depends_on_missing(request: Mapping[str, Any]) -> bool:
    """The request carries a placeholder answer (a judge asked about a summary that is not
    recorded yet): it can be exported only once that answer is imported."""
    return NO_ANSWER_MARK in canonical_json(request)


def placeholder(key: str) -> str:
    """What a missing answer reads as while a run gathers its requests: an empty verdict list
    (a judge reads it without error) and the mark that makes a dependent request visible."""
    return f"[]\n({NO_ANSWER_MARK} {key})"


# ---------------------------------------------------------------------------- recordings


@dataclass
class Recording:
    """The answers of one `recorded/<path>`: key -> record (with provenance filled in)."""

    path: Path
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def provenance(self, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """Who wrote the answers (all of them, or those of `keys`)."""
        records = [self.answers[k] for k in (self.answers if keys is None else keys) if k in self.answers]
        return {
            "recording": str(self.path),
            "answers": len(records),
            "models": sorted({str(r.get("model")) for r in records if r.get("model")}),
            "written_by": sorted({str(r.get("written_by")) for r in records if r.get("written_by")}),
            "written_at": sorted({str(r.get("written_at")) for r in records if r.get("written_at")})[-1:],
        }


def recording_files(path: Path) -> list[Path]:
    """The JSONL files of a recording: the file itself, or a directory's `*.jsonl`."""
    if path.is_dir():
        return sorted(p for p in path.glob("*.jsonl") if p.is_file())
    return [path]


def _check_record(rec: Any, where: Problem) -> str | None:
    """Why `rec` is not a usable answer record (None when it is)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    key = rec.get("key")
    if not isinstance(key, str) or len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        return "`key` must be 64 lowercase hex digits (the request_key of the request)"
    text = rec.get("text")
    if not isinstance(text, str):
        return "`text` must be a string (the answer)"
    if len(text) > MAX_ANSWER_CHARS:
        return f"`text` is {len(text)} characters: larger than any answer ({MAX_ANSWER_CHARS})"
    usage = rec.get("usage")
    if usage is not None and (not isinstance(usage, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in usage.values() if v is not None)):
        return "`usage` must map token kinds to counts (non-negative integers)"
    for name in (*_PROVENANCE, "stop_reason"):
        if rec.get(name) is not None and not isinstance(rec.get(name), str):
            return f"`{name}` must be a string"
    if rec.get("output") is not None and not isinstance(rec.get("output"), dict):
        return "`output` must be an inspect ModelOutput object"
    return None


def read_answer_lines(path: Path, *, defaults: Mapping[str, Any] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) of every answer record in one JSONL file, header defaults applied.
    A malformed line is a ContractError naming the file and line (every bad line is listed)."""
    from compaction_eval.contracts.runfiles import read_text_input

    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise ContractError([Problem(str(path), "", "not a regular file")])
    size = path.stat().st_size if path.is_file() else 0
    if size > MAX_RECORDING_BYTES:
        raise ContractError([Problem(str(path), "", f"{size} bytes: larger than a recording may be ({MAX_RECORDING_BYTES})")])
    text = read_text_input(path, "recording")
    head: dict[str, Any] = dict(defaults or {})
    out: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = Problem(str(path), f"line {number}", "")
        try:
            rec = strict_loads(line)  # the one JSON reader: NaN, a key twice, huge ints refused
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(str(path), f"line {number}", f"not JSON ({str(exc).splitlines()[0][:120]})"))
            continue
        if isinstance(rec, dict) and rec.get("schema") == HEADER_SCHEMA:
            head.update({k: rec[k] for k in _PROVENANCE if isinstance(rec.get(k), str)})
            continue
        if isinstance(rec, dict) and rec.get("schema") not in (None, ANSWER_SCHEMA):
            problems.append(Problem(str(path), f"line {number}", f"schema {rec.get('schema')!r}: expected {ANSWER_SCHEMA}"))
            continue
        why = _check_record(rec, where)
        if why:
            problems.append(Problem(str(path), f"line {number}", why))
            continue
        out.append((number, {**{k: v for k, v in head.items() if v is not None}, **{k: v for k, v in rec.items() if v is not None}}))
    if problems:
        raise ContractError(problems)
    return out


def load_recording(path: Path | str) -> Recording:
    """All answers of a recording (file or directory). The same key twice with different
    text is a located error (which one is meant?); with the same text it is one answer."""
    path = Path(path)
    if not path.exists():
        raise ContractError([Problem(str(path), "", "recording not found (recorded/<file or directory of .jsonl files>)")])
    recording = Recording(path)
    seen: dict[str, str] = {}
    problems: list[Problem] = []
    for file in recording_files(path):
        for number, rec in read_answer_lines(file):
            key = rec["key"]
            old = recording.answers.get(key)
            if old is not None and old["text"] != rec["text"]:
                problems.append(Problem(str(file), f"line {number}", f"a second, different answer to request {key[:12]} (first at {seen[key]})"))
                continue
            recording.answers.setdefault(key, rec)
            seen.setdefault(key, f"{file}:{number}")
    if problems:
        raise ContractError(problems)
    return recording


_LOCK = threading.Lock()


def append_records(path: Path | str, records: Sequence[Mapping[str, Any]]) -> None:
    """Append answer records to a recording, durably: written and fsynced before this returns
    (the harness acts on an answer only after it is on disk). One writer at a time."""
    data = "".join(json.dumps(dict(r), ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n" for r in records)
    path = Path(path)
    with _LOCK:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data.encode("utf-8"))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)


def answer_record(key: str, text: str, *, model: str | None, written_by: str | None, usage: Mapping[str, Any] | None = None,
                  output: Mapping[str, Any] | None = None, stop_reason: str | None = None, written_at: str | None = None) -> dict[str, Any]:
    """One answer record (see the module docstring)."""
    rec: dict[str, Any] = {"schema": ANSWER_SCHEMA, "key": key, "request_sha256": key, "text": text, "model": model,
                           "written_by": written_by, "written_at": written_at or now()}
    if usage:
        rec["usage"] = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    if output is not None:
        rec["output"] = dict(output)
    if stop_reason:
        rec["stop_reason"] = stop_reason
    return {k: v for k, v in rec.items() if v is not None}


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------- the session state


@dataclass
class _State:
    """What this process's `recorded/` models saw: answers used, requests without one."""

    collect: bool = False  # `requests export`: gather requests, never fail
    scratch: Path | None = None  # in collect mode: the only place the mirrored command may write
    command: list[str] = field(default_factory=list)  # the command line, for the export hint
    recordings: dict[str, Recording] = field(default_factory=dict)
    used: dict[str, set[str]] = field(default_factory=dict)  # recording path -> keys answered
    missing: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> request entry
    dependent: set[str] = field(default_factory=set)  # keys of requests that carry a placeholder


STATE = _State()


def reset(*, collect: bool = False, command: Sequence[str] | None = None, scratch: Path | None = None) -> None:
    """Forget what earlier commands in this process saw (each CLI command starts clean).
    `scratch`: in collect mode, where the mirrored command's files go (and nowhere else)."""
    global STATE
    STATE = _State(collect=collect, command=list(command or []), scratch=scratch)


def recording(path: str) -> Recording:
    """The recording at `path`, read once per process and command."""
    found = STATE.recordings.get(path)
    if found is None:
        found = STATE.recordings[path] = load_recording(path)
    return found


def lookup(path: str, request: dict[str, Any], *, max_tokens: int | None = None) -> tuple[str, dict[str, Any] | None]:
    """(key, record) for `request` in the recording at `path`; record None when missing (the
    request is then remembered for `check_complete` and `requests export`)."""
    key = request_key(request)
    rec = recording(path).answers.get(key)
    with _LOCK:
        if rec is not None:
            STATE.used.setdefault(path, set()).add(key)
        elif depends_on_missing(request):
            STATE.dependent.add(key)
        else:
            STATE.missing.setdefault(key, {"schema": REQUEST_SCHEMA, "key": key, "recording": path,
                                           "max_tokens": max_tokens, "request": request})
    return key, rec


def provenance() -> dict[str, Any] | None:
    """Who wrote the recorded answers this command used (None: no recorded model ran)."""
    if not STATE.used:
        return None
    parts = [STATE.recordings[p].provenance(keys) for p, keys in sorted(STATE.used.items())]
    written_by = sorted({w for p in parts for w in p["written_by"]})
    models = sorted({m for p in parts for m in p["models"]})
    who = "; ".join(written_by) or "unknown writers"
    return {
        "recordings": [p["recording"] for p in parts],
        "answers": sum(p["answers"] for p in parts),
        "models": models,
        "written_by": written_by,
        "note": f"recorded answers written by {who} (models: {', '.join(models) or 'not stated'}), not API output",
    }


class MissingAnswers(ContractError):
    """Requests a `recorded/` model has no answer for (exit 2: the input is incomplete)."""


def export_hint() -> str:
    command = STATE.command or ["<the same command>"]
    return f"compaction-eval requests export exported-requests -- {shlex.join(command)}"


def check_complete(path: Path | None = None) -> None:
    """Raise MissingAnswers when a `recorded/` model met a request it has no answer for.
    Called before anything is committed (`path`: what would be). In collect mode nothing is
    missing, but nothing may be written outside the scratch directory either: a mirrored
    `replay --into RUN` must not put placeholder answers into a real run."""
    if STATE.collect:
        if path is not None and STATE.scratch is not None and not Path(path).resolve().is_relative_to(STATE.scratch.resolve()):
            raise ContractError([Problem(str(path), "", "requests export writes nothing outside its scratch directory: "
                                         "drop this output option from the mirrored command")])
        return
    if not (STATE.missing or STATE.dependent):
        return
    paths = sorted({m["recording"] for m in STATE.missing.values()} | set(STATE.used)) or ["the recording"]
    n, more = len(STATE.missing), len(STATE.dependent)
    extra = f" (and {more} more that depend on those answers)" if more else ""
    raise MissingAnswers([Problem(", ".join(paths), "", f"{n} request(s) have no recorded answer{extra}; "
                                  f"nothing was written; export them with: {export_hint()}")])


def missing_requests() -> list[dict[str, Any]]:
    """The requests without an answer, in the order they were met."""
    return list(STATE.missing.values())


def dependent_count() -> int:
    return len(STATE.dependent)


# ---------------------------------------------------------------------------- export and import


def request_markdown(entry: Mapping[str, Any]) -> str:
    """A request as a person (or a model) reads it: the system prompt, each message, the key
    and how to answer. Nothing here is rendered: it is plain text with headings."""
    req = entry["request"]
    key = entry["key"]
    lines = [f"# Request {key}", "",
             "Answer as the model would: write only the answer text. Record it as one JSON line",
             f'{{"key": "{key}", "text": "<your answer>"}} in an answers file, or as the file {key}.txt',
             "in an answers directory, then run `compaction-eval requests import`.", ""]
    if entry.get("max_tokens"):
        lines += [f"Answer budget: at most {entry['max_tokens']} tokens.", ""]
    if req.get("system"):
        lines += ["## system", "", req["system"], ""]
    for i, message in enumerate(req.get("messages") or [], 1):
        lines += [f"## message {i}: {message['role']}", ""]
        content = message.get("content")
        lines.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1))
        for name in ("tool_calls", "tool_call_id", "function", "error"):
            if name in message:
                lines += ["", f"{name}: {json.dumps(message[name], ensure_ascii=False)}"]
        lines.append("")
    if req.get("tools"):
        lines += ["## tools", "", json.dumps(req["tools"], ensure_ascii=False, indent=1), "",
                  f"tool_choice: {json.dumps(req.get('tool_choice'))}", ""]
    lines += ["## key", "", key, ""]
    return "\n".join(lines)


def read_requests(path: Path) -> dict[str, dict[str, Any]]:
    """Key -> request entry of an exported `requests.jsonl` (each key checked against its
    request: an edited request is not the one that was exported)."""
    entries: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError([Problem(str(path), "", f"cannot read the exported requests: {exc}")]) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = strict_loads(line)
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(str(path), f"line {number}", f"not JSON ({str(exc).splitlines()[0][:120]})"))
            continue
        if not isinstance(entry, dict) or entry.get("schema") != REQUEST_SCHEMA or not isinstance(entry.get("request"), dict):
            problems.append(Problem(str(path), f"line {number}", f"not a {REQUEST_SCHEMA} entry"))
            continue
        if request_key(entry["request"]) != entry.get("key"):
            problems.append(Problem(str(path), f"line {number}", "the key does not match the request (edited after export?)"))
            continue
        entries[entry["key"]] = entry
    if problems:
        raise ContractError(problems)
    return entries


def read_answers(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(place, record) of answers to import: a JSONL file (`{"key", "text", ...}` per line,
    header lines allowed), or a directory of `<key>.txt` / `<key>.md` files, one answer each."""
    if path.is_dir():
        out = []
        for file in sorted(path.iterdir()):
            if file.suffix not in (".txt", ".md") or not file.is_file():
                continue
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ContractError([Problem(str(file), "", f"cannot read: {exc}")]) from None
            rec = {"key": file.stem, "text": text.strip()}
            why = _check_record(rec, Problem(str(file), "", ""))
            if why:
                raise ContractError([Problem(str(file), "", why.replace("`key`", "the file name"))])
            out.append((str(file), rec))
        if not out:
            raise ContractError([Problem(str(path), "", "no <key>.txt or <key>.md answer files in this directory")])
        return out
    return [(f"{path}: line {n}", rec) for n, rec in read_answer_lines(path)]


def plan_import(answers: Sequence[tuple[str, dict[str, Any]]], requests: Mapping[str, Mapping[str, Any]],
                existing: Recording | None, *, model: str | None, written_by: str | None) -> list[dict[str, Any]]:
    """The records to append, or a ContractError listing every bad answer (located): a key
    that was not exported, a key answered twice, an answer the recording already has, an
    answer without a writer. Nothing is written here: the caller appends all or nothing."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    out = []
    for place, rec in answers:
        file, _, where = place.partition(": ")
        key = rec["key"]
        if key not in requests:
            problems.append(Problem(file, where, f"unknown key {key[:12]}...: not one of the {len(requests)} exported requests"))
            continue
        if key in seen:
            problems.append(Problem(file, where, f"duplicate answer to request {key[:12]} (first at {seen[key]})"))
            continue
        seen[key] = place
        if existing is not None and key in existing.answers:
            problems.append(Problem(file, where, f"request {key[:12]} already has an answer in {existing.path}"))
            continue
        who = rec.get("written_by") or written_by
        by = rec.get("model") or model
        if not who or not by:
            problems.append(Problem(file, where, "say who wrote the answer: --written-by and --model (or `written_by` and `model` in the record)"))
            continue
        out.append(answer_record(key, rec["text"], model=by, written_by=who, usage=rec.get("usage"),
                                 output=rec.get("output"), stop_reason=rec.get("stop_reason"), written_at=rec.get("written_at")))
    if problems:
        raise ContractError(problems)
    return out


__all__ = [
    "ANSWER_SCHEMA", "HEADER_SCHEMA", "MANIFEST_FILE", "NO_ANSWER_MARK", "PROVIDER", "REQUEST_SCHEMA",
    "MissingAnswers", "Recording", "answer_record", "append_records", "canonical_request", "check_complete",
    "load_recording", "lookup", "missing_requests", "plan_import", "provenance", "read_answers", "read_requests",
    "request_key", "request_markdown", "reset",
]


# ---------------------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class RecordedRun:
    """What `run --recorded` runs (`manifest.yaml` beside the recording):

        schema: compaction-eval/recorded-run@1
        recording: .              # the answers: a .jsonl file or a folder of them (relative to the manifest)
        traces: [fixtures/real]   # inputs as on the command line (relative to the project)
        labels: ["labels/real#2"]
        prompts: [prompts]
        budget: 800               # optional: keep_last, shape, focus too (the settings' defaults otherwise)
        points: [trace@45, ...]   # optional: only these labelled points (default: every labelled point)
        judge: true               # the recording also answers the judge (--judge-model recorded/...)
        written_by: "..."         # optional: said beside the results when the records do not say it

    The compaction model is the recording itself.
    """

    path: Path
    recording: Path
    traces: list[str]
    labels: list[str]
    prompts: list[str]
    settings: dict[str, Any]
    judge: bool
    points: list[str] = field(default_factory=list)

    @property
    def model(self) -> str:
        return f"{PROVIDER}{self.recording}"


RUN_SCHEMA = "compaction-eval/recorded-run@1"
_SETTINGS = ("budget", "keep_last", "shape", "focus")


def read_manifest(path: Path | str) -> RecordedRun:
    """The manifest at `path` (a manifest file, or a folder holding `manifest.yaml`)."""
    from compaction_eval.contracts.yamlfile import read_yaml_file

    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_FILE
    data = read_yaml_file(path)
    if not isinstance(data, dict) or data.get("schema") != RUN_SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"not a {RUN_SCHEMA} manifest")])
    problems = []
    lists: dict[str, list[str]] = {}
    for name in ("traces", "labels", "prompts"):
        value = data.get(name)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            problems.append(Problem(str(path), name, "a list of input paths, as on the command line"))
        lists[name] = value if isinstance(value, list) else []
    unknown = sorted(set(data) - {"schema", "recording", "traces", "labels", "prompts", "points", "judge", "written_by", *_SETTINGS})
    if unknown:
        problems.append(Problem(str(path), unknown[0], f"unknown field(s): {', '.join(unknown)}"))
    points = data.get("points", [])
    if not isinstance(points, list) or not all(isinstance(p, str) and "@" in p for p in points):
        problems.append(Problem(str(path), "points", "a list of TRACE@AT (the points the recording answers)"))
        points = []
    if not isinstance(data.get("judge", False), bool):
        problems.append(Problem(str(path), "judge", "true or false"))
    where = data.get("recording", ".")
    if not isinstance(where, str):
        problems.append(Problem(str(path), "recording", "a path relative to the manifest"))
        where = "."
    if problems:
        raise ContractError(problems)
    return RecordedRun(path=path, recording=path.parent / where, traces=lists["traces"], labels=lists["labels"],
                       prompts=lists["prompts"], settings={k: data[k] for k in _SETTINGS if k in data},
                       judge=bool(data.get("judge", False)), points=list(points))


# ---------------------------------------------------------------------------- --record


@dataclass
class Recorder:
    """`--record FILE`: every answer a real provider gives is appended to FILE as it arrives."""

    path: Path
    written_by: str
    keys: set[str] = field(default_factory=set)  # answered already (in the file or this run)


RECORDER: Recorder | None = None
_HOOKED = "_compaction_eval_recorder"  # set on a provider whose generate is wrapped


def start_recording(path: Path | str, *, written_by: str) -> Recorder:
    """Record every real model's answers into `path` from now on (appending: answers already
    in the file are kept, and a request already answered there is not written again)."""
    global RECORDER
    path = Path(path)
    recorder = Recorder(path, written_by)
    if path.exists():
        recorder.keys.update(load_recording(path).answers)
    RECORDER = recorder
    from compaction_eval.compaction.session import install

    install()  # the session's wrapper of Model.generate wraps each model's provider with note_answer
    return recorder


def stop_recording() -> None:
    global RECORDER
    RECORDER = None


def note_answer(model: str, input: Sequence[Any], tools: Sequence[Any], tool_choice: Any, output: Any) -> None:
    """Append a real model's answer to the recording, before the caller sees it (so the harness
    never acts on an answer that is not on disk). Stand-ins, recordings, errors and
    content-filter stops are not recorded; nor is an answer holding a credential's value."""
    from compaction_eval.contracts.credentials import credentials_in
    from compaction_eval.contracts.settings import is_stand_in

    recorder = RECORDER
    if recorder is None or is_stand_in(model) or model.startswith(PROVIDER):
        return
    if getattr(output, "error", None) or any(c.stop_reason == "content_filter" for c in getattr(output, "choices", [])):
        return
    key = request_key(canonical_request(input, tools, tool_choice))
    body = output.model_dump(mode="json", exclude_none=True)
    if key in recorder.keys or credentials_in(json.dumps(body).encode("utf-8")):
        return
    usage = output.usage.model_dump(exclude_none=True) if output.usage else None
    rec = answer_record(key, output.completion, model=model, written_by=recorder.written_by, usage=usage,
                        output=body, stop_reason=output.stop_reason)
    append_records(recorder.path, [rec])
    recorder.keys.add(key)


def install_recorder(model: Any) -> None:
    """Wrap `model`'s provider `generate` (once) with `note_answer`. The answer journal's
    wrapper notes the calls it serves itself (`compaction.cache.install_journal`), so each
    answer is noted once."""
    from compaction_eval.compaction.cache import journaled_call
    from compaction_eval.compaction.session import wrap_provider

    name = str(model)

    def wrap(provider_generate: Any) -> Any:
        async def recorded_generate(input: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
            result = await provider_generate(input=input, tools=tools, tool_choice=tool_choice, config=config)
            if not journaled_call():  # the journal's wrapper notes its own calls
                note_answer(name, input, tools, tool_choice, result[0] if isinstance(result, tuple) else result)
            return result

        return recorded_generate

    wrap_provider(model, _HOOKED, wrap)


def _register() -> None:
    from compaction_eval.contracts.runfiles import COMMIT_CHECKS

    if check_complete not in COMMIT_CHECKS:
        COMMIT_CHECKS.append(check_complete)


_register()
