"""mini-swe-agent trajectories (`trajectory_format: mini-swe-agent-1`, `*.traj.json`).

Shape: {"info": {"exit_status", "mini_version", ...}, "messages": [{"role", "content"}],
"instance_id", "trajectory_format"}. messages[0] is the system prompt, messages[1] the task,
then assistant turns (a THOUGHT and one ```bash``` block) alternating with user
observations. Bash blocks stay in the assistant text and observations stay user messages,
so trace message i is source message i + 1 (`metadata.index_offset`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compaction_eval.corpus.importers.common import as_dict, fail, file_stem, finish, safe_id

NAME = "mini-swe-agent"
ROLES = {"user", "assistant"}


def detect(data: Any) -> bool:
    """True for a mini-swe-agent trajectory object."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return False
    fmt = data.get("trajectory_format")
    if isinstance(fmt, str):
        return fmt.startswith("mini-swe-agent")
    info = data.get("info")
    return isinstance(info, dict) and "mini_version" in info


def convert(data: Any, path: Path) -> list[dict[str, Any]]:
    """One trace from one trajectory file.

    Args:
        data: the parsed JSON of the file.
        path: the file (its name goes into `source.path`; errors name it).
    """
    where = str(path)
    if not isinstance(data, dict):
        fail(where, "$", "a mini-swe-agent trajectory must be a JSON object")
    source_messages = data.get("messages")
    if not isinstance(source_messages, list) or not source_messages:
        fail(where, "messages", "missing or empty")

    offset = 0
    system = ""
    first = source_messages[0]
    if isinstance(first, dict) and first.get("role") == "system":
        system = _content(first, where, 0)
        offset = 1

    messages = []
    for i in range(offset, len(source_messages)):
        msg = source_messages[i]
        if not isinstance(msg, dict):
            fail(where, f"messages[{i}]", "a message must be an object")
        role = msg.get("role")
        if role not in ROLES:
            fail(where, f"messages[{i}].role", f"role {role!r} is not 'user' or 'assistant'")
        # Same-role neighbours (e.g. two observations) stay separate: labels count on
        # one trace message per source message.
        messages.append({"role": role, "content": _content(msg, where, i)})
    if not messages:
        fail(where, "messages", "no messages after the system prompt")

    info = as_dict(data.get("info"))
    instance_id = data.get("instance_id")
    trace_id = safe_id(instance_id or file_stem(path), where, "instance_id")
    metadata: dict[str, Any] = {
        "index_offset": offset,
        "instance_id": instance_id,
        "exit_status": info.get("exit_status"),
    }
    if "mini_version" in info:
        metadata["mini_version"] = info["mini_version"]
    if "trajectory_format" in data:
        metadata["trajectory_format"] = data["trajectory_format"]
    return [
        finish(
            trace_id=trace_id,
            source={"kind": NAME, "path": path.name, "license": "MIT"},
            system=system,
            tools=[],
            messages=messages,
            metadata=metadata,
            where=where,
        )
    ]


def _content(msg: dict[str, Any], where: str, i: int) -> str:
    content = msg.get("content")
    if not isinstance(content, str):
        fail(where, f"messages[{i}].content", f"expected a string, got {type(content).__name__}")
    return content
