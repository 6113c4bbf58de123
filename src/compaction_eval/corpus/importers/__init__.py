"""Other agents' trace formats -> `compaction-eval/trace@1` dicts.

`FORMATS` maps a format name (what `compaction-eval import --from` takes) to its importer of
parsed JSON; `FILE_FORMATS` the formats whose importer reads the file itself (JSONL, text
logs, eval archives, and JSON documents detected by `convert_all` before `FORMATS`).
`detect_format` tells the JSON formats apart by shape; `convert_all` turns a file into traces
(an OpenAI-chat file may hold several samples); `convert` is the one-trace form.
Every returned dict passes `traces.validate_trace`; every failure is a ContractError
naming the file and the place in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.traces import read_json_file
from compaction_eval.corpus.importers import (
    aider_history,
    anthropic_messages,
    claude_code,
    codex_cli,
    crush,
    gemini_cli,
    inspect_log,
    mini_swe_agent,
    openai_chat,
    openhands_output,
    specstory,
)
from compaction_eval.corpus.importers.common import fail


@dataclass(frozen=True)
class Importer:
    """One source format.

    Args:
        name: the format name users pass.
        detect: True when parsed JSON has this format's shape.
        convert: (parsed JSON, source path) -> trace@1 dicts.
        description: one line for help texts.
    """

    name: str
    detect: Callable[[Any], bool]
    convert: Callable[[Any, Path], list[dict[str, Any]]]
    description: str


# Order matters for detection: most specific shape first (a mini-swe-agent file is also
# an OpenAI-like message list; a plain user/assistant list is also valid Anthropic).
FORMATS: dict[str, Importer] = {
    imp.name: imp
    for imp in (
        Importer(mini_swe_agent.NAME, mini_swe_agent.detect, mini_swe_agent.convert,
                 "mini-swe-agent trajectory (*.traj.json, trajectory_format mini-swe-agent-1)"),
        Importer(openai_chat.NAME, openai_chat.detect, openai_chat.convert,
                 "OpenAI chat messages with tool_calls / role tool (a sample, a list of samples, or messages)"),
        Importer(anthropic_messages.NAME, anthropic_messages.detect, anthropic_messages.convert,
                 "Anthropic Messages JSON ({system?, messages, tools?} or a list of messages)"),
    )
}
ALIASES = {"mini-swe-agent-1": mini_swe_agent.NAME, "openai": openai_chat.NAME, "anthropic-messages": anthropic_messages.NAME,
           "claude": claude_code.NAME, "inspect": inspect_log.NAME, "inspect-ai": inspect_log.NAME,
           "gemini": gemini_cli.NAME, "openhands": openhands_output.NAME, "aider": aider_history.NAME,
           "codex": codex_cli.NAME, "cursor": specstory.NAME}
# Formats that are not one JSON document: read from the file by their own importer.
FILE_FORMATS: dict[str, tuple[Callable[[Path], list[dict[str, Any]]], str]] = {
    claude_code.NAME: (claude_code.convert_file, "Claude Code session transcript (~/.claude/projects/<project>/<session>.jsonl)"),
    inspect_log.NAME: (inspect_log.convert_file, "inspect-ai eval log (.eval, or .json); one trace per sample"),
    gemini_cli.NAME: (gemini_cli.convert_file, "Gemini CLI chat session (~/.gemini/tmp/<project>/chats/session-*.json)"),
    openhands_output.NAME: (openhands_output.convert_file, "OpenHands evaluation output.jsonl (event history); one trace per line"),
    aider_history.NAME: (aider_history.convert_file, "aider LLM log (.aider.llm.history); one conversation rebuilt from every call"),
    codex_cli.NAME: (codex_cli.convert_file, "OpenAI Codex CLI rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)"),
    crush.NAME: (crush.convert_file, "Crush session store (.crush/crush.db, with crush.db-wal[.gz] beside it); one trace per session"),
    specstory.NAME: (specstory.convert_file, "SpecStory markdown export (.specstory/history/*.md: Cursor, Copilot, Claude Code chats)"),
}
ALL_FORMATS = (*FORMATS, *FILE_FORMATS)


def detect_format(data: Any) -> str | None:
    """The name of the first format whose shape `data` (parsed JSON) has, or None."""
    for name, importer in FORMATS.items():
        if importer.detect(data):
            return name
    return None


def resolve_format(fmt: str | None, data: Any, path: Path) -> str:
    """The importer name for `fmt` (or the detected one); ContractError naming the file otherwise."""
    known = ", ".join(ALL_FORMATS)
    if fmt is None:
        detected = detect_format(data)
        if detected is None:
            fail(str(path), "", f"cannot tell the trace format from its shape; name it (one of {known})")
        return detected
    name = ALIASES.get(fmt, fmt)
    if name not in FORMATS:
        fail(str(path), "", f"unknown trace format {fmt!r} (one of {known})")
    return name


def convert_all(path: Path | str, fmt: str | None = None) -> list[dict[str, Any]]:
    """Every trace in one source file, as trace@1 dicts.

    Args:
        path: the source file (`.json` or `.json.gz`).
        fmt: a name from ALL_FORMATS (or an alias); None detects it: `.jsonl` is an OpenHands
            evaluation output when its first record has an event `history`, a Codex CLI rollout when
            it is a `{type: session_meta|..., payload}` record, else a Claude Code
            transcript; `crush.db` (or any SQLite file) a Crush store, its `-wal(.gz)` an error
            naming the store; a `.md` with SpecStory's header a SpecStory export; `.eval` (or JSON with `eval` and `version`) an inspect log; a file
            starting with `TO LLM <time>` (or named `*.llm.history`) an aider log; a JSON
            object with `sessionId` and typed `messages` a Gemini CLI session; other JSON by
            its shape.
    """
    path = Path(path)
    name = ALIASES.get(fmt, fmt) if fmt else None
    if name is None:
        if path.suffix == ".jsonl":
            if codex_cli.sniff(path):
                name = codex_cli.NAME
            else:
                name = openhands_output.NAME if openhands_output.sniff(path) else claude_code.NAME
        elif path.suffix == ".eval":
            name = inspect_log.NAME
        elif crush.is_wal(path) or crush.looks_like_store(path):
            name = crush.NAME
        elif path.suffix == ".md" and specstory.looks_like_export(path):
            name = specstory.NAME
        elif not path.name.endswith((".json", ".json.gz")) and aider_history.looks_like_history(path):
            name = aider_history.NAME
    if name in FILE_FORMATS:
        return FILE_FORMATS[name][0](path)
    try:
        data = read_json_file(path)
    except ContractError:
        if name is None and not path.name.endswith((".json", ".json.gz")):
            fail(str(path), "", "not a trace file this tool reads: expected JSON (.json, .json.gz), JSONL (.jsonl), "
                                "an inspect log (.eval), an aider LLM log (TO LLM ...), a Crush store (crush.db) "
                                "or a SpecStory export (.md)")
        raise

    if name is None and inspect_log.is_log_json(data):
        return inspect_log.convert_file(path)
    if name is None and gemini_cli.detect(data):
        return gemini_cli.convert(data, path)
    return FORMATS[resolve_format(fmt, data, path)].convert(data, path)


def convert(path: Path | str, fmt: str | None = None, sample: int | None = None) -> dict[str, Any]:
    """The one trace in `path` (or its `sample`-th when the file holds several).

    Args:
        path: the source file.
        fmt: a name from FORMATS; None detects it.
        sample: which trace of a multi-sample file (0-based); required when there are several.
    """
    path = Path(path)
    traces = convert_all(path, fmt)
    if sample is None:
        if len(traces) != 1:
            fail(str(path), "", f"holds {len(traces)} traces: pick one with sample=, or use convert_all")
        return traces[0]
    if not 0 <= sample < len(traces):
        fail(str(path), "", f"sample {sample} out of range (the file holds {len(traces)} traces)")
    return traces[sample]


__all__ = ["ALL_FORMATS", "FILE_FORMATS", "FORMATS", "ALIASES", "Importer", "convert", "convert_all", "detect_format", "resolve_format"]
