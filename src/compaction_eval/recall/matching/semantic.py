"""Semantic matcher (intent / constraint / decision / attempt / next_step), offline.

DESIGN.md 4: a paraphrase counts; a negation, an inversion or a vaguer version that loses
what makes the fact actionable does not; for decisions and attempts the reason is part of
the fact. The matcher turns that into checks on candidate summary units (a unit, or a window
of two adjacent units):

0. a window of two units only counts when neither unit says another fact better (one
   fact's reason must not be lent to its neighbour).
1. keys: some key set of the fact occurs in the summary, and the candidate holds a key of
   such a complete set (a vaguer version lacks them). Plain-word keys tolerate inflection
   (`tests`/`test`).
2. similarity: TF-IDF cosine of the candidate and the fact text, the mean of word 1-2 grams
   (stemmed, stop words removed, a few common abbreviations expanded and synonyms merged:
   pk/primary key, column/field, load/fetch) and character 3-5 grams, fitted once per sample
   on the fact texts and the summary units, at least `KEEP_THRESHOLD`.
3. negation: no word the two share is negated in one and plain in the other, unless they
   also share a negated word ("modify non-test files only" keeps "do not modify tests") or
   both negate something (a paraphrase moves its negation; a distortion adds or removes one).
   Clauses longer than `NEG_MAX` tokens are not read for it.
4. outcome (decision, attempt): the candidate reports the fact's outcome (failed/broke/error
   against worked/passed/fixed, with negation flipping it); for an attempt a candidate with
   no outcome at all has lost it.
5. reason (decision, attempt): when the fact gives a reason (`because ...`), the candidate
   shares at least `REASON_OVERLAP` of the reason's content words, one of them a word the
   statement itself does not contain.

`KEEP_THRESHOLD` and checks 6-8 were set against human judgments (labels/gold; how, in
labels/gold/README.md):
6. changed number: a candidate that gives other numbers than the fact's has distorted it.
7. weakened (constraint): a hedge ("preferably", "unless", "may", "if possible") the fact
   does not have turns a rule into a preference.
8. next_step: the candidate unit holds every key of a complete key set (one concrete step).
The negation check reads "keep X unchanged" / "X is read-only" as "do not modify X", Python's
`None` as a value, and "X failed" as "X did not happen"; the outcome check reads "could not
reproduce the crash" as a failed attempt, not as "no crash".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, pairwise

import numpy as np

from compaction_eval.contracts.labels import Fact
from compaction_eval.recall.matching.literal import (
    SummaryText,
    find_key,
    match_key_sets,
)
from compaction_eval.recall.matching.normalize import (
    english_stop_words,
    is_plain_word,
    normalize,
    number_tokens,
    stem,
)

KEEP_THRESHOLD = 0.24
"""Similarity a candidate needs to carry a fact (with keys, polarity and reason checks)."""
CATEGORY_THRESHOLDS: dict[str, float] = {}
"""Per-category thresholds that replace KEEP_THRESHOLD. Empty on purpose: a lower bar for
constraints fits the gold set's tune part but keeps constraints on code lines ("from
tidewater.recurrence import WeeklyRule" for "keep the public API unchanged")."""
RELEVANT_THRESHOLD = 0.2
"""Similarity that makes a unit relevant to some fact, for precision."""
RELEVANT_WITH_KEY_THRESHOLD = 0.1
"""The same for a unit that holds one of the fact's keys."""
HEAD_OVERLAP = 0.6
"""Share of the content words of the reason's first clause that also keeps the reason."""
REASON_OVERLAP = 0.3
"""Share of the reason's content words a decision/attempt candidate must contain."""

REASON_CATEGORIES = frozenset({"decision", "attempt"})
ALL_KEYS_CATEGORIES = frozenset({"next_step"})
"""Categories whose candidate unit must hold every key of a complete key set: a next step is
one concrete action, and a unit naming only part of it ("re-run the tests" for "add the
has_listeners check, then re-run the tests") is a vaguer step (gold set, labels/gold)."""
OUTCOME_CATEGORIES = frozenset({"decision", "attempt"})

# Negation words stay (they matter); "not", "no" etc. are handled by the polarity check.
_STOP = english_stop_words() - {"not", "no", "never", "nor", "none", "nothing", "without", "cannot"}
_TOKEN = re.compile(r"[a-z0-9_][\w./\-]*\w(?:'[a-z]+)?|[a-z0-9_](?:'[a-z]+)?|[,;:!?()]|\.(?=\s|$)")
_CLAUSE_BREAK = frozenset({",", ";", ":", "!", "?", ".", "(", ")", "but", "however", "although", "though", "while", "whereas"})
_NEG_PRE = frozenset(
    {"not", "no", "never", "without", "nor", "neither", "none", "nothing", "cannot", "non", "avoid",
     "avoids", "avoided", "avoiding", "refrain", "instead", "rather", "stop", "stopped", "dont"}
)
_NEG_POST = frozenset(
    {"untouched", "unchanged", "alone", "offlimits", "readonly", "frozen", "forbidden", "prohibited", "disallowed",
     "off", "disabled"}
)
# "keep X unchanged", "X is read-only", "X frozen" say "do not modify X": they negate the
# modifying, not X (gold set: "keep the API unchanged" against "the API must not change" or
# "the API stays as it is" was a false negation conflict when they negated X).
_NEG_MODIFY = frozenset({"untouched", "unchanged", "alone", "offlimits", "readonly", "frozen"})
# A failure word says "did not": "reproducing it failed" is "did not reproduce it".
_FAILURE = frozenset({"fail", "failed", "fails", "failing", "unsuccessful"})
_NEG_SKIP_NEXT = frozenset({"only", "just"})  # "not only ..." is no negation
_SCOPE = 4  # content words a negation reaches

_POS_OUTCOME = frozenset(
    {"worked", "works", "passed", "passes", "passing", "succeeded", "succeeds", "success", "successful",
     "successfully", "fixed", "fixes", "resolved", "resolves", "solved", "solves", "green", "ok", "verified", "confirmed"}
)
_NEG_OUTCOME = frozenset(
    {"failed", "fails", "fail", "failing", "failure", "failures", "broke", "broken", "breaks", "break", "crashed",
     "crashes", "crash", "error", "errors", "errored", "regression", "regressions", "regressed", "unsuccessful",
     "wrong", "exception", "exceptions"}
)
_OUTCOME_STEMS = frozenset(stem(w) for w in _POS_OUTCOME | _NEG_OUTCOME | {"work"})
_DETERMINER_NEG = frozenset({"no", "without", "zero"})
_OUTCOME_VERBS = frozenset({"cause", "caused", "causes", "raise", "raised", "raises", "throw", "threw", "see", "saw",
                            "get", "got", "hit", "show", "showed", "any", "more", "further", "new"})
_WORK_AUX = frozenset({"did", "does", "do", "to", "will", "would", "could", "might"})

_REASON_MARKER = re.compile(
    r"\b(?:reason(?=:)|because|since|due to|so that|in order to|given that|otherwise|as a result|caused by|as it|as they|which means)\b"
)


# ---------------------------------------------------------------------------- text analysis


@lru_cache(maxsize=16384)
def _prepare(text: str) -> str:
    norm = normalize(text)
    # keep hyphenated negations as one word; "don't" -> "dont" also catches "do not" variants
    norm = re.sub(r"\boff-limits\b", "offlimits", norm)
    norm = re.sub(r"\bread-only\b", "readonly", norm)
    norm = re.sub(r"\bnon-(?=\w)", "non ", norm)
    return norm


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_prepare(text))


def _is_negation(tok: str) -> bool:
    return tok in _NEG_PRE or tok.endswith("n't")


def _content(tok: str) -> bool:
    return tok not in _STOP and tok not in _CLAUSE_BREAK and not _is_negation(tok) and tok not in _NEG_POST and len(tok) > 1


def polarity_map(text: str) -> dict[str, set[bool]]:
    """Stem -> the polarities it occurs with (a fresh copy; see `_polarity_map`)."""
    return {k: set(v) for k, v in _polarity_map(text).items()}


@lru_cache(maxsize=16384)
def _polarity_map(text: str) -> dict[str, frozenset[bool]]:
    """Stem -> the polarities it occurs with (True: inside the scope of a negation).

    A negation (`not`, `n't`, `never`, `without`, `avoid`, `instead of`, `non-`) reaches the
    next few content words of its clause; `forbidden`, `prohibited` reach back over the
    previous ones; `untouched`, `unchanged`, `off-limits`, `read-only`, `frozen` stand for a
    negated "modify". Words are keyed by their canonical stem (synonyms merged: change/edit/
    modify), so "must not change" meets "keep unchanged".
    """
    toks = _tokens(text)
    negated = [False] * len(toks)
    extra: list[str] = []  # negated words implied by a post-marker ("unchanged": not modify)
    for i, tok in enumerate(toks):
        if _is_negation(tok):
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if nxt in _NEG_SKIP_NEXT:
                continue
            reached, j = 0, i + 1
            while j < len(toks) and reached < _SCOPE and toks[j] not in _CLAUSE_BREAK:
                if _content(toks[j]):
                    negated[j] = True
                    reached += 1
                j += 1
        elif tok in _NEG_MODIFY:
            extra.append("modify")
        elif tok in _NEG_POST:
            reached, j = 0, i - 1
            while j >= 0 and reached < _SCOPE and toks[j] not in _CLAUSE_BREAK:
                if _content(toks[j]):
                    negated[j] = True
                    reached += 1
                j -= 1
    out: dict[str, set[bool]] = {}
    for tok, neg in zip(toks, negated, strict=True):
        if _content(tok):
            out.setdefault(_polarity_key(tok), set()).add(neg)
    for word in extra:
        out.setdefault(_polarity_key(word), set()).add(True)
    return {k: frozenset(v) for k, v in out.items()}


def _prose(text: str) -> str:
    """Code spans (`...`) are not prose: their words carry no polarity."""
    return re.sub(r"`[^`\n]*`", " code_span ", text)


def key_clauses(unit: str, keys: Sequence[str] | None) -> list[str]:
    """The clauses of `unit` (split at ';' and at sentence ends) that mention one of `keys`;
    all of them when none does or no keys are given: polarity, hedges and outcomes are read
    where the fact's subject is, not in a neighbouring rule of the same line."""
    clauses = [c for c in re.split(r";\s+|(?<=[.!?])\s+(?=[A-Z])", unit) if c.strip()]
    if not keys or len(clauses) < 2:
        return [unit]
    hit = [c for c in clauses if any(has_key(normalize(c), k, True) for k in keys)]
    return hit or [unit]


def negation_conflict(fact_text: str, candidate: str | Sequence[str], keys: Sequence[str] | None = None) -> bool:
    """True when the candidate negates what the fact asserts, or asserts what it negates.

    Compares what the two say, not why: the parts before their reason markers (`split_reason`),
    since a reason is often paraphrased with its own negations ("so that it cannot break"
    against "because it crashed"). A shared word with opposite polarity is a conflict unless
    the two also share a negated word (then the negation moved within a paraphrase: "do not
    modify tests" and "only touch non-test files"), or both negate something: a paraphrase
    moves its negation to another word ("never produced a file" and "the file never
    appeared"), while a distortion adds or removes one. `candidate` may be several units (a
    window): each is split at its own reason marker.
    """
    units = (candidate,) if isinstance(candidate, str) else tuple(candidate)
    return _negation_conflict(fact_text, units, None if keys is None else tuple(keys))


NEG_MAX = 30
"""Clauses longer than this many tokens are not read for negation conflicts: in a long prose
sentence the scope of a negation is too often another claim."""


@lru_cache(maxsize=16384)
def _negation_conflict(fact_text: str, units: tuple[str, ...], keys: tuple[str, ...] | None) -> bool:
    fact_what = split_reason(_code_none(_prose(fact_text)))[0]
    candidate = [c for u in units for c in key_clauses(_prose(u), keys) if len(_tokens(c)) <= NEG_MAX]
    f = _polarity_map(fact_what)
    c: dict[str, set[bool]] = {}
    cand_whats = []
    for unit in candidate:
        what = split_reason(_code_none(unit))[0]
        cand_whats.append(what)
        for st, polarities in _polarity_map(what).items():
            c.setdefault(st, set()).update(polarities)
    shared = f.keys() & c.keys()
    if any(True in f[s] and True in c[s] for s in shared):
        return False
    if any(True in p for p in f.values()) and any(True in p for p in c.values()):
        return False
    fails = {"fact": _failure_stems(fact_what), "cand": set().union(*map(_failure_stems, cand_whats))}
    for s in shared:
        if not (len(f[s]) == 1 and len(c[s]) == 1 and f[s] != c[s]):
            continue
        # "X failed" says "X did not happen": a negation on the other side is the same claim
        # (not for the failure word itself: "did not fail" against "failed" is a conflict)
        plain_side = "fact" if f[s] == {False} else "cand"
        if not fails[plain_side] or s in fails[plain_side]:
            return True
    return False


def _polarity_key(tok: str) -> str:
    """The canonical stem (synonyms merged), except for outcome words: "crash" and "fail"
    are one synonym for similarity, but "did not reproduce the crash" is no failure."""
    st = stem(tok)
    return st if st in _OUTCOME_STEMS else _SYNONYMS.get(st, st)


def _failure_stems(text: str) -> set[str]:
    return {stem(t) for t in _tokens(text) if t in _FAILURE}


def _code_none(text: str) -> str:
    """Python's `None` inside a sentence (`[None, path]`, "None stays first") is a value, not
    a negation; a sentence-initial "None of ..." still is one."""

    def sub(m: re.Match[str]) -> str:
        before = text[: m.start()].rstrip()
        return m.group(0) if not before or before[-1] in ".!?:-*#>\n" else "none_value"

    return re.sub(r"\bNone\b", sub, text)


def outcome(text: str) -> tuple[int, int]:
    """(positive, negative) outcome words of `text`; a negation just before flips one
    (`did not work` is negative, `did not fail` and `no errors` positive)."""
    toks = _tokens(text)
    pos = neg = 0
    for i, tok in enumerate(toks):
        before = toks[max(0, i - 3) : i]
        if tok in _POS_OUTCOME:
            sign = 1
        elif tok in _NEG_OUTCOME:
            sign = -1
        elif tok == "work" and any(_is_negation(b) or b in _WORK_AUX for b in before):
            sign = 1
        else:
            continue
        clause = []
        for b in reversed(before):
            if b in _CLAUSE_BREAK:
                break
            clause.append(b)
        if _negates_outcome(clause):
            sign = -sign
        if sign > 0:
            pos += 1
        else:
            neg += 1
    return pos, neg


def _negates_outcome(clause: list[str]) -> bool:
    """A negation in `clause` (the words just before an outcome word, nearest first) that
    applies to the outcome word: "did not fail", "no errors", "no test failures"; not one
    that negates another verb whose object it is ("could not reproduce the crash")."""
    for k, b in enumerate(clause):
        if _is_negation(b):
            between = [w for w in clause[:k] if _content(w) and w not in _OUTCOME_VERBS]
            return not between or (b in _DETERMINER_NEG and len(between) <= 1)
    return False


_FAILED_AUX = frozenset({"did", "could", "does", "do", "was", "were", "is"})


HEDGE_CATEGORIES = frozenset({"constraint"})
_HEDGE = re.compile(
    r"\b(?:preferably|ideally|if possible|where possible|where practical|if practical|unless|may|might|"
    r"can be|is fine|are fine|fine to|allowed to|optional|optionally|try to|when needed|if feasible)\b"
)


def weakened(fact_text: str, candidate_norm: str) -> bool:
    """True when the candidate hedges a rule the fact states flatly ("should preferably not
    be changed unless ...", "may run backfills when needed" for "no backfills without
    asking"): a hedge word the candidate has and the fact does not."""
    fact_hedges = set(_HEDGE.findall(normalize(fact_text)))
    for m in _HEDGE.finditer(candidate_norm):
        if m.group(0) in fact_hedges:
            continue
        # "nothing may be touched", "nothing can be cloned": a negated permission is a rule
        clause = re.split(r"[,;:.!?()]", candidate_norm[: m.start()])[-1]
        if re.search(r"\b(?:not|no|nothing|never|none|nobody|cannot)\b|n't\b", clause):
            continue
        # "I may only edit source files", "only source files may change", "allowed to edit the
        # source but not the tests": a permission with its limit is the rule itself
        if m.group(0) in _PERMISSIONS:
            rest = re.split(r"[;:.!?()]", candidate_norm[m.end():])[0]
            if re.search(r"\bonly\b", clause) or re.match(r"\s*only\b", rest) or re.search(r"\bbut (?:not|never)\b", rest):
                continue
        return True
    return False


_PERMISSIONS = frozenset({"may", "can be", "allowed to", "fine to", "is fine", "are fine"})


def changed_number(fact_text: str, units_norm: Sequence[str]) -> bool:
    """True when the candidate gives a number where the fact has another one: it has a
    number the fact lacks and lacks one the fact has, and no unit of it holds all the
    fact's numbers ("dedup removed 18 duplicates" for "removed 0 duplicates"). Numbers of
    meaning facts are then distorted like those of `number` facts."""
    fact_norm = _MESSAGE_REF.sub(" ", normalize(fact_text))
    want = {t.value for t in number_tokens(fact_norm)}
    if not want:
        return False
    got = {t.value for u in units_norm for t in number_tokens(u)}
    # "a 2-block reply" says "two blocks": number words count for the overlap
    said = want | _number_words(fact_norm)
    return bool(got - want) and bool(want - got) and not (said & (got | {w for u in units_norm for w in _number_words(u)}))


_MESSAGE_REF = re.compile(r"\b(?:messages?|msgs?|indices|index)\s+\d+(?:\s*(?:,|and|-|to)\s*\d+)*")
"""A label's pointer into the trace ("rejected at message 82", "messages 36, 44, 58"): where
the fact was seen, not part of it."""
_WORD_NUMBERS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def _number_words(norm: str) -> set[str]:
    return {_WORD_NUMBERS[w] for w in re.findall(r"[a-z]+", norm) if w in _WORD_NUMBERS}


_NEG_PHRASE = re.compile(r"\b(?:(?:made|makes|make) (?:little|no) difference|no effect|to no avail|unreliable|flaky)\b")
_POS_PHRASE = re.compile(r"\b(?:reliable|reliably|confirming|confirms|holds up)\b")


def _attempt_outcome(text: str, category: str) -> tuple[int, int]:
    """`outcome`, and for an attempt each "did not / could not / didn't <verb>" as one more
    negative ("did not reproduce the crash", "didn't help": the attempt failed)."""
    pos, neg = outcome(text)
    norm = normalize(text)
    neg += len(_NEG_PHRASE.findall(norm))
    pos += len(_POS_PHRASE.findall(norm))
    if category != "attempt":
        return pos, neg
    toks = _tokens(text)
    for i, tok in enumerate(toks[:-1]):
        nxt = toks[i + 1]
        if _content(nxt) and _polarity_key(nxt) not in _OUTCOME_STEMS and nxt not in ("only", "just"):
            if tok in ("didn't", "couldn't", "doesn't", "wasn't", "weren't", "cannot", "can't"):
                neg += 1
            elif tok == "not" and i and toks[i - 1] in _FAILED_AUX:
                neg += 1
    return pos, neg


def _outcome_sign(counts: tuple[int, int]) -> int:
    pos, neg = counts
    return (pos > neg) - (neg > pos)


def split_reason(text: str) -> tuple[str, str]:
    """(what, why): the fact text split at its first reason marker (`because`, `since`, ...)."""
    norm = normalize(text)
    lead = re.match(r"(?:because|since|as)\s+([^,;]+),\s*(.+)", norm)
    if lead:  # "Because X, Y": Y is what, X is why
        return lead.group(2).strip(" ,;"), lead.group(1).strip()
    m = _REASON_MARKER.search(norm)
    if not m:
        return norm, ""
    return norm[: m.start()].strip(" ,;"), norm[m.end() :].strip(" :")


_WEAK_STEMS = {stem(w) for w in ("the", "use", "used", "make", "made", "call", "called", "need", "needed", "code")}


def content_stems(text: str) -> set[str]:
    """Stems of the content words of `text` (stop words and negations removed)."""
    return {_canonical(t) for t in _tokens(_expand(normalize(text))) if _content(t)} - _WEAK_STEMS


def reason_overlap(reason: str, candidate: str) -> float:
    """Share of the reason's content stems that occur in the candidate."""
    want = content_stems(reason)
    if not want:
        return 1.0
    return len(want & content_stems(candidate)) / len(want)


def reason_kept(reason: str, candidate: str, what: str = "") -> bool:
    """The candidate gives the fact's reason: it shares `REASON_OVERLAP` of the reason's
    content words, and at least one that the statement `what` does not already contain (a
    candidate that only restates the fact has those without giving any reason)."""
    own = content_stems(reason) - content_stems(what)
    if own and not own & content_stems(candidate):
        return False
    if reason_overlap(reason, candidate) >= REASON_OVERLAP:
        return True
    # a long reason is often kept by its head clause alone ("aware timestamps are now the
    # contract: the API tests rely on the offset, ..."): that clause, fully enough
    head = re.split(r"[:;,(]|\s-\s|\band\b", normalize(reason), maxsplit=1)[0]
    head_stems = content_stems(head) - content_stems(what)
    return len(head_stems) >= 2 and reason_overlap(head, candidate) >= HEAD_OVERLAP


# ---------------------------------------------------------------------------- TF-IDF


# Words a summariser swaps for one another in software-engineering prose. Mapped to one
# stem before TF-IDF so that "load only PKs" meets "fetch only the primary key". Outcome
# words of opposite sense are never merged (the outcome check needs them apart anyway).
_SYNONYM_GROUPS = {
    "modify": "modify change edit touch alter update rewrite",
    "field": "field column attribute",
    "fetch": "fetch load select retrieve query read access",
    "listener": "listener receiver handler hook callback",
    "fail": "fail failure error errored crash break broke broken blow raise",
    "pass": "pass succeed success successful work",
    "only": "only just solely merely",
    "need": "need require necessary",
    "all": "all every full whole entire unrestricted",
    "config": "config configuration setting settings cfg",
    "source": "source library implementation",
    "run": "run execute rerun launch",
    "check": "check verify confirm ensure validate",
    "link": "link pointer ptr",
    "delete": "delete remove drop",
    "test": "test spec",
}
_SYNONYMS = {stem(w): canon for canon, words in _SYNONYM_GROUPS.items() for w in words.split()}
# Abbreviations, expanded outside identifiers and paths (`opts.pk.name` stays).
_ABBREVIATIONS = {
    "pk": "primary key", "pks": "primary keys", "gfk": "generic foreign key", "gfks": "generic foreign keys",
    "fk": "foreign key", "fks": "foreign keys", "mti": "multi-table inheritance", "repo": "repository",
    "env": "environment", "deps": "dependencies", "msg": "message", "args": "arguments", "impl": "implementation",
}
_ABBREVIATION = re.compile(r"(?<![\w/.\-])(" + "|".join(_ABBREVIATIONS) + r")(?![\w/.\-]\w|\w)")


def _expand(text: str) -> str:
    return _ABBREVIATION.sub(lambda m: _ABBREVIATIONS[m.group(1)], text)


def _canonical(tok: str) -> str:
    st = stem(tok)
    return _SYNONYMS.get(st, st)


def _word_analyzer(text: str) -> list[str]:
    words = [_canonical(t) for t in _TOKEN.findall(text) if t not in _STOP and t not in _CLAUSE_BREAK]
    return words + [f"{a} {b}" for a, b in pairwise(words)]


class SemanticIndex:
    """TF-IDF similarities of some texts (facts, avoid items) to a summary's candidates.

    Args:
        summary: the summary; its units, and windows of two adjacent units, are candidates.
        texts: the fact texts to compare (one row each in `sim`).

    Fitted once per sample on `texts` plus the summary units: each document is analysed
    once (a window's counts are the sum of its two units' counts), then weighted like
    scikit-learn's `TfidfVectorizer(sublinear_tf=True)` (smooth idf, l2 norm).
    `sim[i, c]` is the mean cosine of word 1-2 grams and character 3-5 grams.
    """

    def __init__(self, summary: SummaryText, texts: Sequence[str]):
        self.summary = summary
        units = summary.units_norm
        self.candidates: list[str] = list(units) + [f"{a} {b}" for a, b in pairwise(units)]
        # candidate -> the unit indices it spans
        self.spans: list[tuple[int, ...]] = [(i,) for i in range(len(units))] + [
            (i, i + 1) for i in range(len(units) - 1)
        ]
        self.texts = [normalize(t) for t in texts]
        if not self.candidates or not self.texts:
            self.sim = np.zeros((len(self.texts), len(self.candidates)))
            return
        docs = self.texts + list(units)
        sims = [_cosines([_word_counts(d) for d in docs], len(self.texts)),
                _cosines([_char_counts(d) for d in docs], len(self.texts))]
        self.sim = 0.5 * sims[0] + 0.5 * sims[1]

    def claimed_elsewhere(self, row: int, c: int) -> bool:
        """True for a window one of whose units says another text (fact) better, and well
        enough to be kept for it: a window may join a fact's two sentences, not lend one
        fact's reason to its neighbour."""
        span = self.spans[c]
        if len(span) < 2:
            return False
        for u in span:
            column = self.sim[:, u]
            others = np.delete(column, row)
            if len(others) and others.max() >= KEEP_THRESHOLD and others.max() > column[row]:
                return True
        return False

    def unit_max(self, rows: Sequence[int] | None = None) -> np.ndarray:
        """Per unit, the best similarity to any of `rows` (all texts by default)."""
        n = len(self.summary.units_norm)
        if not n or not len(self.texts):
            return np.zeros(n)
        block = self.sim[:, :n] if rows is None else self.sim[list(rows), :n]
        return block.max(axis=0) if len(block) else np.zeros(n)


GRAM_COUNTS_CACHED = 2048
"""Documents whose gram counts are kept: what recurs is the facts and context units of the
samples running now (the prompts of one point share its context; fact texts recur for every
summary of their trace). Each entry is a Counter of some hundred grams, about 13 kB: 16,384
of them were 200 MB, the most a large run held."""


@lru_cache(maxsize=GRAM_COUNTS_CACHED)
def _word_counts(doc: str) -> Counter[str]:
    """Word 1-2 gram counts of a normalised text (cached: fact texts recur for every summary)."""
    return Counter(_word_analyzer(_expand(doc)))


@lru_cache(maxsize=GRAM_COUNTS_CACHED)
def _char_counts(doc: str) -> Counter[str]:
    """Character 3-5 gram counts within words padded with a space (scikit-learn's `char_wb`)."""
    padded = [f" {word} " for word in _expand(doc).split()]
    return Counter([w[i : i + n] for w in padded for n in (3, 4, 5) for i in range(len(w) - n + 1)])


def _cosines(counts: list[Counter[str]], n_texts: int) -> np.ndarray:
    """Cosine similarities of the first `n_texts` count vectors (the texts) to the others
    (the units) and to each pair of adjacent units, weighted like scikit-learn's
    `TfidfVectorizer(sublinear_tf=True)`: smooth idf over these documents, 1 + log(tf), l2.

    Only the texts' grams can contribute to a product, so the candidate matrix is built over
    those columns; candidate lengths are computed from all their grams (sparsely).
    """
    # columns in order of first occurrence: the texts' grams get the first indices
    n_text_cols = len(dict.fromkeys(chain.from_iterable(counts[:n_texts])))
    order = dict.fromkeys(chain.from_iterable(counts))
    vocab = {gram: i for i, gram in enumerate(order)}
    sizes = [len(c) for c in counts]
    total = sum(sizes)
    rows_a = np.repeat(np.arange(len(counts)), sizes)
    cols_a = np.fromiter(map(vocab.__getitem__, chain.from_iterable(counts)), dtype=np.int64, count=total)
    vals_a = np.fromiter(chain.from_iterable(c.values() for c in counts), dtype=float, count=total)
    n_vocab = max(1, len(vocab))
    idf = np.log((1 + len(counts)) / (1 + np.bincount(cols_a, minlength=n_vocab))) + 1.0

    # candidates: units 0..n-1, then window i = units i and i+1 (counts added)
    n_units = len(counts) - n_texts
    unit = rows_a >= n_texts
    u_rows, u_cols, u_vals = rows_a[unit] - n_texts, cols_a[unit], vals_a[unit]
    first, second = u_rows < n_units - 1, u_rows > 0
    c_rows = np.concatenate([u_rows, u_rows[first] + n_units, u_rows[second] - 1 + n_units])
    c_cols = np.concatenate([u_cols, u_cols[first], u_cols[second]])
    c_vals = np.concatenate([u_vals, u_vals[first], u_vals[second]])
    keys, where = np.unique(c_rows * n_vocab + c_cols, return_inverse=True)
    summed = np.bincount(where, weights=c_vals)
    c_rows, c_cols = keys // n_vocab, keys % n_vocab
    n_candidates = n_units + max(0, n_units - 1)
    candidates = _unit_rows(c_rows, c_cols, summed, idf, n_candidates, n_text_cols)

    text = ~unit
    texts = _unit_rows(rows_a[text], cols_a[text], vals_a[text], idf, n_texts, n_text_cols)
    return texts @ candidates.T


def _unit_rows(rows: np.ndarray, cols: np.ndarray, tf: np.ndarray, idf: np.ndarray, n_rows: int, n_cols: int) -> np.ndarray:
    """Dense rows of (1 + log tf) * idf over the first `n_cols` columns, each scaled by its
    length over all columns."""
    weights = (1.0 + np.log(tf)) * idf[cols]
    lengths = np.sqrt(np.bincount(rows, weights=weights * weights, minlength=n_rows))
    lengths[lengths == 0] = 1.0
    out = np.zeros((n_rows, max(1, n_cols)))
    keep = cols < n_cols
    out[rows[keep], cols[keep]] = weights[keep] / lengths[rows[keep]]
    return out


@dataclass
class SemanticResult:
    """Verdict of the semantic matcher on one fact.

    Args:
        kept: some candidate passed every check.
        evidence: that candidate (units as written), or the best rejected one.
        similarity: its similarity to the fact text (the best one when none passed).
        note: why it was not kept (keys missing, negated, inverted outcome, reason lost, ...).
        units: the unit indices of the evidence candidate.
    """

    kept: bool
    evidence: str | None
    similarity: float
    note: str | None = None
    units: tuple[int, ...] = ()


@lru_cache(maxsize=65536)
def has_key(text_norm: str, key: str, inflect: bool) -> bool:
    """`key` occurs in normalised `text_norm`; with `inflect`, a plain word key also as an
    inflection (`tests` in "the test")."""
    if find_key(text_norm, key):
        return True
    k = normalize(key)
    if inflect and is_plain_word(k):
        target = stem(k)
        return any(stem(w) == target for w in re.findall(r"[a-z]+", text_norm))
    return False


def semantic_match(fact: Fact, row: int, index: SemanticIndex, *, threshold: float | None = None) -> SemanticResult:
    """The meaning rule of DESIGN.md 4 for one fact.

    Args:
        fact: a fact of a meaning category.
        row: its row in `index` (the position of its text in `SemanticIndex(texts=...)`).
        index: the sample's fitted index.
        threshold: similarity a candidate needs; by default CATEGORY_THRESHOLDS for the
            fact's category, else KEEP_THRESHOLD.
    """
    summary = index.summary
    limit = CATEGORY_THRESHOLDS.get(fact.category, KEEP_THRESHOLD) if threshold is None else threshold
    sims = index.sim[row] if len(index.candidates) else np.zeros(0)
    best = float(sims.max()) if len(sims) else 0.0
    if not index.candidates:
        return SemanticResult(False, None, 0.0, "summary has no units")
    complete = [ks for ks in fact.key_sets if match_key_sets(summary, [ks], inflect=True)]
    if not complete:
        return SemanticResult(False, _evidence(index, int(sims.argmax())), best, "keys missing")
    keys = {k for ks in complete for k in ks}
    what, why = split_reason(fact.text)
    check_reason = fact.category in REASON_CATEGORIES and bool(why)
    fact_outcome = _outcome_sign(_attempt_outcome(fact.text, fact.category)) if fact.category in OUTCOME_CATEGORIES else 0
    first_failure: tuple[int, str] | None = None
    for c in np.argsort(-sims, kind="stable"):
        c = int(c)
        if sims[c] < limit:
            break
        cand = index.candidates[c]
        failure = None
        if index.claimed_elsewhere(row, c):
            failure = "window spans another fact"
        elif not any(has_key(cand, k, True) for k in keys):
            failure = "keys not in the matching unit"
        elif fact.category in ALL_KEYS_CATEGORIES and not any(all(has_key(cand, k, True) for k in ks) for ks in complete):
            failure = "the step's keys are not all in the matching unit"
        elif negation_conflict(fact.text, [summary.units[i] for i in index.spans[c]], sorted(keys)):
            failure = "negated"
        elif changed_number(fact.text, [summary.units_norm[i] for i in index.spans[c]]):
            failure = "changed number"
        elif fact.category in HEDGE_CATEGORIES and weakened(fact.text, cand):
            failure = "weakened"
        elif fact_outcome:
            got = _attempt_outcome(cand, fact.category)
            sign = _outcome_sign(got)
            if sign == -fact_outcome:
                failure = "inverted outcome"
            elif sign == 0 and (fact.category == "attempt" or got != (0, 0)):
                failure = "outcome lost"
        if failure is None and check_reason and not reason_kept(why, cand, what):
            failure = "reason lost"
        if failure is None:
            return SemanticResult(True, _evidence(index, c), float(sims[c]), None, index.spans[c])
        if first_failure is None:
            first_failure = (c, failure)
    if first_failure is None:
        return SemanticResult(False, _evidence(index, int(sims.argmax())), best, "below similarity threshold")
    c, failure = first_failure
    return SemanticResult(False, _evidence(index, c), float(sims[c]), failure, index.spans[c])


def _evidence(index: SemanticIndex, c: int) -> str:
    return " ".join(index.summary.units[i] for i in index.spans[c])


__all__ = [
    "CATEGORY_THRESHOLDS",
    "KEEP_THRESHOLD",
    "RELEVANT_THRESHOLD",
    "RELEVANT_WITH_KEY_THRESHOLD",
    "SemanticIndex",
    "SemanticResult",
    "changed_number",
    "weakened",
    "content_stems",
    "has_key",
    "negation_conflict",
    "outcome",
    "polarity_map",
    "reason_kept",
    "reason_overlap",
    "semantic_match",
    "split_reason",
]
