"""Text normalisation shared by the matchers: one canonical form for summary, keys and history.

The canonical form is `traces.fold` (lower case, whitespace collapsed) plus three things a
summariser changes without changing meaning: typographic quotes and dashes, and thousands
separators in numbers (`1,024` is `1024`). Identifiers are left alone: underscores, dots and
slashes are significant, so `related_objects` never matches `related objects`.

Also here: number tokens (with their hedges, `about 300`), path-like tokens, identifier
tokens, summary units (bullets, lines, sentences) and a bounded edit distance.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from compaction_eval.contracts.traces import fold
from compaction_eval.recall.matching.stop_words import ENGLISH_STOP_WORDS


def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words, from the vendored copy (matching/stop_words.py):
    importing scikit-learn costs about a second, which `compaction-eval score` on one summary
    cannot afford, and its list lives in a private module that may move.

    >>> {"the", "and"} <= english_stop_words() and "error" not in english_stop_words()
    True
    """
    return ENGLISH_STOP_WORDS

# ---------------------------------------------------------------------------- canonical text

_TRANSLATE = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": "'", "\u201d": "'", "\u201e": "'", '"': "'",
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "\u00a0": " ", "\u2009": " ", "\u202f": " ",
        "\u2248": "~",  # "≈ 300" is a hedge like "~300"
    }
)
# 1,024 / 12,345,678 (not "f(1,2)", not a list "1, 2, 3": no space after the comma)
_THOUSANDS = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d]|,\d)")


def _drop_commas(m: re.Match[str]) -> str:
    return m.group(0).replace(",", "")


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """The canonical form keys and texts are compared in.

    Args:
        text: any text (a summary, a key, a fact).

    Double quotes become single quotes (so `"utf-8"` matches `'utf-8'`), dashes become `-`,
    thousands separators are dropped, then the text is case- and whitespace-folded.
    """
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    return fold(_THOUSANDS.sub(_drop_commas, text))


def normalize_history(folded: str) -> str:
    """`normalize` for text already folded by `traces.fold` (the history): skips NFKC and
    re-folding, which matter little there and cost time on long histories."""
    return _THOUSANDS.sub(_drop_commas, folded.translate(_TRANSLATE))


# ---------------------------------------------------------------------------- numbers


def canonical_number(raw: str) -> str | None:
    """`1,024` -> `1024`, `347.0` -> `347`, `0.50` -> `0.5`, `007` -> `7`; None if not a number.

    Distinct numbers stay distinct: `3.47` and `347` and `3470` all differ.

    >>> canonical_number("1,024"), canonical_number("347.0"), canonical_number("0.50")
    ('1024', '347', '0.5')
    >>> canonical_number("3470") == canonical_number("347"), canonical_number("about")
    (False, None)
    """
    s = raw.replace(",", "").strip()
    if not s or not re.fullmatch(r"\d+(?:\.\d+)?", s):
        return None
    try:
        value = Decimal(s)
    except InvalidOperation:  # pragma: no cover - guarded by the regex
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def significant_digits(canonical: str) -> str:
    """The digits without decimal point and leading/trailing zeros: 347, 3.47, 3470 -> `347`."""
    return canonical.replace(".", "").strip("0") or "0"


HEDGES = (
    "about", "around", "approximately", "approx.", "approx", "roughly", "nearly", "almost",
    "circa", "ca.", "some", "over", "under", "more than", "less than", "at least", "at most",
    "up to", "close to",
)
_HEDGE_RE = (
    r"(?<![\w])(?:" + "|".join(re.escape(h) for h in sorted(HEDGES, key=len, reverse=True)) + r")\s+|~\s*"
)
# A standalone number: not part of an identifier (python3, utf-8, 0xed, v1.3), a version
# (3.6.8), a time (11:03), a date, a negative number or a range (231-245: neither is read).
_NUMBER = re.compile(
    rf"(?P<hedge>{_HEDGE_RE})?(?<![\w.\-/:\\])(?P<num>\d+(?:\.\d+)?)(?P<tail>\+|-ish)?(?![\w/\\]|\.\d|:\d|-\d)"
)
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)*")


@dataclass(frozen=True)
class NumberToken:
    """A standalone number in normalised text.

    Args:
        value: canonical form (`canonical_number`).
        raw: as written (after normalisation), hedge included: `about 300`.
        start, end: span of the number itself in the normalised text.
        hedged: written with a hedge (`about`, `~`, `roughly`, `300+`).
    """

    value: str
    raw: str
    start: int
    end: int
    hedged: bool


def number_tokens(norm: str) -> list[NumberToken]:
    """Standalone numbers of normalised text `norm`, in order."""
    return list(_number_tokens(norm))


@lru_cache(maxsize=16384)
def _number_tokens(norm: str) -> tuple[NumberToken, ...]:
    out = []
    for m in _NUMBER.finditer(norm):
        value = canonical_number(m.group("num"))
        if value is None:
            continue
        hedged = bool(m.group("hedge")) or bool(m.group("tail"))
        out.append(NumberToken(value, m.group(0).strip(), m.start("num"), m.end("num"), hedged))
    return tuple(out)


def all_numbers(norm: str) -> set[str]:
    """Every number that occurs anywhere in `norm`, also inside identifiers and versions
    (`python3.6` gives 3.6, 3 and 6): the generous side used to decide "seen in the history"."""
    out: set[str] = set()
    for m in _ANY_NUMBER.finditer(norm):
        token = m.group(0)
        parts = token.split(".")
        candidates = {token, *parts}
        candidates.update(".".join(parts[i : i + 2]) for i in range(len(parts) - 1))
        for c in candidates:
            v = canonical_number(c)
            if v is not None:
                out.add(v)
    return out


def is_number_key(key: str) -> bool:
    """A key that is just a number (`347`, `1,024`, `3.47`)."""
    return canonical_number(normalize(key)) is not None


# ---------------------------------------------------------------------------- paths, identifiers

FILE_EXTENSIONS = frozenset(
    """py pyc pyi pyx ipynb js jsx mjs cjs ts tsx json jsonl yaml yml toml cfg ini conf env md rst txt
    c h cc cpp hpp cxx go rs java kt kts scala rb php cs swift m mm sh bash zsh fish ps1 bat sql
    html htm css scss sass less vue svelte xml csv tsv log lock gradle proto graphql tf mk
    cmake dockerfile gz zip tar whl egg so dll dylib exe bin dat db sqlite pkl npy npz pt
    png jpg jpeg gif svg pdf mo po tpl j2 jinja html5 diff patch orig bak rej out err lst""".split()
)
_URL = re.compile(r"https?://[^\s<>'`()\[\]]+")
_PATHLIKE = re.compile(r"(?<![\w@.\-/])(?:~|\.{1,2})?/?[\w.\-]+(?:/[\w.\-]+)+/?|(?<![\w@.\-/])[\w\-]+(?:\.[\w\-]+)*\.[a-z][a-z0-9]{0,7}\b")


def is_path_like(token: str) -> bool:
    """A token that names a file or directory, not prose (`and/or`, `pre/post`, `e.g.`).

    Paths: a URL; or a token with a known file extension (`deletion.py`); or one with at
    least two slashes (`django/db/models`); or an absolute or `./`, `~/` path.
    """
    t = token.strip().rstrip(".,;:")
    if _URL.fullmatch(t):
        return True
    last = t.rstrip("/").rsplit("/", 1)[-1]
    ext = last.rsplit(".", 1)[-1] if "." in last.lstrip(".") else ""
    if ext and ext in FILE_EXTENSIONS and re.search(r"[a-z_]", last.rsplit(".", 1)[0] or "x"):
        return True
    segments = [s for s in t.split("/") if s]
    if not segments or not any(re.search(r"[a-z]", s) for s in segments):
        return False
    if t.startswith(("/", "./", "../", "~/")) and len(segments) >= 1 and len(t) > 3:
        return True
    return t.count("/") >= 2 and len(segments) >= 3


@dataclass(frozen=True)
class Span:
    text: str
    start: int
    end: int


def path_tokens(norm: str) -> list[Span]:
    """Path-like tokens (and URLs) of normalised text, trailing punctuation removed."""
    return list(_path_tokens(norm))


@lru_cache(maxsize=16384)
def _path_tokens(norm: str) -> tuple[Span, ...]:
    out: list[Span] = []
    taken: list[tuple[int, int]] = []
    for m in _URL.finditer(norm):
        t = m.group(0).rstrip(".,;:!?")
        out.append(Span(t, m.start(), m.start() + len(t)))
        taken.append((m.start(), m.end()))
    for m in _PATHLIKE.finditer(norm):
        if any(a <= m.start() < b for a, b in taken):
            continue
        t = m.group(0).rstrip(".,;:!?-")
        if is_path_like(t):
            out.append(Span(t, m.start(), m.start() + len(t)))
    out.sort(key=lambda s: s.start)
    return tuple(out)


def is_path_key(key: str) -> bool:
    """A key that names a path or file (`django/db/models/deletion.py`, `mysql/base.py`)."""
    k = normalize(key)
    if " " in k:
        return False
    return is_path_like(k) or ("/" in k and bool(re.search(r"[a-z]", k)))


_IDENT = re.compile(r"(?<![\w.])[a-z_][\w]*(?:\.[a-z_][\w]*)*(?:\(\))?")


def identifier_tokens(norm: str) -> list[Span]:
    """Identifier-like tokens (`related_objects`, `collector.related_objects`, `unicodedecodeerror`)."""
    return [Span(m.group(0), m.start(), m.end()) for m in _IDENT.finditer(norm)]


def is_symbol_key(key: str) -> bool:
    """A code symbol: one token with an underscore, a dot, a call `()` or inner capitals."""
    k = key.strip()
    if " " in k or is_number_key(k) or is_path_key(k):
        return False
    return bool(re.search(r"_|\.|\(\)|[a-z][A-Z]|[A-Z]{2}", k)) and bool(re.search(r"[A-Za-z]", k))


def is_plain_word(key: str) -> bool:
    """A lower-case English-looking word (`tests`, `delete`): may be inflected in prose."""
    return bool(re.fullmatch(r"[a-z]{3,}", key.strip()))


# ---------------------------------------------------------------------------- words

WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")


_STEM_EXCEPTIONS = {"used": "use", "uses": "use", "using": "use", "needed": "need", "needs": "need"}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude English stemmer, enough to equate `modify/modified/modifying`, `test/tests`,
    `work/worked/works`, `fix/fixes/fixed`. Identifiers (with `_` or digits) are kept."""
    w = word.lower()
    if len(w) <= 3 or not w.isalpha():
        return w
    if w in _STEM_EXCEPTIONS:
        return _STEM_EXCEPTIONS[w]
    for suffix, repl, min_rest in (
        ("sses", "ss", 2), ("ies", "y", 2), ("ied", "y", 2), ("ying", "y", 2), ("xes", "x", 2),
        ("ches", "ch", 2), ("shes", "sh", 2), ("zes", "z", 2), ("ions", "", 3), ("ion", "", 3), ("ing", "", 3), ("ed", "", 3),
        ("ly", "", 3), ("s", "", 3),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= min_rest and not (suffix == "s" and w.endswith(("ss", "us", "is"))):
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    # doubled final consonant from -ing/-ed: "stopped" -> "stopp" -> "stop"
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    return w


# ---------------------------------------------------------------------------- summary units

_HEADING = re.compile(r"^(#{1,6}\s|={3,}$|-{3,}$)")
_BOLD_LINE = re.compile(r"^(\*\*|__)[^*_]+(\*\*|__):?$")
_BULLET = re.compile(r"^(?:[-*+\u2022\u25cf>]|\d{1,3}[.)]|[a-z][.)]|\[[ xX]\])\s+")
_RULE = re.compile(r"^[\s\-*_=|:+]{3,}$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`'\"(\[*_~])")


def is_heading(line: str) -> bool:
    """A markdown heading, a bold-only line, or a short label line ending in a colon."""
    s = line.strip()
    if _HEADING.match(s) or _BOLD_LINE.match(s):
        return True
    bare = s.strip("*_ ")
    return bare.endswith(":") and len(bare.split()) <= 5 and not re.search(r"[.!?;]", bare[:-1])


def split_units(summary: str) -> list[str]:
    """The summary's units: bullets, lines and sentences, without headings or empty lines.

    Args:
        summary: the compacted text as written.

    A fenced code block is one unit; a table row is one unit (cells joined with `; `);
    a bullet or line with several sentences gives one unit per sentence.
    """
    units: list[str] = []
    code: list[str] | None = None
    for line in summary.splitlines():
        s = line.strip()
        if s.startswith("```") or s.startswith("~~~"):
            if code is None:
                code = []
            else:
                if any(c.strip() for c in code):
                    units.append("\n".join(code).strip())
                code = None
            continue
        if code is not None:
            code.append(line)
            continue
        if not s or _RULE.match(s) or is_heading(s):
            continue
        while True:  # "- 1. text", "> - text"
            m = _BULLET.match(s)
            if not m:
                break
            s = s[m.end():].strip()
        if s.startswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            s = "; ".join(c for c in cells if c)
        for sentence in _SENTENCE_END.split(s):
            sentence = sentence.strip()
            if re.search(r"\w", sentence):
                units.append(sentence)
    if code is not None and any(c.strip() for c in code):  # unclosed fence
        units.append("\n".join(code).strip())
    return units


# ---------------------------------------------------------------------------- edit distance


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of `a` and `b`, or `limit + 1` as soon as it exceeds `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    if a == b:
        return 0
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        row_min = i
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            row_min = min(row_min, current[j])
        if row_min > limit:
            return limit + 1
        previous = current
    return previous[-1] if previous[-1] <= limit else limit + 1
