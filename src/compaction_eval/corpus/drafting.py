"""Label drafting: candidate facts for one compaction point, for a person to edit.

`draft_labels(trace, at)` reads messages[0:at] and proposes facts by simple, predictable
rules: the request (intent), the human's must/never sentences (constraint), the paths and
code symbols mentioned most (artifact), error lines (bug), test counts (number), and the
agent's sentences with decision, attempt and next-step cue phrases. Every key is copied from
the message it came from, so the draft lints clean; the text of each fact is the sentence it
was found in. Keys follow the key rule of docs/labels.md: an anchor of the sentence (a path, a
code symbol, an identifier, quoted text, a number) or, failing that, its rarest distinctive
word, never a phrase, a cue word (`must`) or a word found all over the trace. The result is marked `labelled_by: draft`: `lint` warns until a person has
checked it, cut what is noise and written what the rules cannot see.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from compaction_eval.contracts.labels import SCHEMA as LABELS_SCHEMA
from compaction_eval.contracts.labels import labels_yaml
from compaction_eval.contracts.traces import Trace, fold, message_text
from compaction_eval.corpus.keylint import COMMON_WORDS, is_anchor, is_generic

MAX_FACTS = 14

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w-]+\.(?:py|pyi|js|ts|tsx|go|rs|java|rb|c|h|cpp|toml|cfg|ini|yaml|yml|json|rst|md|txt|sh))\b")
_SYMBOL = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w{3,})")
_BACKTICK = re.compile(r"`([A-Za-z_][\w.]{3,}(?:\(\))?)`")
_ERROR = re.compile(r"^\s*(?:E\s+)?([A-Z]\w*(?:Error|Exception|Failure|Warning)):\s*(\S.{4,}?)\s*$", re.M)
_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|tests?)\b|\bRan (\d+) tests?\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CUES: dict[str, re.Pattern[str]] = {
    "constraint": re.compile(r"\b(must|must not|never|do not|don't|only|exactly|always|without)\b", re.I),
    "decision": re.compile(r"\b(instead|I'll use|I will use|decided|rather than|the fix is|better to|go with|approach)\b", re.I),
    "attempt": re.compile(r"\b(didn't work|did not work|still fails|still failing|failed|no luck|doesn't help|reverted)\b", re.I),
    "next_step": re.compile(r"\b(next|now I|let me|I need to|then I|remaining|todo)\b", re.I),
}


def _is_prose(message: dict[str, Any]) -> bool:
    """Words of the human or the agent (not a tool result)."""
    content = message["content"]
    if isinstance(content, str):
        return True
    return any(b.get("type") == "text" for b in content)


def _prose_text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "fact"


def _clip(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


_IDENTIFIER = re.compile(r"(?<![\w.-])(?:[A-Za-z_]\w*(?:_\w+|\.[A-Za-z_]\w*)+(?:\(\))?|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*)")
_QUOTED = re.compile(r"[\"'`]([^\"'`\n]{4,60})[\"'`]")
_UNIT_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:\s?(?:%|ms|s|MB|KB|GB|Mbps|passed|failed|errors?|tests?|files?|lines?))?(?![\w.])")


# words of instructions and plans that say nothing about what they are about
_FILLER = frozenset("""about above after again always approach before carefully check confirm enabling examine
example following further instead looking maybe might proceed relying request should something
their there these thing things think those through using which while would""".split())


def _anchor(sentence: str, folded: list[str], *, word: bool = True) -> str | None:
    """The key rule's key for a sentence: its first anchor (path, code symbol, identifier,
    quoted text, number with unit), else (with `word`) its rarest distinctive word that is
    neither common nor found in a large share of the history (`folded`, the messages before
    the point). The agent's own sentences get no word key: one without an anchor is left out."""
    for found in (_PATH.findall(sentence), _BACKTICK.findall(sentence), _IDENTIFIER.findall(sentence),
                  [q.strip() for q in _QUOTED.findall(sentence)],
                  [n for n in _UNIT_NUMBER.findall(sentence) if len(re.sub(r"\D", "", n)) >= 2]):
        for key in found:
            if key and len(re.sub(r"\W", "", key)) >= 4 and is_anchor(key) and not is_generic(key, folded):
                return key
    if not word:
        return None
    words = {w for w in re.findall(r"[A-Za-z][a-z]{4,}", sentence) if w.lower() not in COMMON_WORDS | _FILLER}
    scored = sorted((sum(w.lower() in t for t in folded), -len(w), w) for w in words)
    return next((w for _, _, w in scored if not is_generic(w, folded)), None)


class _Draft:
    def __init__(self, trace: Trace, at: int):
        self.trace, self.at = trace, at
        self.facts: list[dict[str, Any]] = []
        self.ids: set[str] = set()
        self.keys_seen: set[str] = set()
        self.folded = [fold(message_text(m)) for m in trace.messages[:at]]

    def add(self, category: str, id_hint: str, text: str, keys: list[str], source: list[int]) -> bool:
        keys = [k for k in dict.fromkeys(keys) if k and fold(k)]
        # The draft must lint clean: every key literally in its source messages, before `at`.
        if not keys or any(not any(fold(k) in self.folded[s] for s in source) for k in keys):
            return False
        signature = "|".join(sorted(fold(k) for k in keys))
        if signature in self.keys_seen:
            return False
        self.keys_seen.add(signature)
        base = f"{category.replace('_', '-')}-{_slug(id_hint)}"
        fid, n = base, 2
        while fid in self.ids:
            fid, n = f"{base}-{n}", n + 1
        self.ids.add(fid)
        self.facts.append({"id": fid, "category": category, "text": _clip(text), "keys": keys,
                           "source": sorted(set(source))})
        return True


def draft_labels(trace: Trace, at: int, *, max_facts: int = MAX_FACTS) -> dict[str, Any]:
    """Candidate labels for `trace` at point `at` (messages[0:at] is the history).

    Args:
        trace: the loaded trace.
        at: the compaction point, 1 <= at <= len(trace.messages).
        max_facts: at most this many facts (the rarest categories are kept first).

    Returns:
        A labels@1 dict with `labelled_by: draft`, one point, and facts whose keys all occur
        in messages[0:at].
    """
    if not 1 <= at <= len(trace.messages):
        raise ValueError(f"point {at} is outside the trace (1..{len(trace.messages)})")
    d = _Draft(trace, at)
    msgs = trace.messages[:at]
    texts = [message_text(m) for m in msgs]

    # intent: the request, keyed by its first path or symbol (or its most distinctive word).
    request = texts[0]
    first_line = next((ln for ln in request.splitlines() if len(ln.strip()) > 15 and not ln.strip().startswith("<")),
                      request[:200])
    named = [k for k in _PATH.findall(request) + _BACKTICK.findall(request) if not is_generic(k, d.folded)]
    anchor = next(iter(named), None) or _anchor(first_line, d.folded)
    if anchor:
        d.add("intent", "request", f"The task: {first_line.strip()}", [anchor], [0])

    by_category: dict[str, list[tuple[str, str, list[str], list[int]]]] = {c: [] for c in
                                                                              ("constraint", "decision", "attempt", "next_step")}
    for i, m in enumerate(msgs):
        if not _is_prose(m):
            continue
        prose = _prose_text(m)
        for sentence in _SENTENCE_END.split(prose):
            sentence = sentence.strip(" -*#\t")
            if not 12 <= len(sentence) <= 400:
                continue
            for category, cue in _CUES.items():
                if category == "constraint" and m["role"] != "user":
                    continue
                if category != "constraint" and m["role"] != "assistant":
                    continue
                hit = cue.search(sentence)
                if not hit:
                    continue
                key = _anchor(sentence, d.folded, word=category == "constraint")
                if key:
                    by_category[category].append((sentence[:40], sentence, [key], [i]))
                break

    # artifacts: the paths and symbols the history mentions most.
    paths: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for i, t in enumerate(texts):
        # What the human or the agent names in words counts more than a hit in a grep listing.
        weight = 3 if _is_prose(msgs[i]) else 1
        for p in _PATH.findall(t):
            paths[p] += weight
            first_seen.setdefault(p, i)
        for s in _SYMBOL.findall(t) + [b.rstrip("()") for b in _BACKTICK.findall(t)]:
            if _is_prose(msgs[i]):
                paths[s] += 1
                first_seen.setdefault(s, i)
    artifacts = [(p, f"{p} is part of the work (named often).", [p], [first_seen[p]])
                 for p, n in paths.most_common(6) if n >= 3 and is_anchor(p)]

    # bugs: distinct error lines, most recent first (the current failure matters most).
    bugs = []
    for i in range(len(texts) - 1, -1, -1):
        for etype, emsg in _ERROR.findall(texts[i]):
            bugs.append((etype, f"{etype}: {emsg.strip()}", [etype, emsg.strip()[:40].strip()], [i]))
    # numbers: test counts, most recent first.
    numbers = []
    for i in range(len(texts) - 1, -1, -1):
        for hit in _COUNT.finditer(texts[i]):
            numbers.append((hit.group(0), f"Test run in message {i}: {hit.group(0)}.", [hit.group(0)], [i]))

    # Take candidates round-robin so every category is represented before any gets a second.
    pools = [bugs[:3], artifacts, numbers[:2], by_category["constraint"][:3], by_category["decision"][-3:],
             by_category["attempt"][-2:], by_category["next_step"][-2:]]
    names = ["bug", "artifact", "number", "constraint", "decision", "attempt", "next_step"]
    while len(d.facts) < max_facts and any(pools):
        for name, pool in zip(names, pools, strict=True):
            if pool and len(d.facts) < max_facts:
                hint, text, keys, source = pool.pop(0)
                d.add(name, hint, text, keys, source)

    return {
        "schema": LABELS_SCHEMA,
        "trace": trace.id,
        "labelled_by": "draft",
        "points": [{"at": at}],
        "facts": d.facts,
    }


def draft_yaml(trace: Trace, at: int) -> str:
    """The draft as a labels YAML file, with a header saying what to do with it."""
    header = (f"# Draft labels for {trace.id} at point {at}, proposed by `compaction-eval labels draft`.\n"
              "# Check every fact against the trace: delete noise, fix the texts, mark 2-4 `critical: true`,\n"
              "# add `avoid` items and what the rules miss, then set labelled_by: human.\n")
    return labels_yaml(draft_labels(trace, at), header)


def write_draft(trace: Trace, at: int, out: Path | str, *, force: bool = False) -> Path:
    """Write the draft labels to `out`; an existing (perhaps hand-edited) labels file is
    refused unless `force` (`labels draft --out FILE [--force]`)."""
    from compaction_eval.contracts.runfiles import write_text_new

    return write_text_new(out, draft_yaml(trace, at), force=force)
