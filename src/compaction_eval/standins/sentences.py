"""Conversation segments -> candidate units, each with its kinds and a score.

A unit is what the extractive summariser may copy into a summary: a sentence of user or
assistant prose, a command the agent ran, or one *distinctive* line of tool output (an
exception, a FAILED test, a traceback frame, a test-run tally). Other tool-output lines are
kept only a few per result, marked `raw`, so that a prompt can discard them.

Kinds (a unit can have several): intent, constraint, decision, bug, artifact, number,
attempt, next_step, and state (assistant prose from the last turns, "where we are").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from compaction_eval.compaction.transcript import Segment
from compaction_eval.contracts.tokens import count_many, count_tokens, truncate_tokens

KINDS = ("intent", "constraint", "decision", "bug", "artifact", "number", "attempt", "next_step", "state")


@dataclass(frozen=True)
class Unit:
    """One candidate line of a summary.

    Args:
        position: order in the conversation (0-based over all units, after dedupe).
        segment: index of the segment it came from.
        role: that segment's role ("user", "assistant", "system", "tool_call", "tool_result").
        text: the line as it would be written (one line, possibly cut).
        kinds: what it is evidence of (see `KINDS`).
        anchors: literal identifiers, numbers and error names it carries.
        score: how much it says per token; only compared between units.
        tokens: tokens of `text`.
        raw: a non-distinctive line of tool or code output.
        search: a search or listing command (grep, find, ls, cat, sed, ...).
        stale_plan: a plan the agent stated before later turns moved on.
        cut: `text` was shortened to fit the per-unit limit.
    """

    position: int
    segment: int
    role: str
    text: str
    kinds: frozenset[str]
    anchors: frozenset[str]
    score: float = 0.0
    tokens: int = 0
    raw: bool = False
    search: bool = False
    stale_plan: bool = False
    cut: bool = False


# --- what makes a line an error, an identifier, a number ------------------------------------

_EXCEPTION = re.compile(
    r"(?<![\w.])(?:[a-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Failure|Exit|Interrupt|NotFound|DoesNotExist)\b"
)
_EXCEPTION_LINE = re.compile(r"^(?:E\s+)?(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Failure|Exit|Interrupt|NotFound|DoesNotExist)\b(?::|$)")
_BUG_LINE = re.compile(
    r"^(?:FAILED\b|FAIL:|ERROR\b|ERROR:|E\s{2,}\S|fatal:|panic:|npm ERR!|Segmentation fault|AssertionError)"
    r"|\b(?:error|Error|ERROR)(?:\[\w+\])?:\s"
)
_BUG_WORDS = re.compile(r"\b(?:raise[sd]?|raising|throws?|thrown|error|exception|traceback|crash\w*|fail\w*)\b|\w(?:Error|Exception):", re.I)
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_TALLY = re.compile(
    r"\b\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected)\b"
    r"|^Ran \d+ tests? in [\d.]+s|^FAILED \((?:failures|errors)=\d+|^OK \((?:skipped|expected)"
)

_PATH = re.compile(r"(?<![\w@/.-])(?:\.{1,2}/|/)?(?:[\w.-]+/)+[\w.-]*\w")
_FILE = re.compile(
    r"(?<![\w/.-])[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|json|ya?ml|toml|md|rst|txt|cfg|ini|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|html|css|scss|sh|sql|lock|xml|csv|ipynb|j2)\b"
)
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_DOTTED = re.compile(r"(?<![\w./-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?")
_CALL = re.compile(r"(?<![\w])\.?[A-Za-z_]\w*\(\)")
_SNAKE = re.compile(r"(?<![\w])_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL = re.compile(r"(?<![\w])[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_ID = re.compile(
    r"(?<![\w-])[A-Za-z]+-\d+\b|\bPR ?#\d+\b|(?<![\w&])#\d+\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b|\S+::\w+"
)
_NOT_DOTTED = {"e.g", "i.e", "a.k.a", "etc", "vs"}

_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*\b")
_MEASURE = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:%|ms|s|secs?|seconds?|minutes?|mins?|hours?|days?|[KMGT]i?B|kB|bytes|tokens|lines?|files?|tests?|"
    r"passed|failed|errors?|warnings?|items?|rows?|records?|calls?|queries|times|x|px|processes|workers|chars|characters)\b"
)
_LINE_NO = re.compile(r"\blines? \d+(?:\s?[-–]\s?\d+)?")
_BARE_NUMBER = re.compile(r"(?<![\w.#/-])\d{2,}(?:\.\d+)?(?![\w/-])")

# --- cue words of each kind -------------------------------------------------------------------

_CONSTRAINT_USER = re.compile(
    r"\b(?:must|never|do not|don't|should not|shouldn't|only|required|requirements?|requires?|mandatory|"
    r"not allowed|forbidden|exactly|at most|at least|formats?|always)\b",
    re.I,
)
_CONSTRAINT_ANY = re.compile(
    r"\b(?:must not|never|do not (?:modify|change|edit|touch|delete|remove)|don't (?:modify|change|edit|touch)|"
    r"required format|not allowed|is forbidden)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:I'll|I will|we'll|we will|I'm going to|I am going to|decided?|decision|instead of|rather than|because|"
    r"so that|chose|choose|opted|the fix is|the plan is|my approach|approach is|I can optimi[sz]e|the solution is)\b",
    re.I,
)
_ATTEMPT = re.compile(
    r"\b(?:tried|trying|attempt(?:s|ed|ing)?|didn't work|did not work|doesn't work|does not work|failed|fails|"
    r"still fail(?:s|ing)?|reverted?|reverting|no luck|turned out|broke|broken|didn't|did not|mistake|wrong)\b",
    re.I,
)
_NEXT = re.compile(
    r"\b(?:next|then I will|then I'll|remaining|todo|to-do|still need|need to|now I (?:will|should|need|must|can)|"
    r"let's|let me|I will now|I should)\b",
    re.I,
)
_INTENT = re.compile(
    r"\b(?:your task|please|can you|could you|I want|I'd like|we want|we need|the goal|goal is|make changes|implement|"
    r"fix|optimi[sz]e|add support|should be able)\b",
    re.I,
)
_SEARCH_COMMANDS = {"grep", "rg", "ag", "find", "ls", "cat", "nl", "sed", "head", "tail", "tree", "wc", "less", "awk", "locate"}

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[*_])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)]\s+|#{1,6}\s+|>\s*)")
_TAG_ONLY = re.compile(r"^\s*(?:</?[\w-]+>\s*)+$")
_THOUGHT = re.compile(r"^\s*THOUGHT:\s*")
_FENCE = re.compile(r"^\s*```\s*([\w+-]*)")
_WORD = re.compile(r"[A-Za-z]{2,}")
_NORMALISE_PREFIX = re.compile(r"^(?:\d+[:\t-]\s*)+")
_WS = re.compile(r"\s+")


def anchors_of(text: str) -> set[str]:
    """The literal identifiers, numbers and error names in `text`."""
    found: set[str] = set()
    for path in _PATH.findall(text):
        last = path.rsplit("/", 1)[-1]
        if path.count("/") >= 2 or ("." in last and re.search(r"\.[A-Za-z]", last)):
            found.add(path)
    found.update(m.group(0) for m in _FILE.finditer(text))
    for name in _BACKTICK.findall(text):
        found.add(name.strip())
    for name in _DOTTED.findall(text):
        if name.lower().rstrip("()") not in _NOT_DOTTED and max(len(p) for p in name.split(".")) >= 3:
            found.add(name)
    found.update(_CALL.findall(text))
    found.update(_SNAKE.findall(text))
    found.update(_CAMEL.findall(text))
    found.update(_ID.findall(text))
    found.update(_EXCEPTION.findall(text))
    return found


def numbers_of(text: str) -> set[str]:
    """Versions, measured figures, line numbers and multi-digit numbers in `text`."""
    found = set(_VERSION.findall(text)) | set(_MEASURE.findall(text)) | set(_LINE_NO.findall(text))
    found.update(_BARE_NUMBER.findall(text))
    return found


def classify(text: str, role: str, *, first_request: bool = False) -> set[str]:
    """The kinds of one unit of text said by `role` (see `KINDS`; `state` is set elsewhere).

    Args:
        text: the unit.
        role: the segment's role; prose cues count differently for users and assistants.
        first_request: the unit opens the first user message (the request).
    """
    return _describe(text, role, first_request)[0]


def _describe(text: str, role: str, first_request: bool = False) -> tuple[set[str], set[str]]:
    # Kinds and anchors together: the anchors decide two of the kinds and the score.
    kinds: set[str] = set()
    anchors = anchors_of(text)
    numbers = numbers_of(text)
    errors = set(_EXCEPTION.findall(text))
    prose = role in ("user", "assistant", "system")
    if _BUG_LINE.search(text) or _FRAME.match(text) or _EXCEPTION_LINE.match(text):
        kinds.add("bug")
    elif prose and errors and _BUG_WORDS.search(text):
        # A class named FooError is not a bug report; "raises FooError" is.
        kinds.add("bug")
    if anchors - errors:
        kinds.add("artifact")
    if numbers or (not prose and _TALLY.search(text)):
        kinds.add("number")
    if prose:
        if first_request or (role == "user" and _INTENT.search(text)):
            kinds.add("intent")
        if _CONSTRAINT_ANY.search(text) or (role in ("user", "system") and _CONSTRAINT_USER.search(text)):
            kinds.add("constraint")
        if _DECISION.search(text):
            kinds.add("decision")
        if _ATTEMPT.search(text):
            kinds.add("attempt")
        if _NEXT.search(text):
            kinds.add("next_step")
    return kinds, anchors | numbers


# --- splitting ----------------------------------------------------------------------------------


@dataclass
class _Draft:
    segment: int
    role: str
    text: str
    kinds: set[str]
    anchors: set[str]
    bonus: float = 0.0
    raw: bool = False
    search: bool = False


def _draft(
    seg: Segment,
    text: str,
    *,
    role: str | None = None,
    extra: frozenset[str] | set[str] = frozenset(),
    first: bool = False,
    bonus: float = 0.0,
    raw: bool = False,
    search: bool = False,
) -> _Draft:
    """A unit of `seg` with its kinds (plus `extra`), anchors and flags."""
    role = role or seg.role
    kinds, anchors = _describe(text, role, first)
    return _Draft(seg.index, role, text, kinds | set(extra), anchors, bonus=bonus, raw=raw, search=search)


def _prose_units(seg: Segment, first_request: bool, raw_lines: int) -> list[_Draft]:
    drafts: list[_Draft] = []
    fence: str | None = None  # language of the open code fence, if any
    code: list[str] = []
    traceback: list[str] | None = None  # a traceback pasted into prose, being collected
    intents = 0
    for line in seg.text.split("\n"):
        if traceback is not None:
            traceback.append(line)
            if line.strip() and not line[:1].isspace() and not _FRAME.match(line):
                drafts += _output_units(Segment(seg.index, seg.role, "\n".join(traceback)), 0)
                traceback = None
            continue
        opened = _FENCE.match(line)
        if opened:
            if fence is None:
                fence, code = opened.group(1).lower(), []
            else:
                drafts += _code_units(seg, fence, code, raw_lines)
                fence = None
            continue
        if fence is not None:
            code.append(line)
            continue
        if _TRACEBACK.match(line):
            traceback = [line]
            continue
        line = _THOUGHT.sub("", line)
        if _TAG_ONLY.match(line) or not line.strip():
            continue
        body = _LIST_MARK.sub("", line).strip()
        for sentence in _SENTENCE_BREAK.split(body):
            sentence = sentence.strip()
            if not _worth_keeping(sentence):
                continue
            opening = first_request and intents < 6
            # The request's first sentences state it; a lead-in ("as follows:") says nothing.
            bonus = 0.8 - 0.1 * intents if opening else 0.0
            if sentence.endswith(":"):
                bonus -= 0.5
            elif sentence.endswith("?"):
                bonus -= 0.4  # a question states no fact
            intents += opening
            # Code pasted into prose (a quoted source line) is output, not something said.
            drafts.append(_draft(seg, sentence, first=opening, bonus=bonus, raw=_looks_like_code(sentence)))
    if fence is not None:  # an unclosed fence: its lines are still code
        drafts += _code_units(seg, fence, code, raw_lines)
    if traceback is not None:
        drafts += _output_units(Segment(seg.index, seg.role, "\n".join(traceback)), 0)
    return drafts


_CODE_PUNCTUATION = re.compile(r"[(){}\[\]=]|^\w+\.\w+")
_PLAIN_WORD = re.compile(r"(?<![\w.`])[A-Za-z]{3,}(?![\w.(`])")


def _looks_like_code(sentence: str) -> bool:
    return bool(_CODE_PUNCTUATION.search(sentence)) and len(_PLAIN_WORD.findall(sentence)) < 3 and not sentence.endswith(".")


def _worth_keeping(sentence: str) -> bool:
    words = _WORD.findall(sentence)
    return len(words) >= 3 or (len(words) >= 1 and bool(anchors_of(sentence)))


def _code_units(seg: Segment, language: str, lines: list[str], raw_lines: int) -> list[_Draft]:
    if language in ("bash", "sh", "shell", "console", "zsh"):
        unit = _command_unit(seg, "\n".join(lines))
        return [unit] if unit else []
    return _output_units(Segment(seg.index, seg.role, "\n".join(lines)), raw_lines)


def _command_unit(seg: Segment, command: str) -> _Draft | None:
    # The first line that is not a comment says what was run; a heredoc's body is not.
    first = next((l.strip() for l in command.split("\n") if l.strip() and not l.lstrip().startswith("#")), "")
    if not first:
        return None
    program = first.split(" ", 1)[0].rsplit("/", 1)[-1]
    return _draft(seg, f"ran `{first}`", role="tool_call", search=program in _SEARCH_COMMANDS)


_FRAMES_PER_TRACEBACK = 3


def _output_units(seg: Segment, raw_lines: int) -> list[_Draft]:
    """Distinctive lines of tool output, plus at most `raw_lines` other lines naming something."""
    drafts: list[_Draft] = []
    raw_left = raw_lines
    frames: list[_Draft] | None = None  # frames of the traceback being read

    def end_traceback() -> None:
        nonlocal frames
        if frames:
            # The innermost frames say where it broke; the outer ones are the call path.
            frames[-1].bonus += 0.3
            drafts.extend(frames[-_FRAMES_PER_TRACEBACK:])
        frames = None

    for line in seg.text.split("\n"):
        stripped = line.strip()
        if not stripped or _TAG_ONLY.match(stripped) or stripped.startswith("<returncode>"):
            continue
        if _TRACEBACK.match(stripped):
            end_traceback()
            frames = []
            continue
        if _FRAME.match(stripped):
            # Frames carry many anchors but say less than the exception they lead to.
            frame = _draft(seg, stripped, extra={"bug", "artifact", "number"}, bonus=-0.6)
            if frames is None:
                drafts.append(frame)
            else:
                frames.append(frame)
            continue
        if frames is not None:
            if line[:1].isspace():
                continue  # the source line quoted under a frame
            # The first unindented line after the frames is the exception, whatever its type.
            end_traceback()
            drafts.append(_draft(seg, stripped, extra={"bug"}, bonus=1.2))
            continue
        if _EXCEPTION_LINE.match(stripped) or _BUG_LINE.search(stripped):
            drafts.append(_draft(seg, stripped, extra={"bug"}, bonus=1.0))
            continue
        if _TALLY.search(stripped):
            failing = re.search(r"\b[1-9]\d* (?:failed|errors?)\b|(?:failures|errors)=[1-9]", stripped)
            drafts.append(_draft(seg, stripped, extra={"number", "bug"} if failing else {"number"}, bonus=0.6))
            continue
        if raw_left > 0:
            unit = _draft(seg, stripped, raw=True)
            if "artifact" in unit.kinds:
                raw_left -= 1
                drafts.append(unit)
    end_traceback()
    return drafts


# --- the whole conversation ---------------------------------------------------------------------


def extract_units(
    segments: Sequence[Segment],
    *,
    raw_lines_per_result: int = 3,
    recent_turns: int = 3,
    max_unit_tokens: int = 80,
) -> list[Unit]:
    """All candidate units of a conversation, deduplicated, in conversation order.

    Args:
        segments: the parsed conversation (`transcript.parse_conversation`).
        raw_lines_per_result: non-distinctive lines kept per tool result (and code block).
        recent_turns: assistant turns at the end whose prose counts as the current state;
            plans stated before them count as stale.
        max_unit_tokens: a longer unit is cut to this many tokens.
    """
    first_user = next((s.index for s in segments if s.role == "user"), None)
    prose_turns = [s.index for s in segments if s.role == "assistant"]
    recent = set(prose_turns[-recent_turns:]) if recent_turns > 0 else set()

    drafts: list[_Draft] = []
    for seg in segments:
        if seg.role == "system":
            # Every compaction policy keeps the system prompt verbatim next to the summary
            # (inspect's CompactionSummary too): summarising it would spend budget twice.
            continue
        if seg.role in ("user", "assistant"):
            drafts += _prose_units(seg, seg.index == first_user, raw_lines_per_result)
        elif seg.role == "tool_call":
            unit = _command_unit(seg, seg.text)
            drafts += [unit] if unit else []
        else:
            drafts += _output_units(seg, raw_lines_per_result)

    merged: dict[str, int] = {}
    kept: list[_Draft] = []
    stale: list[bool] = []
    for d in drafts:
        kinds = set(d.kinds)
        is_recent = d.segment in recent
        if d.role == "assistant" and is_recent and not d.raw:
            kinds.add("state")
        plan = d.role == "assistant" and "next_step" in kinds and not is_recent and "decision" not in kinds
        key = _dedupe_key(d.text)
        if key in merged:
            # The same line again (a file read twice, a repeated error): one unit with the
            # union of its kinds, at its first position.
            first = kept[merged[key]]
            first.kinds |= kinds
            first.anchors |= d.anchors
            first.bonus = max(first.bonus, d.bonus)
            first.raw = first.raw and d.raw
            stale[merged[key]] = stale[merged[key]] and plan
            continue
        merged[key] = len(kept)
        d.kinds = kinds
        kept.append(d)
        stale.append(plan)

    return _finish(kept, stale, len(segments), max_unit_tokens)


def _dedupe_key(text: str) -> str:
    return _WS.sub(" ", _NORMALISE_PREFIX.sub("", text.strip())).lower().rstrip(" .:;,")


def _finish(drafts: list[_Draft], stale: list[bool], n_segments: int, max_unit_tokens: int) -> list[Unit]:
    counts = count_many([d.text for d in drafts])
    units: list[Unit] = []
    span = max(1, n_segments - 1)
    for i, (d, tokens, plan) in enumerate(zip(drafts, counts, stale, strict=True)):
        text, cut = d.text, False
        if tokens > max_unit_tokens:
            text = cut_text(text, max_unit_tokens)
            tokens, cut = count_tokens(text), True
        anchors = frozenset(anchors_of(text) | numbers_of(text)) if cut else frozenset(d.anchors)
        recency = d.segment / span
        score = (1.0 + min(len(anchors), 6)) / (1.0 + tokens / 25.0)
        score += d.bonus + 0.1 * len(d.kinds)
        if d.role == "user":
            score += 0.3
        if d.kinds & {"state", "next_step", "bug"}:
            # Late errors are the unresolved ones; late plans are the live ones.
            score += 0.6 * recency
        score += 0.05 * recency  # between equals, the later one is the current one
        units.append(
            Unit(
                position=i,
                segment=d.segment,
                role=d.role,
                text=text,
                kinds=frozenset(d.kinds),
                anchors=anchors,
                score=round(score, 6),
                tokens=tokens,
                raw=d.raw,
                search=d.search,
                stale_plan=plan,
                cut=cut,
            )
        )
    return units


def cut_text(text: str, max_tokens: int) -> str:
    """`text` cut to about `max_tokens` tokens at a word boundary, marked with "…".

    A cut inside a word would write a path or number that was never said (`deletion.p`),
    which scoring rightly counts as a distortion; a whole word is dropped instead.
    """
    if max_tokens <= 1:
        return ""
    head = truncate_tokens(text, max_tokens - 1)
    if len(head) < len(text) and not text[len(head)].isspace():
        space = max(head.rfind(" "), head.rfind("\t"))
        head = head[:space] if space > 0 else ""
    return (head.rstrip() + "…") if head.strip() else ""


def replace_text(unit: Unit, text: str, tokens: int) -> Unit:
    """`unit` with a shorter text (used when a summary asks for short lines)."""
    return replace(unit, text=text, tokens=tokens, cut=True)
