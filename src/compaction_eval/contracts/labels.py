"""The labels contract (`compaction-eval/labels@1`): must-keep facts of one trace.

`load_labels` parses and checks a labels file on its own; `lint_against_trace` checks it
against the trace it names (indices in range, keys present in the history).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import Trace, fold
from compaction_eval.contracts.yamlfile import parse_yaml_with_lines

SCHEMA = "compaction-eval/labels@1"
CATEGORIES = ("intent", "constraint", "decision", "bug", "artifact", "number", "attempt", "next_step")
EXACT_CATEGORIES = frozenset({"artifact", "number", "bug"})
AVOID_REASONS = ("superseded", "secret", "noise")
LABELLERS = ("human", "generator", "draft")
_ID = re.compile(r"^[a-z0-9_-]+$")


@dataclass(frozen=True)
class Fact:
    """A fact a resumed agent must still know.

    Args:
        id: unique in its file.
        category: one of CATEGORIES.
        text: the fact in words (what a judge compares against).
        keys: literal anchors that must all appear.
        alt_keys: alternative anchor sets; any one complete set also counts.
        source: message indices that establish the fact.
        weight: its weight in recall.
        critical: losing it fails the gate by itself.
        valid_until: index where it is superseded; not expected at later points.
    """

    id: str
    category: str
    text: str
    keys: tuple[str, ...] = ()
    alt_keys: tuple[tuple[str, ...], ...] = ()
    source: tuple[int, ...] = ()
    weight: float = 1.0
    critical: bool = False
    valid_until: int | None = None

    def expected_at(self, at: int) -> bool:
        """DESIGN.md 4: some source index is below `at` and it is not yet superseded."""
        return any(s < at for s in self.source) and (self.valid_until is None or self.valid_until >= at)

    @property
    def key_sets(self) -> tuple[tuple[str, ...], ...]:
        return (self.keys, *self.alt_keys) if self.keys else self.alt_keys


@dataclass(frozen=True)
class AvoidItem:
    """Content that must not survive compaction (a secret, a superseded plan, noise)."""

    id: str
    reason: str
    text: str
    keys: tuple[str, ...] = ()
    source: tuple[int, ...] = ()


@dataclass
class Labels:
    """The labels of one trace: compaction points, facts and avoid items."""

    trace: str
    labelled_by: str
    points: tuple[int, ...]
    facts: tuple[Fact, ...]
    avoid: tuple[AvoidItem, ...] = ()
    path: Path | None = None
    lines: dict[str, int] = field(default_factory=dict, repr=False)
    text: str | None = field(default=None, repr=False, compare=False)  # the YAML it was read from

    def expected(self, at: int) -> list[Fact]:
        return [f for f in self.facts if f.expected_at(at)]

    def place(self, json_path: str) -> str:
        """`line N, <json_path>` when the YAML line is known."""
        line = self.lines.get(json_path)
        return f"line {line}, {json_path}" if line else json_path


# ---------------------------------------------------------------------------- parsing


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def _int_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)


def _check(data: Any, where: str, lines: dict[str, int]) -> list[Problem]:
    problems: list[Problem] = []

    def bad(path: str, message: str) -> None:
        line = lines.get(path)
        problems.append(Problem(where, f"line {line}, {path}" if line else path, message))

    if not isinstance(data, dict):
        return [Problem(where, "", "a labels file must be a YAML mapping")]
    if data.get("schema") != SCHEMA:
        bad("schema", f"unknown schema {data.get('schema')!r} (expected {SCHEMA!r})")
    if not isinstance(data.get("trace"), str) or not data.get("trace"):
        bad("trace", "missing or not a string")
    if data.get("labelled_by") not in LABELLERS:
        bad("labelled_by", f"must be one of {', '.join(LABELLERS)}")
    points = data.get("points")
    if not isinstance(points, list) or not points:
        bad("points", "missing or empty: list the compaction points as '- at: N'")
    else:
        first_at: dict[int, int] = {}
        for i, p in enumerate(points):
            at = p.get("at") if isinstance(p, dict) else None
            if not isinstance(at, int) or isinstance(at, bool) or at < 1:
                bad(f"points[{i}]", "each point needs 'at', a positive integer")
            elif at in first_at:
                bad(f"points[{i}].at", f"duplicate point {at} (first at points[{first_at[at]}])")
            else:
                first_at[at] = i
    facts = data.get("facts")
    if not isinstance(facts, list) or not facts:
        bad("facts", "missing or empty")
        facts = []
    ids: dict[str, str] = {}
    for kind, items in (("facts", facts), ("avoid", data.get("avoid") or [])):
        if not isinstance(items, list):
            bad(kind, "must be a list")
            continue
        for i, item in enumerate(items):
            here = f"{kind}[{i}]"
            if not isinstance(item, dict):
                bad(here, "must be a mapping")
                continue
            fid = item.get("id")
            if not isinstance(fid, str) or not _ID.match(fid):
                bad(f"{here}.id", f"id {fid!r} must match [a-z0-9_-]+")
            elif fid in ids:
                bad(f"{here}.id", f"duplicate id {fid!r} (first at {ids[fid]})")
            else:
                ids[fid] = here
            if not isinstance(item.get("text"), str) or not item.get("text", "").strip():
                bad(f"{here}.text", "missing text")
            if not _int_list(item.get("source")) or not item.get("source"):
                bad(f"{here}.source", "must be a non-empty list of message indices")
            keys = item.get("keys", [])
            if not _str_list(keys):
                bad(f"{here}.keys", "must be a list of strings that are not empty or only whitespace")
            if kind == "facts":
                if item.get("category") not in CATEGORIES:
                    bad(f"{here}.category", f"unknown category {item.get('category')!r} (one of {', '.join(CATEGORIES)})")
                alt = item.get("alt_keys", [])
                if not isinstance(alt, list) or not all(_str_list(a) and a for a in alt):
                    bad(f"{here}.alt_keys", "must be a list of lists of strings")
                if not keys and not alt:
                    bad(f"{here}.keys", "a fact needs at least one key")
                w = item.get("weight", 1.0)
                if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or w <= 0:
                    bad(f"{here}.weight", "must be a positive finite number")
                if not isinstance(item.get("critical", False), bool):
                    bad(f"{here}.critical", "must be true or false")
                vu = item.get("valid_until")
                if vu is not None and (not isinstance(vu, int) or isinstance(vu, bool) or vu < 0):
                    bad(f"{here}.valid_until", "must be a message index or null")
            elif item.get("reason") not in AVOID_REASONS:
                bad(f"{here}.reason", f"unknown reason {item.get('reason')!r} (one of {', '.join(AVOID_REASONS)})")
    return problems


def _labels_from(data: dict[str, Any], path: Path | None, lines: dict[str, int]) -> Labels:
    facts = tuple(
        Fact(
            id=f["id"],
            category=f["category"],
            text=f["text"].strip(),
            keys=tuple(f.get("keys") or ()),
            alt_keys=tuple(tuple(a) for a in f.get("alt_keys") or ()),
            source=tuple(f["source"]),
            weight=float(f.get("weight", 1.0)),
            critical=bool(f.get("critical", False)),
            valid_until=f.get("valid_until"),
        )
        for f in data["facts"]
    )
    avoid = tuple(
        AvoidItem(id=a["id"], reason=a["reason"], text=a["text"].strip(), keys=tuple(a.get("keys") or ()), source=tuple(a["source"]))
        for a in data.get("avoid") or ()
    )
    return Labels(
        trace=data["trace"],
        labelled_by=data["labelled_by"],
        points=tuple(p["at"] for p in data["points"]),
        facts=facts,
        avoid=avoid,
        path=path,
        lines=lines,
    )


def load_labels(path: Path | str) -> Labels:
    """Load and check one labels file on its own; raises ContractError with file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError([Problem(str(path), "", f"cannot read: {exc}")]) from None
    return labels_from_text(text, path)


def labels_from_text(text: str, path: Path | None = None) -> Labels:
    """Labels from YAML text (`path` names it in errors; "<string>" when None)."""
    where = str(path) if path is not None else "<string>"
    data, lines = parse_yaml_with_lines(text, where)
    problems = _check(data, where, lines)
    if problems:
        raise ContractError(problems)
    labels = _labels_from(data, path, lines)
    labels.text = text
    return labels


def lint_against_trace(labels: Labels, trace: Trace) -> list[Problem]:
    """Problems of `labels` that only the trace can reveal (DESIGN.md 4)."""
    where = str(labels.path or labels.trace)
    problems: list[Problem] = []
    n = len(trace.messages)

    def bad(path: str, message: str) -> None:
        problems.append(Problem(where, labels.place(path), message))

    for i, at in enumerate(labels.points):
        if at > n:
            bad(f"points[{i}].at", f"point {at} is past the end of the trace ({n} messages)")
    groups: tuple[tuple[str, Sequence[Fact | AvoidItem]], ...] = (("facts", labels.facts), ("avoid", labels.avoid))
    for kind, items in groups:
        for i, item in enumerate(items):
            for j, s in enumerate(item.source):
                if s >= n:
                    bad(f"{kind}[{i}].source[{j}]", f"message index {s} out of range (trace has {n} messages)")
            in_scope = [at for at in labels.points if _in_scope(item, at)]
            if not in_scope:
                bad(f"{kind}[{i}].source", f"no source index is below any point {list(labels.points)}: never expected")
                continue
            # A key must be readable in the history at every point where the item is expected;
            # the earliest such point is the strictest.
            upto = min(min(in_scope), n)
            history = trace.folded_text_upto(upto)
            for path, key in _key_paths(kind, i, item):
                if fold(key) not in history:
                    bad(path, f"key {key!r} does not occur in messages[0:{upto}]")
    return problems


def _in_scope(item: Fact | AvoidItem, at: int) -> bool:
    if isinstance(item, Fact):
        return item.expected_at(at)
    return any(s < at for s in item.source)


def _key_paths(kind: str, i: int, item: Fact | AvoidItem) -> list[tuple[str, str]]:
    out = [(f"{kind}[{i}].keys[{k}]", key) for k, key in enumerate(item.keys)]
    for a, keyset in enumerate(getattr(item, "alt_keys", ())):
        out += [(f"{kind}[{i}].alt_keys[{a}][{k}]", key) for k, key in enumerate(keyset)]
    return out


def _q(value: Any) -> str:
    """A YAML scalar: JSON strings are valid double-quoted YAML and need no escaping rules of ours."""
    return json.dumps(value, ensure_ascii=False)


def labels_yaml(labels: dict[str, Any], header: str = "") -> str:
    """The labels as readable YAML (flow lists for keys and sources, one field a line)."""
    out = [header.rstrip("\n")] if header else []
    out += [f"schema: {labels['schema']}", f"trace: {labels['trace']}", f"labelled_by: {labels['labelled_by']}"]
    out.append("points:")
    out += [f"  - at: {p['at']}" for p in labels["points"]]
    for section in ("facts", "avoid"):
        if not labels.get(section):
            continue
        out.append(f"{section}:")
        for item in labels[section]:
            first = True
            for key, value in item.items():
                lead = "  - " if first else "    "
                first = False
                if isinstance(value, list):
                    if value and isinstance(value[0], list):
                        rendered = "[" + ", ".join("[" + ", ".join(_q(v) for v in sub) + "]" for sub in value) + "]"
                    else:
                        rendered = "[" + ", ".join(_q(v) for v in value) + "]"
                elif isinstance(value, bool):
                    rendered = "true" if value else "false"
                elif isinstance(value, int):
                    rendered = str(value)
                elif key in ("id", "category", "reason"):
                    rendered = value
                else:
                    rendered = _q(value)
                out.append(f"{lead}{key}: {rendered}")
    return "\n".join(out) + "\n"
