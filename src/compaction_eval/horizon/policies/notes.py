"""The notes (memory) tool of `full`: notes survive compaction and ride with the anchor."""

from __future__ import annotations

from dataclasses import dataclass, field

from inspect_ai.tool import ToolInfo, ToolParams
from inspect_ai.util import JSONSchema

NOTES_TOOL = ToolInfo(
    name="notes",
    description=(
        "Save a note: evidence, decisions, progress. Notes are kept when the context is compacted "
        "and shown again next to the original request."
    ),
    parameters=ToolParams(properties={"text": JSONSchema(type="string", description="the note")}, required=["text"]),
)


@dataclass
class NotesBook:
    """The notes of one sample, in the order written."""

    notes: list[str] = field(default_factory=list)

    def add(self, text: str) -> str:
        """Store a note; returns the tool result shown to the agent."""
        self.notes.append(text.strip())
        return f"Saved note {len(self.notes)}."

    def render(self) -> str:
        if not self.notes:
            return ""
        return "[Your notes, kept across compaction]\n" + "\n\n".join(self.notes)
