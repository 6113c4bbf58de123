"""Literal matcher (artifact / number / bug) and distortion detection.

A key is found when it occurs in the normalised summary (see `normalize.normalize`) as a
whole token: `347` is not found in `3470` or `3.47`, `django/db/models/deletion.py` not in
`deletion.pyc` nor `db/models/deletion2.py`, `related_objects` not in `related_objects_2`.
A shorter path key is found inside a longer path at a segment boundary
(`db/models/deletion.py` in `django/db/models/deletion.py`): the longer path names it.
Matching is case-insensitive throughout (the history a key is linted against is folded too).

Distortions (DESIGN.md 1: "a path never seen, 347 turned into about 300"):
- near misses of a fact whose key is missing: `near_miss_path`, `drifted_number`,
  `near_miss_symbol`;
- invented content: a path or a number in the summary that occurs nowhere in the history:
  `invented_path`, `invented_number`. Tuned for precision: small numbers, years, hedged
  numbers, token budgets and numbers inside identifiers or paths are never reported.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, lru_cache

from compaction_eval.contracts.labels import Fact
from compaction_eval.contracts.traces import Trace
from compaction_eval.recall.matching.normalize import (
    WORD,
    Span,
    all_numbers,
    canonical_number,
    edit_distance,
    identifier_tokens,
    is_number_key,
    is_path_key,
    is_plain_word,
    is_symbol_key,
    normalize,
    normalize_history,
    number_tokens,
    path_tokens,
    significant_digits,
    split_units,
    stem,
)

NEAR_MISS_PATH = "near_miss_path"
DRIFTED_NUMBER = "drifted_number"
NEAR_MISS_SYMBOL = "near_miss_symbol"
INVENTED_PATH = "invented_path"
INVENTED_NUMBER = "invented_number"


@dataclass
class Distortion:
    """Something in the summary that is wrong rather than missing.

    Args:
        kind: near_miss_path | drifted_number | near_miss_symbol | invented_path | invented_number.
        found: the text in the summary (normalised).
        expected: the fact's key it distorts; None for invented content.
        fact: the fact's id; None for invented content.
    """

    kind: str
    found: str
    expected: str | None
    fact: str | None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "found": self.found, "expected": self.expected, "fact": self.fact}


# ---------------------------------------------------------------------------- the summary, once


@dataclass
class SummaryText:
    """A summary normalised once, with its units, for all matchers of one sample.

    Args:
        raw: the summary as written.
    """

    raw: str
    norm: str = field(init=False)
    units: list[str] = field(init=False)
    units_norm: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.norm = normalize(self.raw)
        self.units = split_units(self.raw)
        self.units_norm = [normalize(u) for u in self.units]

    @cached_property
    def stems(self) -> dict[str, list[tuple[int, int]]]:
        """Word stem -> spans in `norm` (for inflection-tolerant keys of meaning categories)."""
        out: dict[str, list[tuple[int, int]]] = {}
        for m in WORD.finditer(self.norm):
            out.setdefault(stem(m.group(0)), []).append((m.start(), m.end()))
        return out

    def evidence(self, spans: Iterable[tuple[int, int]], width: int = 240) -> str:
        """The units (as written) that contain `spans` of `norm`, joined with ` | `.

        A span outside every unit (a heading) gives a normalised snippet around it.
        """
        pieces: list[str] = []
        for start, end in spans:
            needle = self.norm[start:end]
            piece = next((u for u, un in zip(self.units, self.units_norm, strict=True) if needle in un), None)
            if piece is None:
                a, b = max(0, start - 60), min(len(self.norm), end + 60)
                piece = ("..." if a else "") + self.norm[a:b] + ("..." if b < len(self.norm) else "")
            if len(piece) > width:
                piece = piece[: width - 3] + "..."
            if piece not in pieces:
                pieces.append(piece)
        return " | ".join(pieces)


# ---------------------------------------------------------------------------- finding keys


@lru_cache(maxsize=16384)
def key_pattern(key: str) -> re.Pattern[str]:
    """The regex that finds `key` as a whole token in normalised text."""
    k = normalize(key)
    body = re.escape(k)
    if is_number_key(k):
        # 347 is not in 3470, 3.47, 0.347, v347, 347.5 or issues/347; 347ms and 31/347 count.
        return re.compile(rf"(?<![\w.])(?<![^\d]/)(?<!^/)(?<!\d,){body}(?![\d_]|[.,]\d)")
    path = is_path_key(k)
    left = ""
    if re.fullmatch(r"\d+(?:\.\d+)+", k):  # a version: 4.1.0 is in v4.1.0, not in 14.1.0
        left = r"(?:(?<![\w.])|(?<=(?<![\w.])v))"
    elif k[0].isalnum() or k[0] == "_":
        left = r"(?<![\w\-.])" if path else r"(?<!\w)"
    right = ""
    if k[-1].isalnum() or k[-1] == "_":
        # a folder key is named by a path inside it (envs/testbed in envs/testbed/bin/python);
        # a file key is not by a longer name (deletion.py in deletion.pyc)
        folder = path and "." not in k.rsplit("/", 1)[-1]
        right = (r"(?!\w|[.\-]\w)" if folder else r"(?!\w|[./\-]\w)") if path else r"(?!\w)"
    return re.compile(left + body + right)


@lru_cache(maxsize=65536)
def find_key(norm: str, key: str) -> tuple[int, int] | None:
    """Span of the first whole-token occurrence of `key` in normalised text, or None."""
    m = key_pattern(key).search(norm)
    return (m.start(), m.end()) if m else None


def find_key_in(summary: SummaryText, key: str, *, inflect: bool = False) -> tuple[int, int] | None:
    """`find_key` on a summary; with `inflect`, a plain word key (`tests`) also matches its
    inflections (`test`, `tested`): used for the meaning categories only."""
    hit = find_key(summary.norm, key)
    if hit is None and inflect and is_plain_word(normalize(key)):
        spans = summary.stems.get(stem(normalize(key)))
        hit = spans[0] if spans else None
    return hit


def match_key_sets(
    summary: SummaryText, key_sets: Sequence[Sequence[str]], *, inflect: bool = False
) -> tuple[tuple[str, ...], list[tuple[int, int]]] | None:
    """The first key set whose keys all occur, with their spans; None when no set is complete."""
    for keys in key_sets:
        spans = []
        for key in keys:
            hit = find_key_in(summary, key, inflect=inflect)
            if hit is None:
                break
            spans.append(hit)
        else:
            if keys:
                return tuple(keys), spans
    return None


def missing_keys(summary: SummaryText, key_sets: Sequence[Sequence[str]], *, inflect: bool = False) -> list[str]:
    """The missing keys of the key set that is closest to complete (fewest missing)."""
    best: list[str] | None = None
    for keys in key_sets:
        missing = [k for k in keys if find_key_in(summary, k, inflect=inflect) is None]
        if best is None or len(missing) < len(best):
            best = missing
    return best or []


def find_keys(text: str, keys: Sequence[str]) -> str | None:
    """Evidence (the units that hold them) when every key of `keys` occurs in `text`, else None.

    Args:
        text: a summary or any text, as written.
        keys: literal keys; all must occur as whole tokens after normalisation.
    """
    summary = text if isinstance(text, SummaryText) else SummaryText(text)
    hit = match_key_sets(summary, [keys])
    return summary.evidence(hit[1]) if hit else None


@dataclass
class LiteralResult:
    """Verdict of the literal matcher on one fact.

    Args:
        kept: some key set is complete.
        evidence: the units holding the keys (when kept).
        keys: the key set that matched (when kept).
        missing: the missing keys of the closest key set (when not kept).
    """

    kept: bool
    evidence: str | None
    keys: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


def literal_match(fact: Fact, summary: SummaryText) -> LiteralResult:
    """The exact rule of DESIGN.md 4 for artifact / number / bug facts.

    A symbol key the fact qualifies (`MathMLPresentationPrinter._print_Symbol`) that the
    summary only names under another qualifier (`MathMLContentPrinter._print_Symbol`) is
    another symbol: missing (gold set, labels/gold: a near-miss of the right method name).
    """
    hit = match_key_sets(summary, fact.key_sets)
    if hit:
        wrong = [k for k in hit[0] if wrong_qualifier(fact.text, summary.norm, k)]
        if not wrong and not path_elsewhere(fact.text, summary.norm):
            return LiteralResult(True, summary.evidence(hit[1]), keys=hit[0])
        return LiteralResult(False, None, missing=tuple(wrong or hit[0]))
    return LiteralResult(False, None, missing=tuple(missing_keys(summary, fact.key_sets)))


_QUALIFIED = r"([a-z_][a-z0-9_]*)\.{key}(?![\w])"
_FILE_PATH = re.compile(r"(?<![\w.])((?:[\w.\-]+/)+)([\w.\-]+\.\w+)")


def path_elsewhere(fact_text: str, summary_norm: str) -> bool:
    """The summary names a file of the fact (`dir/name.ext`) only under a folder the fact
    never gives it: a near-miss path, not a keep (the gold set's wrong folders:
    `AppData/Local` for `AppData/Roaming`, `/boot/efi/` for `/boot/`). A relative path that
    ends the fact's folder (`src/a.py` for `/repo/src/a.py`) is the same file.

    >>> path_elsewhere("Edit /repo/src/app/views.py", "edited src/views.py")
    True
    >>> path_elsewhere("Edit /repo/src/app/views.py", "edited app/views.py")
    False
    """
    fact = _slashes(fact_text.lower())
    folders: dict[str, set[str]] = {}
    for m in _FILE_PATH.finditer(fact):
        # `.../Package.swift` elides its folder: any folder fits
        folder = re.sub(r"^(?:\.\./|\./)+", "", m.group(1)) if not m.group(1).startswith(".../") else None
        if folder is not None:
            folders.setdefault(m.group(2), set()).add(folder)
    if not folders:
        return False
    same: set[str] = set()
    other: set[str] = set()
    for folder, name in _file_paths(summary_norm):
        if name in folders:
            fits = any(k.endswith(folder) or folder.endswith(k) for k in folders[name])
            (same if fits else other).add(name)
    return bool(other - same)


@lru_cache(maxsize=256)
def _file_paths(summary_norm: str) -> tuple[tuple[str, str], ...]:
    """(folder, file name) of each `dir/name.ext` of a summary (read once, not once per fact)."""
    return tuple((re.sub(r"^(?:\.\./|\./)+", "", m.group(1)), m.group(2))
                 for m in _FILE_PATH.finditer(_slashes(summary_norm)))


def _slashes(text: str) -> str:
    return text.replace("\\\\", "/").replace("\\", "/")


def wrong_qualifier(fact_text: str, summary_norm: str, key: str) -> bool:
    """True when the fact names `key` as `Owner.key`, and the summary names it only with
    other owners (`Other.key`), never as `Owner.key` nor bare."""
    k = normalize(key)
    if not is_symbol_key(key) or "." in k:
        return False
    pattern = re.compile(_QUALIFIED.format(key=re.escape(k)))
    owners = {m.group(1) for m in pattern.finditer(normalize(fact_text))}
    if not owners:
        return False
    found = list(pattern.finditer(summary_norm))
    if not found or any(m.group(1) in owners for m in found):
        return False
    # a bare mention (not preceded by a dot) is the fact's own symbol, unqualified
    bare = re.search(rf"(?<![\w.]){re.escape(k)}(?![\w])", summary_norm)
    return bare is None


# ---------------------------------------------------------------------------- the history, once per (trace, at)


@dataclass
class SourceIndex:
    """What the history messages[0:at] contains, for "was this ever seen" questions.

    Args:
        norm: the normalised history (`trace.folded_text_upto(at)`, quotes and thousands
            separators normalised like a summary).
    """

    norm: str
    numbers: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.numbers = all_numbers(self.norm)
        self._seen: dict[str, bool] = {}

    def has_path(self, path: str) -> bool:
        """True if the path, or a tail of it with at least two segments, occurs in the history.

        Tails make `/testbed/django/db/models/deletion.py` seen when the history only shows
        `django/db/models/deletion.py` (precision over recall for invented paths).
        """
        if path in self._seen:
            return self._seen[path]
        p = path.rstrip("/")
        segments = p.split("/")
        seen = p in self.norm
        if not seen and len(segments) > 2:
            seen = any("/".join(segments[i:]) in self.norm for i in range(1, len(segments) - 1))
        if not seen and p.startswith(("http://", "https://")):
            seen = p.split("://", 1)[1] in self.norm
        self._seen[path] = seen
        return seen

    def has_word(self, token: str) -> bool:
        """True if `token` occurs as a whole token (identifier) in the history."""
        key = "\0w" + token
        if key not in self._seen:
            self._seen[key] = re.search(rf"(?<![\w]){re.escape(token)}(?![\w])", self.norm) is not None
        return self._seen[key]

    def has_number(self, canonical: str) -> bool:
        return canonical in self.numbers


# One index per (trace, at): the history is normalised once, not once per summary. Traces
# are not hashable (mutable dataclass), so entries are keyed by id() and dropped with the trace.
_SOURCE_CACHE: dict[tuple[int, int], SourceIndex] = {}
_SOURCE_TRACES: dict[int, weakref.ref[Trace]] = {}


def source_index(trace: Trace, at: int) -> SourceIndex:
    """The cached `SourceIndex` of `trace.folded_text_upto(at)`."""
    tid = id(trace)
    ref = _SOURCE_TRACES.get(tid)
    if ref is None or ref() is not trace:
        for key in [k for k in _SOURCE_CACHE if k[0] == tid]:
            del _SOURCE_CACHE[key]

        def forget(_r: weakref.ref[Trace], tid: int = tid) -> None:
            _forget(tid)

        _SOURCE_TRACES[tid] = weakref.ref(trace, forget)
    key = (tid, at)
    if key not in _SOURCE_CACHE:
        _SOURCE_CACHE[key] = SourceIndex(normalize_history(trace.folded_text_upto(at)))
    return _SOURCE_CACHE[key]


def _forget(tid: int) -> None:
    _SOURCE_TRACES.pop(tid, None)
    for key in [k for k in _SOURCE_CACHE if k[0] == tid]:
        del _SOURCE_CACHE[key]


# ---------------------------------------------------------------------------- near misses

_PATH_EDIT_SHARE = 0.15  # up to 15% of the characters (at least 1, at most 3) for a typo-like variant


def _content_stems(text: str) -> set[str]:
    """Stems of the words of normalised `text`, paths left out (a shared `django/db/models`
    prefix says nothing about the topic)."""
    for span in reversed(path_tokens(text)):
        text = text[: span.start] + " " + text[span.end :]
    return {stem(w) for w in WORD.findall(text) if len(w) > 2}


def _about_fact(unit_norm: str, fact: Fact, other_keys: Sequence[str]) -> bool:
    """The unit talks about the fact: it holds another key of it or shares a third of its words."""
    if any(find_key(unit_norm, k) for k in other_keys):
        return True
    fact_words = _content_stems(normalize(fact.text)) - _STOP_STEMS
    if not fact_words:
        return False
    return len(fact_words & _content_stems(unit_norm)) >= max(2, len(fact_words) / 3)


def _unit_of(summary: SummaryText, needle: str) -> str:
    return next((u for u in summary.units_norm if needle in u), summary.norm)


def _path_near(key: str, found: str) -> str | None:
    """How `found` is close to path `key`: "edit" (a typo-like variant), "segment" (suffix-
    aligned, exactly one segment differs, at least two compared), or None."""
    if found == key or found.endswith("/" + key) or key.endswith("/" + found):
        return None
    limit = max(1, min(3, round(len(key) * _PATH_EDIT_SHARE)))
    if edit_distance(key, found, limit) <= limit:
        return "edit"
    ks, fs = key.strip("/").split("/"), found.strip("/").split("/")
    n = min(len(ks), len(fs))
    if n >= 2:
        # a typo in the file name under the same directories (deletion.py -> deletion2.py)
        if ks[-n:-1] == fs[-n:-1]:
            a, b = ks[-1], fs[-1]
            lim = max(1, round(len(a) * _PATH_EDIT_SHARE))
            if edit_distance(a, b, lim) <= lim:
                return "edit"
        if sum(a != b for a, b in zip(ks[-n:], fs[-n:], strict=True)) == 1:
            return "segment"
    return None


def _number_near(expected: str, token_value: str, hedged: bool) -> bool:
    """`found` is a drifted version of `expected`: hedged and within 35%, or a transposition,
    a shifted decimal point, or within 10%."""
    e, f = Decimal(expected), Decimal(token_value)
    if e == f:
        return hedged  # "about 347" for 347 is still hedged, but the key is then found: unused
    rel = abs(e - f) / abs(e) if e else Decimal(1)
    if hedged:
        return rel <= Decimal("0.35")
    if len(expected) == len(token_value) and sorted(expected) == sorted(token_value):
        return True
    if significant_digits(expected) == significant_digits(token_value) and len(significant_digits(expected)) >= 2:
        return True
    return rel <= Decimal("0.10")


def near_misses(fact: Fact, summary: SummaryText, source: SourceIndex, missing: Sequence[str]) -> list[Distortion]:
    """Close variants in the summary of the fact's missing keys.

    Args:
        fact: a fact that was not kept.
        summary: the summary.
        source: the history, to tell a variant the summary made up from a real neighbour.
        missing: the fact's missing keys (`missing_keys`).

    A variant that is itself in the history (another real file, another real number) counts
    only when the summary uses it where it talks about this fact: precision over recall.
    """
    out: list[Distortion] = []
    present = [k for ks in fact.key_sets for k in ks if k not in missing]
    for key in missing:
        k = normalize(key)
        if is_number_key(k):
            out += _number_misses(fact, key, canonical_number(k) or k, summary, source)
        elif is_path_key(k):
            for span in path_tokens(summary.norm):
                how = _path_near(k, span.text)
                if how is None:
                    continue
                if how == "segment" and source.has_path(span.text) and not _about_fact(
                    _unit_of(summary, span.text), fact, present
                ):
                    continue
                out.append(Distortion(NEAR_MISS_PATH, span.text, key, fact.id))
        elif " " in k:
            out += _phrase_misses(fact, key, k, summary, source)
        elif is_symbol_key(key) or fact.category in ("artifact", "bug"):
            limit = max(1, len(k) // 7)
            if len(k) < 5:
                continue
            for span in identifier_tokens(summary.norm):
                t = span.text
                if t == k or abs(len(t) - len(k)) > limit or edit_distance(t, k, limit) > limit:
                    continue
                if source.has_word(t) and not _about_fact(_unit_of(summary, t), fact, present):
                    continue
                out.append(Distortion(NEAR_MISS_SYMBOL, t, key, fact.id))
    return _dedupe(out)


def _number_misses(fact: Fact, key: str, expected: str, summary: SummaryText, source: SourceIndex) -> list[Distortion]:
    if Decimal(expected) < 10:
        return []  # 3 vs 4 retries: too easily a different count
    out = []
    for tok in number_tokens(summary.norm):
        if tok.value == expected and not tok.hedged:
            continue
        if not _number_near(expected, tok.value, tok.hedged):
            continue
        if not tok.hedged and source.has_number(tok.value):
            continue  # a real number of the history, not a drift of this one
        out.append(Distortion(DRIFTED_NUMBER, tok.raw, key, fact.id))
    return out


def _phrase_misses(fact: Fact, key: str, k: str, summary: SummaryText, source: SourceIndex) -> list[Distortion]:
    """A multi-word key (an error message) present but for one token."""
    kt = k.split(" ")
    if len(kt) < 3:
        return []
    st = summary.norm.split(" ")
    out = []
    for i in range(len(st) - len(kt) + 1):
        window = st[i : i + len(kt)]
        diffs = [(a, b) for a, b in zip(kt, window, strict=True) if a != b]
        if len(diffs) != 1:
            continue
        a, b = diffs[0]
        b_clean = b.rstrip(".,;:)")
        if a == b_clean:
            continue
        found = " ".join(window).rstrip(".,;:)")
        ca, cb = canonical_number(a), canonical_number(b_clean)
        kind = DRIFTED_NUMBER if ca is not None and cb is not None else NEAR_MISS_SYMBOL
        out.append(Distortion(kind, found, key, fact.id))
    return out


def _dedupe(items: list[Distortion]) -> list[Distortion]:
    seen, out = set(), []
    for d in items:
        sig = (d.kind, d.found, d.fact)
        if sig not in seen:
            seen.add(sig)
            out.append(d)
    return out


# ---------------------------------------------------------------------------- invented content

_BUDGET_AFTER = re.compile(r"\s*(?:tokens?|words?|characters?|chars?|budget)\b")
_BUDGET_BEFORE = re.compile(r"(?:budget|limit|max(?:imum)?|under|within|at most)\W*(?:of\W*)?$")
_YEAR = range(1900, 2101)


def invented(summary: SummaryText, source: SourceIndex, *, ignore: Iterable[str] = ()) -> list[Distortion]:
    """Paths and numbers of the summary that occur nowhere in the history.

    Args:
        summary: the summary.
        source: the history messages[0:at].
        ignore: normalised tokens already reported as near misses (not reported twice).

    Not reported (false alarms cost more than misses here): numbers below 10, years,
    hedged numbers (`about 300`: drifts are reported against facts instead), numbers inside
    identifiers, versions, paths, times or dates, token/word budgets, `100%`, and markdown
    list numbering or headings (only summary units are read).
    """
    skip = set(ignore)
    out: list[Distortion] = []
    for unit in summary.units_norm:
        for span in path_tokens(unit):
            if span.text in skip or source.has_path(span.text):
                continue
            skip.add(span.text)
            out.append(Distortion(INVENTED_PATH, span.text, None, None))
        for tok in number_tokens(unit):
            if tok.hedged or tok.raw in skip or tok.value in skip:
                continue
            value = Decimal(tok.value)
            if value < 10 or (value == value.to_integral_value() and int(value) in _YEAR):
                continue
            after, before = unit[tok.end :], unit[: tok.start]
            if _BUDGET_AFTER.match(after) or _BUDGET_BEFORE.search(before):
                continue
            if after.startswith("%") and value == 100:
                continue
            if source.has_number(tok.value):
                continue
            skip.add(tok.value)
            out.append(Distortion(INVENTED_NUMBER, tok.raw, None, None))
    return out


# stems too common to show that a unit talks about a fact
_STOP_STEMS = {
    stem(w)
    for w in """the and for that this with from was were are has have had not but its into then than when
    which what where who how why all any can could should would will just only also more most some such
    there their them they our out use used using one two fix file files code test tests run""".split()
}


def is_exact_key(key: str) -> bool:
    """A key that names something literal (path, number, symbol): counts as relevant evidence
    for precision wherever it appears."""
    return is_path_key(key) or is_number_key(key) or is_symbol_key(key) or (" " in key.strip() and len(key) >= 12)


__all__ = [
    "Distortion",
    "LiteralResult",
    "SourceIndex",
    "Span",
    "SummaryText",
    "find_key",
    "find_key_in",
    "find_keys",
    "invented",
    "is_exact_key",
    "key_pattern",
    "literal_match",
    "wrong_qualifier",
    "match_key_sets",
    "missing_keys",
    "near_misses",
    "source_index",
]
