"""The trace contract (`compaction-eval/trace@1`): load, validate, flatten to text.

A trace is one recorded agent conversation in Anthropic Messages shape. Labels refer to
messages by their 0-based index in `messages`.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from compaction_eval.contracts.credentials import credentials_in, scrub_data
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.tokens import count_many

SCHEMA = "compaction-eval/trace@1"
BLOCK_TYPES = {"text", "tool_use", "tool_result", "thinking"}
ROLES = {"user", "assistant"}


@dataclass
class Trace:
    """A validated trace.

    Args:
        id: the trace id (labels name it in `trace:`).
        messages: Anthropic-shaped messages, as in the file.
        system: the system prompt, possibly empty.
        tools: tool definitions, possibly empty.
        source: where the trace came from (kind, path, license).
        metadata: free-form.
        path: the file it was loaded from, if any.
    """

    id: str
    messages: list[dict[str, Any]]
    system: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @cached_property
    def texts(self) -> list[str]:
        """The flattened text of each message (see `message_text`)."""
        return [message_text(m) for m in self.messages]

    @cached_property
    def token_counts(self) -> list[int]:
        """Tokens per message, counted once."""
        return count_many(self.texts)

    @cached_property
    def _folded_prefixes(self) -> list[str]:
        return [fold(t) for t in self.texts]

    def folded_text_upto(self, at: int) -> str:
        """Case- and whitespace-folded text of `system` and messages[0:at]."""
        return "\n".join([fold(self.system), *self._folded_prefixes[:at]])

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "id": self.id,
            "source": self.source,
            "system": self.system,
            "tools": self.tools,
            "messages": self.messages,
            "metadata": self.metadata,
        }


_WS = re.compile(r"\s+")


def fold(text: str) -> str:
    """Lower-case and collapse whitespace: the form keys are looked up in."""
    return _WS.sub(" ", text).strip().lower()


def block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "tool_use":
        args = block.get("input", {})
        return f"[tool call {block.get('name', '')}] " + (
            json.dumps(args, ensure_ascii=False) if not isinstance(args, str) else args
        )
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            content = "\n".join(block_text(b) for b in content if isinstance(b, dict))
        return str(content)
    return ""


def message_text(message: dict[str, Any]) -> str:
    """All the text a reader of this message sees: text, thinking, tool calls and results.

    Tool-call arguments are included as JSON so that a path passed to a tool counts as
    present in the conversation.
    """
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(block_text(b) for b in content if isinstance(b, dict))


# A trace file is at most this large once decompressed: the largest real trace is a few MB,
# and a gzip bomb (1 MB inflating to 1 GiB) must be refused before it is held in memory.
MAX_TRACE_BYTES = 256 * 1024 * 1024
_BAD_CONSTANT = re.compile(r"[:\[,]\s*(-?Infinity|NaN)\b")


def read_trace_bytes(path: Path) -> bytes:
    """The bytes of a `.json` or `.json.gz` file, at most MAX_TRACE_BYTES once decompressed."""
    where = str(path)
    limit = MAX_TRACE_BYTES
    too_big = Problem(where, "", f"larger than {limit // (1024 * 1024)} MiB once decompressed: refused (a trace is a few MB)")
    try:
        if path.is_dir():
            raise ContractError([Problem(where, "", "is a directory, not a trace file")])
        if path.name.endswith(".gz"):
            # in chunks: one read(limit + 1) reserves a 256 MiB buffer for every trace read
            chunks: list[bytes] = []
            size = 0
            with gzip.open(path, "rb") as fh:
                while size <= limit and (chunk := fh.read(1 << 20)):
                    chunks.append(chunk)
                    size += len(chunk)
            raw = b"".join(chunks)
        else:
            if path.stat().st_size > limit:
                raise ContractError([too_big])
            raw = path.read_bytes()
    except FileNotFoundError:
        raise ContractError([Problem(where, "", "file not found")]) from None
    except (OSError, EOFError, zlib.error) as exc:
        raise ContractError([Problem(where, "", f"cannot read: {exc}")]) from None
    if len(raw) > limit:
        raise ContractError([too_big])
    return raw


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteNumber(name)


class _NonFiniteNumber(ValueError):
    pass


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict; a key given twice is refused (json keeps the last one
    silently, so two readers of the same file could disagree on what it says)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def strict_loads(text: str) -> Any:
    """`json.loads`, refusing NaN/Infinity, a key given twice in one object, an integer past
    Python's conversion limit (4300 digits) and nesting past the parser's depth, each as a
    `json.JSONDecodeError` with its position: every reader's own located handling of malformed
    JSON (a JSONL line, a SQLite column, an hf: row) then applies to them too."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError:
        raise
    except _NonFiniteNumber as exc:
        match = _BAD_CONSTANT.search(text)
        raise json.JSONDecodeError(f"{exc} is not a JSON number (NaN and Infinity are not allowed)", text, match.start(1) if match else 0) from None
    except _DuplicateKey as exc:
        key = str(exc)
        found = [m.start() for m in re.finditer(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:", text)]
        raise json.JSONDecodeError(f"duplicate key {key[:60]!r} in one object (which value counts is ambiguous)", text,
                                   found[1] if len(found) > 1 else 0) from None
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", text, 0) from None
    except ValueError:  # an integer past Python's conversion limit
        match = re.search(r"\d{4301,}", text)
        raise json.JSONDecodeError("an integer with more than 4300 digits", text, match.start() if match else 0) from None
    lone = _lone_surrogate(text)
    if lone is not None:  # not text: writing it anywhere (results, report) would fail later, unlocated
        raise json.JSONDecodeError("a lone UTF-16 surrogate escape (\\ud800-\\udfff) is not text", text, lone)
    return data


_ESCAPE = re.compile(r"\\(?:\\|u[dD][89a-fA-F][0-9a-fA-F]{2})")


def _lone_surrogate(text: str) -> int | None:
    r"""Where `text` has a `\uD800`-`\uDFFF` escape that is not half of a pair, else None
    (escaped backslashes are skipped, so `\\ud800` is the text it says)."""
    if "\\ud" not in text and "\\uD" not in text:
        return None
    pending = None  # position of a high surrogate awaiting its low half
    for m in _ESCAPE.finditer(text):
        if m.group(0) == "\\\\":
            continue
        high = m.group(0)[3].lower() in "89ab"
        if pending is not None and (high or m.start() != pending + 6):
            return pending
        if high:
            pending = m.start()
        elif pending is None:
            return m.start()
        else:
            pending = None
    return pending


def parse_json_text(text: str, where: str) -> Any:
    """Strict JSON from `text` (see `strict_loads` for what is refused); every failure is a
    ContractError naming `where`, the line and the column."""
    try:
        return strict_loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("nested"):
            raise ContractError([Problem(where, "", f"JSON {exc.msg}")]) from None
        message = exc.msg if exc.msg.startswith(("duplicate key", "an integer", "a lone")) or "not a JSON number" in exc.msg else f"malformed JSON: {exc.msg}"
        raise ContractError([Problem(where, f"line {exc.lineno} column {exc.colno}", message)]) from None


def read_json_file(path: Path) -> Any:
    """Parse a `.json` or `.json.gz` file; a parse error becomes a ContractError with line.

    The values of the environment's credentials are replaced as the text is read
    (`contracts.credentials`): a trace that holds the user's own API key must not carry it
    into requests, inspect's log or anything a run writes."""
    where = str(path)
    raw = read_trace_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError([Problem(where, f"byte {exc.start}", "not UTF-8")]) from None
    data = parse_json_text(text, where)
    return scrub_data(data) if credentials_in(text) else data  # the scan of the text is the cheap test


def validate_trace(data: Any, where: str) -> list[Problem]:
    """Every way `data` breaks the trace contract (empty when it is valid)."""
    problems: list[Problem] = []

    def bad(place: str, message: str) -> None:
        problems.append(Problem(where, place, message))

    if not isinstance(data, dict):
        return [Problem(where, "$", "a trace must be a JSON object")]
    if data.get("schema") != SCHEMA:
        bad("schema", f"unknown schema {data.get('schema')!r} (expected {SCHEMA!r})")
    if not isinstance(data.get("id"), str) or not data.get("id"):
        bad("id", "missing or not a non-empty string")
    if not isinstance(data.get("system", ""), str):
        bad("system", "must be a string")
    tools = data.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, dict) and "name" in t for t in tools):
        bad("tools", "must be a list of objects with a name")
    for key in ("source", "metadata"):
        if not isinstance(data.get(key, {}), dict):
            bad(key, "must be an object")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        bad("messages", "missing or empty")
        return problems

    pending: dict[str, str] = {}  # tool_use id -> place, awaiting a result in the next message
    seen_ids: set[str] = set()
    for i, msg in enumerate(messages):
        here = f"messages[{i}]"
        if not isinstance(msg, dict):
            bad(here, "a message must be an object")
            continue
        role = msg.get("role")
        if role not in ROLES:
            bad(f"{here}.role", f"role {role!r} is not 'user' or 'assistant'")
        content = msg.get("content")
        results_here: set[object] = set()  # tool_use_id values as found (checked against `pending`)
        if isinstance(content, list):
            for j, block in enumerate(content):
                bplace = f"{here}.content[{j}]"
                if not isinstance(block, dict):
                    bad(bplace, "a content block must be an object")
                    continue
                kind = block.get("type")
                if kind not in BLOCK_TYPES:
                    bad(f"{bplace}.type", f"unknown block type {kind!r}")
                elif kind == "text" and not isinstance(block.get("text"), str):
                    bad(f"{bplace}.text", "text block without a string 'text'")
                elif kind == "tool_use":
                    if role != "assistant":
                        bad(bplace, "tool_use block in a user message")
                    tid = block.get("id")
                    if not isinstance(tid, str) or not tid:
                        bad(f"{bplace}.id", "tool_use without an id")
                    elif tid in seen_ids:
                        bad(f"{bplace}.id", f"duplicate tool_use id {tid!r}")
                    else:
                        seen_ids.add(tid)
                        pending[tid] = bplace
                    if not isinstance(block.get("name"), str):
                        bad(f"{bplace}.name", "tool_use without a name")
                elif kind == "tool_result":
                    if role != "user":
                        bad(bplace, "tool_result block in an assistant message")
                    tid = block.get("tool_use_id")
                    if tid in results_here:
                        bad(f"{bplace}.tool_use_id", f"second tool_result for {tid!r}")
                    elif tid not in pending or not _from_previous(pending[tid], i):
                        bad(
                            f"{bplace}.tool_use_id",
                            f"tool_result for {tid!r} answers no tool_use in messages[{i - 1}]",
                        )
                    results_here.add(tid)
        elif not isinstance(content, str):
            bad(f"{here}.content", "content must be a string or a list of blocks")
        # every tool_use of the previous message must be answered here
        for tid, place in list(pending.items()):
            if _from_previous(place, i):
                if tid not in results_here:
                    bad(place, f"tool_use {tid!r} has no tool_result in messages[{i}]")
                del pending[tid]
    for tid, place in pending.items():
        bad(place, f"tool_use {tid!r} has no tool_result (it is the last message)")
    return problems


def _from_previous(place: str, i: int) -> bool:
    return place.startswith(f"messages[{i - 1}]")


def trace_from_json(data: dict[str, Any], path: Path | None = None) -> Trace:
    """A Trace from already-validated JSON."""
    return Trace(
        id=data["id"],
        messages=data["messages"],
        system=data.get("system", ""),
        tools=data.get("tools", []),
        source=data.get("source", {}),
        metadata=data.get("metadata", {}),
        path=path,
    )


def load_trace(path: Path | str) -> Trace:
    """Load and validate one trace file; raises ContractError naming file and place."""
    path = Path(path)
    data = read_json_file(path)
    problems = validate_trace(data, str(path))
    if problems:
        raise ContractError(problems)
    return trace_from_json(data, path)


def is_trace_file(path: Path) -> bool:
    return path.name.endswith(".json") or path.name.endswith(".json.gz")


def trace_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and is_trace_file(p))


def source_of(trace: "Trace") -> str:
    """The source a trace came from: the first part of `source.corpus` (`openhands/sweplay` is
    `openhands`, the folder of fixtures/real), else `source.kind` (`synthetic`, or the
    importer's format for a file converted in memory), else `unknown`."""
    name = trace.source.get("corpus") or trace.source.get("kind") or "unknown"
    return str(name).split("/")[0]
