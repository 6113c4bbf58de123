"""Fact drill-down: marking evidence and distortions in summaries and source excerpts.

Everything here returns `markupsafe.Markup` built the safe way: spans are found in the raw
text, then every piece of text is escaped on its own and only our own `<mark>` tags are
added around escaped pieces. A mark can never start or end inside an escaped entity
(`&lt;`), and nothing from a trace or a summary is ever emitted unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from markupsafe import Markup, escape

# Summaries longer than this are cut for display (a real model ignoring its budget could
# write a novel; the page must stay light). The cut is said in the page.
MAX_SUMMARY_CHARS = 20_000
EXCERPT_RADIUS = 220
MAX_EXCERPT_CHARS = 700

_QUOTES = "'\"\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u2032"
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2212"


@dataclass(frozen=True)
class Mark:
    """Text to mark in a summary.

    Args:
        text: the text as the scorer reported it (evidence units, possibly joined by ` | `
            and cut with `...`; or a normalised distortion).
        kind: CSS class: "ev" (evidence of a kept fact) or "dist" (a distortion).
        label: what the mark means (shown on hover).
    """

    text: str
    kind: str
    label: str


def _flex_pattern(needle: str) -> re.Pattern[str] | None:
    """A case-insensitive pattern for `needle` that tolerates what normalisation changes:
    runs of whitespace, quote and dash styles, thousands separators."""
    needle = needle.strip()
    if not needle:
        return None
    parts: list[str] = []
    for ch in needle:
        if ch.isspace():
            if not parts or parts[-1] != r"\s+":
                parts.append(r"\s+")
        elif ch in _QUOTES:
            parts.append(f"[{re.escape(_QUOTES)}]")
        elif ch in _DASHES:
            parts.append(f"[{re.escape(_DASHES)}]")
        elif ch.isdigit():
            parts.append(re.escape(ch) + ",?")
        else:
            parts.append(re.escape(ch))
    return re.compile("".join(parts), re.IGNORECASE)


def evidence_pieces(evidence: str) -> list[str]:
    """The separate quotations in a scorer's evidence string (` | `-joined, `...`-cut)."""
    out = []
    for piece in evidence.split(" | "):
        piece = piece.strip()
        if piece.startswith("..."):
            piece = piece[3:]
        if piece.endswith("..."):
            piece = piece[:-3]
        piece = piece.strip()
        if len(piece) >= 2:
            out.append(piece)
    return out


def find_spans(text: str, needle: str) -> list[tuple[int, int]]:
    """Where `needle` occurs in `text`: exactly if it can, else tolerantly (all occurrences)."""
    spans = []
    start = text.find(needle)
    while start != -1 and needle:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    if spans:
        return spans
    pattern = _flex_pattern(needle)
    return [(m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start()] if pattern else []


def mark_text(text: str, spans: Iterable[tuple[int, int, str, str]]) -> Markup:
    """`text` escaped, with `<mark class=kind title=label>` around each (start, end, kind, label).

    Overlapping spans are split into segments carrying every kind and label that covers them.
    """
    spans = [s for s in spans if 0 <= s[0] < s[1] <= len(text)]
    if not spans:
        return escape(text)
    cuts = sorted({0, len(text), *(s[0] for s in spans), *(s[1] for s in spans)})
    out: list[str] = []
    for a, b in pairwise(cuts):
        piece = escape(text[a:b])
        covering = [s for s in spans if s[0] <= a and b <= s[1]]
        if not covering:
            out.append(piece)
            continue
        kinds = " ".join(sorted({s[2] for s in covering}))
        labels = "; ".join(dict.fromkeys(s[3] for s in covering))
        out.append(f'<mark class="{escape(kinds)}" title="{escape(labels)}">{piece}</mark>')
    return Markup("".join(out))


def highlight_summary(summary: str, marks: Sequence[Mark]) -> tuple[Markup, bool]:
    """The summary as safe HTML with evidence and distortions marked; and whether it was cut.

    Marks whose text cannot be found in the summary are skipped (the scorer's evidence of a
    heading is a normalised snippet that may not occur verbatim).
    """
    cut = len(summary) > MAX_SUMMARY_CHARS
    text = summary[:MAX_SUMMARY_CHARS] if cut else summary
    spans: list[tuple[int, int, str, str]] = []
    for mark in marks:
        pieces = evidence_pieces(mark.text) if mark.kind == "ev" else [mark.text]
        for piece in pieces:
            found = find_spans(text, piece)
            if mark.kind == "ev":
                found = found[:1]  # the unit the scorer quoted, not every repetition
            spans += [(a, b, mark.kind, mark.label) for a, b in found]
    return mark_text(text, spans), cut


def source_excerpt(message: str, keys: Sequence[str], *, radius: int = EXCERPT_RADIUS) -> Markup:
    """The part of a source message around the first key it contains, keys marked.

    Args:
        message: the flattened text of the message that established the fact.
        keys: the fact's literal anchors (may be empty).
        radius: characters kept on each side of the first key found.
    """
    first = None
    for key in keys:
        hits = find_spans(message, key)
        if hits and (first is None or hits[0][0] < first[0]):
            first = hits[0]
    if first is None:
        start, end = 0, min(len(message), 2 * radius)
    else:
        start, end = max(0, first[0] - radius), min(len(message), first[1] + radius)
        end = min(end, start + MAX_EXCERPT_CHARS)
    window = message[start:end]
    spans = [(a, b, "key", "key: " + key) for key in keys for a, b in find_spans(window, key)]
    body = mark_text(window, spans)
    return Markup("{}{}{}").format(Markup("…") if start > 0 else "", body, Markup("…") if end < len(message) else "")
