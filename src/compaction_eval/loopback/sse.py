"""Server-sent events for a Messages API answer, in the order the `anthropic` SDK expects:
message_start, (content_block_start, content_block_delta*, content_block_stop)*,
message_delta, message_stop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

TEXT_CHUNK = 64  # characters per text delta: several deltas exercise the SDK's accumulation


def event(name: str, data: dict[str, Any]) -> bytes:
    """One event in the wire format."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode("utf-8")


def message_events(message: dict[str, Any]) -> Iterator[bytes]:
    """The events that stream `message` (a complete non-streaming Messages answer)."""
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}
    yield event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            text = block["text"]
            for i in range(0, len(text), TEXT_CHUNK):
                delta = {"type": "text_delta", "text": text[i : i + TEXT_CHUNK]}
                yield event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        elif block["type"] == "tool_use":
            head = {**block, "input": {}}
            yield event("content_block_start", {"type": "content_block_start", "index": index, "content_block": head})
            partial = json.dumps(block["input"], ensure_ascii=False)
            delta = {"type": "input_json_delta", "partial_json": partial}
            yield event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield event("message_stop", {"type": "message_stop"})


def error_event(kind: str, message: str) -> bytes:
    """A mid-stream error event (the API sends these for overload during a stream)."""
    return event("error", {"type": "error", "error": {"type": kind, "message": message}})
