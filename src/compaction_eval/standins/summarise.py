"""Choose units for a summary within a token budget and lay them out.

Selection is greedy and deterministic. Each kind the prompt asks for is a lane of units
ranked by score (the most recent first for `state` and `next_step`); lanes take turns in the
prompt's order, so that a summary covers every asked kind before it deepens any one. Units
of kinds not asked for come after all lanes run dry (or never, when the prompt says "nothing
else"); discarded kinds and targets never come. Output is in conversation order, grouped
under the prompt's headings when it asks for sections.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from compaction_eval.compaction.transcript import parse_conversation
from compaction_eval.contracts.tokens import count_tokens
from compaction_eval.standins.directives import Directives, Section, parse_directives
from compaction_eval.standins.sentences import (
    Unit,
    cut_text,
    extract_units,
    replace_text,
)

# Which kind decides a unit's section when it has several: the rarer, more specific first.
_SPECIFICITY = ("bug", "constraint", "intent", "decision", "attempt", "next_step", "state", "number", "artifact")
_BRIEF_UNIT_TOKENS = 40
_NEAR_DUPLICATE = 0.8
_WORDS = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Summary:
    """A summary and how it was made.

    Args:
        text: the summary.
        units: the units it holds, in output order.
        candidates: how many units the conversation offered.
        directives: what the prompt asked for.
        cut: the budget forced a cut beyond dropping whole units.
    """

    text: str
    units: tuple[Unit, ...]
    candidates: int
    directives: Directives
    cut: bool = False


@dataclass(frozen=True)
class Options:
    """Tuning of the extractive summariser (all have defaults; see `ExtractiveSummariser`).

    Args:
        raw_lines_per_result: non-distinctive lines kept per tool result.
        recent_turns: assistant turns at the end that describe the current state.
        max_unit_tokens: longer units are cut to this many tokens.
    """

    raw_lines_per_result: int = 3
    recent_turns: int = 3
    max_unit_tokens: int = 80


def summarise(conversation: str, instruction: str, budget: int, options: Options = Options()) -> Summary:
    """An extractive summary of `conversation` that honours `instruction`, in at most `budget` tokens.

    Args:
        conversation: the span as rendered text (see `transcript`).
        instruction: the compaction prompt.
        budget: the most tokens the summary may have (by `compaction_eval.contracts.tokens.count_tokens`).
        options: tuning.
    """
    return select(_units(conversation, options), parse_directives(instruction), budget)


@lru_cache(maxsize=16)
def _units(conversation: str, options: Options) -> tuple[Unit, ...]:
    # Every candidate prompt compacts the same span: extract its units once.
    return tuple(extract_units(
        parse_conversation(conversation),
        raw_lines_per_result=options.raw_lines_per_result,
        recent_turns=options.recent_turns,
        max_unit_tokens=options.max_unit_tokens,
    ))


def select(units: Sequence[Unit], directives: Directives, budget: int) -> Summary:
    """Pick units for `directives` within `budget` tokens and render them (module docstring)."""
    sections = directives.sections
    section_of = {u.position: _section_index(u, sections) for u in units}
    heading_cost = [count_tokens(s.heading) + 2 for s in sections] + [count_tokens(_other_heading(sections)) + 2]

    eligible = [u for u in units if _eligible(u, directives)]
    if directives.max_units is not None:
        eligible = [_brief(u) for u in eligible]
    boosted = {u.position: u.score + _focus_boost(u, directives) for u in eligible}

    picked: list[Unit] = []
    picked_words: list[set[str]] = []
    picked_shapes: set[str] = set()
    taken: set[int] = set()
    opened: set[int] = set()
    spent = 0
    limit = directives.max_units

    def try_take(unit: Unit) -> bool:
        nonlocal spent
        if unit.position in taken:
            return False
        section = section_of[unit.position]
        cost = unit.tokens + 2 + (heading_cost[section] if sections and section not in opened else 0)
        if spent + cost > budget:
            return False
        words = set(_WORDS.findall(unit.text.lower()))
        shape = _DIGITS.sub("0", unit.text)
        taken.add(unit.position)
        if shape in picked_shapes or any(_similar(words, other) for other in picked_words):
            # Near-identical to a unit already in: the same file read twice, the same
            # test tally from another run.
            return False
        picked_shapes.add(shape)
        picked.append(unit)
        picked_words.append(words)
        opened.add(section)
        spent += cost
        return True

    lanes = _lanes(eligible, directives, boosted)
    cursors = [0] * len(lanes)
    active = True
    while active and (limit is None or len(picked) < limit):
        active = False
        for i, lane in enumerate(lanes):
            # Each lane adds its best unit that still fits, then yields its turn.
            while cursors[i] < len(lane):
                unit = lane[cursors[i]]
                cursors[i] += 1
                if try_take(unit):
                    active = True
                    break
            if limit is not None and len(picked) >= limit:
                break

    if not directives.exclusive:
        asked = set(directives.preserve)
        rest = sorted(
            (u for u in eligible if u.position not in taken and not (u.kinds & asked)),
            key=lambda u: (-bool(u.kinds), -boosted[u.position], u.position),
        )
        for unit in rest:
            if limit is not None and len(picked) >= limit:
                break
            try_take(unit)

    cut = False
    if not picked and eligible and budget > 0:
        # Not even one unit fits: an LLM would still start writing. Keep the best one, cut.
        best = max(eligible, key=lambda u: (boosted[u.position], -u.position))
        text = cut_text(best.text, budget - 2 - (heading_cost[section_of[best.position]] if sections else 0))
        if text:
            picked.append(replace_text(best, text, count_tokens(text)))
        cut = True

    text = render(picked, sections, section_of)
    while count_tokens(text) > budget and picked:
        # Token counts are not quite additive across line joins: drop the last pick.
        picked.pop()
        text = render(picked, sections, section_of)
    ordered = tuple(sorted(picked, key=lambda u: (section_of[u.position] if sections else 0, u.position)))
    return Summary(text, ordered, len(units), directives, cut)


def render(units: Sequence[Unit], sections: Sequence[Section], section_of: dict[int, int]) -> str:
    """Bullet lines in conversation order, under section headings when there are sections."""
    if not units:
        return ""
    if not sections:
        return "\n".join(f"- {u.text}" for u in sorted(units, key=lambda u: u.position))
    blocks = []
    for index in sorted({section_of[u.position] for u in units}):
        heading = sections[index].heading if index < len(sections) else _other_heading(sections)
        lines = [f"- {u.text}" for u in sorted(units, key=lambda u: u.position) if section_of[u.position] == index]
        blocks.append("\n".join([heading, *lines]))
    return "\n\n".join(blocks)


def _eligible(unit: Unit, d: Directives) -> bool:
    if unit.raw and "raw_output" in d.discard:
        return False
    if unit.search and "searches" in d.discard:
        return False
    if unit.stale_plan and "superseded" in d.discard and not (unit.kinds - {"next_step"}) & set(d.preserve):
        return False
    kept = unit.kinds - d.discard
    if unit.kinds and not kept:
        return False
    if d.exclusive and not kept & set(d.preserve):
        return False
    return True


def _lanes(units: Sequence[Unit], d: Directives, boosted: dict[int, float]) -> list[list[Unit]]:
    lanes: list[list[Unit]] = []
    if d.focus:
        focused = [u for u in units if _focus_boost(u, d) > 0]
        lanes.append(sorted(focused, key=lambda u: (-boosted[u.position], u.position)))
    for kind in d.preserve:
        members = [u for u in units if kind in u.kinds]
        if kind in ("state", "next_step"):
            # What is live is what was said last.
            members.sort(key=lambda u: (-u.segment, -boosted[u.position], u.position))
        else:
            members.sort(key=lambda u: (-boosted[u.position], u.position))
        lanes.append(members)
    return lanes


def _focus_boost(unit: Unit, d: Directives) -> float:
    if not d.focus:
        return 0.0
    words = {w.lower()[:5] for w in _WORDS.findall(unit.text) if len(w) >= 4}
    return 1.0 * min(len(words & d.focus), 2)


def _section_index(unit: Unit, sections: Sequence[Section]) -> int:
    """The section a unit goes under. Its kinds are tried from the most specific: the first
    section whose main kind it is, else the first that collects it; "Other" (index
    len(sections)) when no section collects any of the unit's kinds."""
    if not sections:
        return 0
    for kind in (k for k in _SPECIFICITY if k in unit.kinds):
        for i, s in enumerate(sections):
            if s.kinds and s.kinds[0] == kind:
                return i
        for i, s in enumerate(sections):
            if kind in s.kinds:
                return i
    return len(sections)


def _other_heading(sections: Sequence[Section]) -> str:
    if sections and sections[0].heading.startswith("#"):
        return sections[0].heading.split(" ", 1)[0] + " Other"
    return f"{len(sections) + 1}. Other:"


def _brief(unit: Unit) -> Unit:
    # "A few short lines": long units are cut, as a person writing short lines would.
    if unit.tokens <= _BRIEF_UNIT_TOKENS:
        return unit
    text = cut_text(unit.text, _BRIEF_UNIT_TOKENS)
    return replace_text(unit, text, count_tokens(text)) if text else unit


def _similar(a: set[str], b: set[str]) -> bool:
    if not a or not b:
        return False
    return len(a & b) / len(a | b) >= _NEAR_DUPLICATE
