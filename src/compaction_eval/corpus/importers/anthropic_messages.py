"""Anthropic Messages JSON, as sent to or logged from the API.

Accepted files: a request-like object {"system"?, "messages", "tools"?} (extra keys such as
`model` are ignored; `id`, `source` and `metadata` are kept) or a bare list of messages.
Messages pass through unchanged; the trace contract is already the Messages shape, so a
block it does not know (an image, a document) is reported with its place, not dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compaction_eval.corpus.importers.common import as_dict, fail, file_stem, finish, safe_id

NAME = "anthropic"


def detect(data: Any) -> bool:
    """True for a Messages request object or a bare list of user/assistant messages."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return "schema" not in data and _plain_roles(data["messages"])
    if isinstance(data, list) and data:
        return _plain_roles(data)
    return False


def _plain_roles(messages: list[Any]) -> bool:
    return bool(messages) and all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in messages)


def convert(data: Any, path: Path) -> list[dict[str, Any]]:
    """One trace from one file.

    Args:
        data: the parsed JSON of the file.
        path: the file (its stem is the trace id when the file has no `id`).
    """
    where = str(path)
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        fail(where, "$", "expected {system?, messages, tools?} or a list of messages")
    system = data.get("system", "")
    if isinstance(system, list):
        # The API also takes system as text blocks (with cache_control); trace@1 wants text.
        if not all(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in system):
            fail(where, "system", "system blocks must all be text blocks")
        system = "\n\n".join(b["text"] for b in system)
    elif system is None:
        system = ""
    source: dict[str, Any] = given if isinstance(given := data.get("source"), dict) else {"kind": NAME, "path": path.name}
    return [
        finish(
            trace_id=safe_id(data.get("id") or file_stem(path), where, "id"),
            source=source,
            system=system,
            tools=data.get("tools") or [],
            messages=data["messages"],
            metadata=as_dict(data.get("metadata")),
            where=where,
        )
    ]
