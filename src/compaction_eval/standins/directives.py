"""Compaction prompt text -> what the extractive summariser should keep, drop and how to lay it out.

The prompt is read sentence by sentence. A sentence's natural-language cues name kinds of
fact ("exact error text" -> bug, "file paths" -> artifact, "numbers" -> number, ...); a
sentence with a discard cue ("discard", "omit", "leave out", ...) puts its kinds, and the
special targets "raw tool output", "redundant searches" and "superseded plans", in the
discard set, every other sentence puts its kinds in the preserve set. Headings ("## Numbers",
"3. Files and Code Sections:") ask for a sectioned summary; "Focus: ..." names words whose
units are favoured; "in a few short lines" caps how many units are kept; "nothing else"
keeps the summary to the kinds asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compaction_eval.standins.sentences import KINDS

# Cues per kind. Order inside a prompt sentence decides a section's main kind, so each
# pattern is searched separately and the first match position is kept.
_CUES: dict[str, re.Pattern[str]] = {
    "intent": re.compile(r"\b(?:requests?|intents?|goals?|objectives?|user messages|what the user asked)\b", re.I),
    "constraint": re.compile(
        r"\b(?:constraints?|requirements?|required|must not|must never|limits|formats?|rules?|restrictions?)\b", re.I
    ),
    "decision": re.compile(r"\b(?:decisions?|decided|choices|chosen|approach(?:es)?|trade-?offs?|rationale)\b", re.I),
    "bug": re.compile(
        r"\b(?:errors?|bugs?|failures?|failing|exceptions?|tracebacks?|error text|error messages?|stack traces?)\b", re.I
    ),
    "artifact": re.compile(
        r"\b(?:file ?paths?|paths?|files?|file ?names?|functions?|class(?:es)?|symbols?|identifiers?|ids?|"
        r"test names?|code sections?|signatures?|modules?|technical concepts|technolog\w*|frameworks?|names)\b",
        re.I,
    ),
    "number": re.compile(
        r"\b(?:numbers?|counts?|versions?|figures?|sizes?|measured|metrics?|amounts?|quantities|numeric\w*)\b", re.I
    ),
    "attempt": re.compile(
        r"\b(?:tried|attempts?|attempted|troubleshooting|problem solving|what failed|dead ends?|approaches that failed)\b",
        re.I,
    ),
    "next_step": re.compile(
        r"\b(?:next steps?|next action|next thing|pending|to-?dos?|remaining work|what remains|left to do)\b", re.I
    ),
    "state": re.compile(
        r"\b(?:progress|current work|current state|in progress|what is done|worked on|status|where (?:we|you) left off)\b",
        re.I,
    ),
}
assert set(_CUES) == set(KINDS)

_DISCARD = re.compile(
    r"\b(?:discard|drop|omit|do not include|don't include|leave out|exclude|skip|remove|strip|no need for)\b", re.I
)
# Targets that are not kinds of fact but shapes of noise a unit can have.
_SPECIAL = {
    "raw_output": re.compile(r"\b(?:raw (?:tool )?output|tool outputs?|command outputs?|raw logs?|verbatim output)\b", re.I),
    "searches": re.compile(r"\b(?:searches|search results|grep (?:hits|results)|listings?)\b", re.I),
    "superseded": re.compile(r"\b(?:superseded|obsolete|outdated|abandoned|stale)\b", re.I),
}
SPECIAL_DISCARDS = tuple(_SPECIAL)

_FEW = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a few": 5, "a couple of": 3, "several": 6}
_BREVITY = re.compile(
    r"\b(a few|a couple of|several|one|two|three|four|five|six|\d{1,2})\s+(?:short\s+|brief\s+)?"
    r"(?:lines|sentences|bullets|bullet points)\b",
    re.I,
)
_EXCLUSIVE = re.compile(r"\b(?:nothing else|no other (?:content|details|information|text))\b", re.I)
_FOCUS = re.compile(r"\bFocus:\s*(.+)", re.I)
_MD_HEADING = re.compile(r"^\s*(#{1,6})\s+(.+?)\s*#*\s*$")
_NUMBERED_HEADING = re.compile(r"^\s*(\d{1,2})\.\s+([A-Z][^:\n]{1,60}):(.*)$")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_STEM_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,}")
_FOCUS_STOP = {
    "keep", "focus", "only", "with", "that", "this", "from", "into", "about", "what", "which", "their", "them",
    "they", "were", "have", "been", "exact", "every", "each", "most", "tokens", "within", "stay", "output",
    "summary", "make", "sure", "especially", "preserve", "include", "when", "where", "there", "those", "these",
}


@dataclass(frozen=True)
class Section:
    """A section the prompt asks for.

    Args:
        title: its name in the prompt ("Files, symbols and IDs").
        heading: the line that opens it in the summary ("## Files, symbols and IDs").
        kinds: the kinds it collects, its main kind first.
    """

    title: str
    heading: str
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Directives:
    """What a compaction prompt asks for.

    Args:
        preserve: kinds asked for, in the order the prompt first names them (all kinds when
            the prompt names none).
        discard: kinds and special targets (`SPECIAL_DISCARDS`) to leave out.
        sections: the sections asked for, in prompt order (empty: plain bullet lines).
        focus: stems of the focus line's words (units sharing them are favoured).
        max_units: at most this many units ("in a few short lines"), or None.
        exclusive: keep only kinds asked for ("nothing else").
    """

    preserve: tuple[str, ...]
    discard: frozenset[str]
    sections: tuple[Section, ...]
    focus: frozenset[str]
    max_units: int | None
    exclusive: bool


def cue_kinds(text: str) -> list[str]:
    """Kinds named by `text`, ordered by where each is first named."""
    found = [(m.start(), kind) for kind, pattern in _CUES.items() if (m := pattern.search(text))]
    return [kind for _, kind in sorted(found)]


def stems(text: str) -> set[str]:
    """Five-letter stems of the content words of `text` ("repro" matches "reproduce_issue")."""
    return {w.lower()[:5] for w in _STEM_WORD.findall(text) if w.lower() not in _FOCUS_STOP}


def parse_directives(instruction: str) -> Directives:
    """Read a compaction prompt (see module docstring)."""
    preserve: list[str] = []
    discard: set[str] = set()
    for line in instruction.split("\n"):
        for sentence in _SENTENCE.split(line):
            kinds = cue_kinds(sentence)
            if _DISCARD.search(sentence):
                discard.update(kinds)
                discard.update(name for name, pattern in _SPECIAL.items() if pattern.search(sentence))
            else:
                preserve += [k for k in kinds if k not in preserve]
    if not preserve:
        preserve = list(KINDS)
    # A prompt that says "keep the errors" and, elsewhere, "drop errors you fixed" still
    # wants errors: what is asked for wins over what is discarded.
    discard -= set(preserve)

    brevity = _BREVITY.search(instruction)
    max_units = None
    if brevity:
        count = brevity.group(1).lower()
        max_units = int(count) if count.isdigit() else _FEW[count]
    focus = _FOCUS.search(instruction)
    return Directives(
        preserve=tuple(preserve),
        discard=frozenset(discard),
        sections=parse_sections(instruction),
        focus=frozenset(stems(focus.group(1))) if focus else frozenset(),
        max_units=max_units,
        exclusive=bool(_EXCLUSIVE.search(instruction)),
    )


def parse_sections(instruction: str) -> tuple[Section, ...]:
    """The sections a prompt asks for: markdown headings or "N. Title:" lines (two or more)."""
    lines = instruction.split("\n")
    found: list[tuple[str, str, list[str]]] = []  # (title, heading, description lines)
    current: list[str] | None = None
    for line in lines:
        md = _MD_HEADING.match(line)
        numbered = _NUMBERED_HEADING.match(line) if not md else None
        if numbered and len(numbered.group(2).split()) > 7:
            numbered = None  # a numbered instruction, not a section title
        if md or numbered:
            if md:
                title = md.group(2).strip().rstrip(":")
                heading, rest = f"{md.group(1)} {title}", ""
            else:
                assert numbered is not None
                title = numbered.group(2).strip()
                heading, rest = f"{numbered.group(1)}. {title}:", numbered.group(3)
            if any(t.lower() == title.lower() for t, _, _ in found):
                current = None  # the same section again (an example of the layout)
                continue
            current = [rest]
            found.append((title, heading, current))
        elif current is not None:
            if not line.strip():
                current = None
            else:
                current.append(line)
    if len(found) < 2:
        return ()
    sections = []
    for title, heading, description in found:
        kinds = cue_kinds(title)
        kinds += [k for k in cue_kinds(" ".join(description)) if k not in kinds]
        sections.append(Section(title, heading, tuple(kinds)))
    return tuple(sections)
