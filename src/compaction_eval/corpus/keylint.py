"""Weak keys and leaky facts: the key rule of `docs/labels.md`, as lint warnings.

The matcher treats a fact's keys as necessary evidence, so a key that a faithful paraphrase
would not contain makes a false miss, and a key found everywhere makes a false keep. Each rule
here flags one measurable shape of that, in the labels file, the fact and the key it names:

- `phrase-key`: a meaning-category key that is a phrase of ordinary words (`commit and push`),
  not an anchor (path, identifier, command, ID, number, error text, tool name); words found in
  tool calls or output (error text, commands), names in capitals and a tool with one word
  (`git push`) are anchors;
- `quote-key`: a user's typo (`stictist config`) or a quote a paraphrase would correct:
  shouting (`DO NOT MODIFY`), a contraction without its apostrophe (`dont block ...`), a number
  wrapped in the source's words (`leaks found: 39`);
- `generic-key`: a common word (`test`, `push`, `GitHub`) or, in a meaning category, a plain
  word found in a large share of the trace's messages (an identifier or path never is);
- `key-not-in-source`: a fact's key that none of its source messages contains (taken from the
  labeller's own wording, or from another message than the ones that establish the fact; keys
  from the system prompt or the first message, the standing instructions, are exempt);
- `text-after-point`: a fact text naming an anchor (a number, path, identifier, quoted text)
  that the trace first shows after the fact's first expected point;
- `avoid-current`: a superseded avoid item applied at a point before the message that
  supersedes it (one of its sources), where it still describes the current state;
- `compound-fact`: a key set that needs details from three or more clauses of the text, or a
  text listing five or more numbers across clauses whose key set needs details from two of
  them: a summary keeping most of the details would be scored as losing the fact.

Precision matters more than recall here: a lint that cries wolf gets ignored, so each rule
fires only on a shape that was a real fault in (nearly) every shipped label it flagged, as
read when the labels were re-keyed (README, "Keys that mean something").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from compaction_eval.contracts.labels import EXACT_CATEGORIES, AvoidItem, Fact, Labels
from compaction_eval.contracts.problems import Problem
from compaction_eval.contracts.traces import Trace, block_text, fold, message_text

RULES = (
    "phrase-key",
    "quote-key",
    "generic-key",
    "key-not-in-source",
    "text-after-point",
    "avoid-current",
    "compound-fact",
)

# Words so common in agent sessions that their presence says nothing about one fact: a key
# made of one of them is kept by any summary of the session. Only whole keys are checked.
COMMON_WORDS = frozenset(
    """test tests testing pull push backup backups github git actions action update updates
    fix fixed error errors config configuration commit commits file files code build run
    install repo repository branch script bug issue issues cli api app server log logs docs
    documentation readme plan check debug change changes data user project setup readme
    review task todo done yes no ok okay help model tool tools command commands output result
    results version package packages network internet password security settings remote
    default new old first last next""".split()
)
# command-line tools named in sessions of every kind: a key naming one is an anchor
TOOL_NAMES = frozenset(
    """bash sh zsh git gh pytest pip npm npx uv docker kubectl ssh scp gpg make cmake cargo go node python
    python3 sed awk grep curl wget apt pacman brew systemctl journalctl sudo op tox ruff mypy""".split()
)
# a plain word (no digit, symbol or inner capital) found in at least this share of the messages before the fact's last expected point
# (and in at least GENERIC_MIN_MESSAGES of them) is everywhere in the trace, so it tells
# nothing about one fact
GENERIC_SHARE = 0.4
GENERIC_MIN_MESSAGES = 8
# a text naming at least this many numbers or anchors in separate clauses lists independent details
COMPOUND_VALUES = 5
# a key set needing anchors from at least this many clauses of its text bundles them
COMPOUND_CLAUSES = 3

_CONTRACTIONS = frozenset(
    "dont cant wont doesnt isnt didnt shouldnt wouldnt couldnt arent wasnt werent havent hasnt ive youre theyre".split()
)
_EMPHASIS = frozenset("NOT NEVER MUST ONLY EXACTLY ONE ALWAYS DO DONT NO SHOULD ALL STOP ANY".split())
_ORDINARY = re.compile(r"[A-Za-z]+(?:'[a-z]+)?[,.!?:;]?")
_SHOUT = re.compile(r"[A-Z]{2,}[,.!?:;]?")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])")
_WORD = re.compile(r"[a-z]+")
# anchors in a fact's text: quoted or backticked text, paths, identifiers, hex IDs, numbers
_QUOTED = re.compile(r"\"([^\"]{3,80})\"|`([^`]{3,80})`")
_PATHISH = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?[\w.-]+(?:/[\w.-]+)+/?|(?<![\w/.-])[\w-]+\.(?:py|js|ts|md|json|yaml|yml|toml|sh|rs|go|swift|txt|cfg|ini|conf|lock|ps1)\b")
_IDENT = re.compile(r"(?<![\w.-])[A-Za-z_][\w]*(?:_[\w]+|\.[A-Za-z_]\w*)+(?:\(\))?|(?<![\w.-])[a-z]+[A-Z]\w*")
_HEX = re.compile(r"(?<![\w])[0-9a-fA-F]{7,40}(?![\w])")
_ABBREVIATIONS = frozenset({"i.e", "e.g", "etc", "vs"})
_CLAUSES = re.compile(r";|\n|(?<=[a-z0-9)\"'`])\.\s+(?=[A-Z])")


def _warn(labels: Labels, path: str, rule: str, message: str) -> Problem:
    return Problem(str(labels.path or labels.trace), labels.place(path), f"[{rule}] {message}")


def _keys(kind: str, i: int, item: Fact | AvoidItem) -> Iterable[tuple[str, str]]:
    yield from ((f"{kind}[{i}].keys[{k}]", key) for k, key in enumerate(item.keys))
    for a, keyset in enumerate(getattr(item, "alt_keys", ())):
        yield from ((f"{kind}[{i}].alt_keys[{a}][{k}]", key) for k, key in enumerate(keyset))


def _bounded(key: str) -> re.Pattern[str]:
    """The folded key as a whole token (`push` is not found in `pushd`)."""
    return re.compile(r"(?<![a-z0-9_])" + re.escape(fold(key)) + r"(?![a-z0-9_])")


def message_share(key: str, folded: list[str]) -> tuple[int, int]:
    """(messages naming the key as a whole token, messages) among folded message texts."""
    pattern = _bounded(key)
    return sum(bool(pattern.search(t)) for t in folded), len(folded)


def is_generic(key: str, folded: list[str]) -> bool:
    """A common word, or a plain word found in a large share of the folded messages."""
    if fold(key) in COMMON_WORDS:
        return True
    hits, n = message_share(key, folded)
    return is_plain_word(key) and hits >= GENERIC_MIN_MESSAGES and hits >= GENERIC_SHARE * n


# ---------------------------------------------------------------------------- key shapes


def is_phrase(key: str, tools: frozenset[str] = frozenset()) -> bool:
    """Two or more ordinary words and nothing else: no digit, no symbol, no inner or full
    capitals (`commit and push`, `Only accessible via Cloudflare`). A paraphrase says it in
    other words. Two words of which one names a tool (`git push`, `one bash`, given `tools`)
    are the tool and what is done with it, an anchor."""
    words = key.split()
    if len(words) == 2 and any(w.lower() in tools for w in words):
        return False
    return len(words) >= 2 and all(
        _ORDINARY.fullmatch(w) and (w[1:].rstrip(",.!?:;") == w[1:].rstrip(",.!?:;").lower()) for w in words
    )


def is_name(key: str) -> bool:
    """Every word capitalised (`Apple Diagnostics`, `Meteor Lake`): a name, which a summary keeps."""
    return all(w[0].isupper() for w in key.split())


def is_plain_word(key: str) -> bool:
    """One word of letters, capitalised at most at its start (`blocky`, `Google`, `CPU`): an
    identifier, path or number is never generic however often the trace names it."""
    return bool(re.fullmatch(r"[A-Za-z][a-z]*|[A-Z]{2,5}", key))


def is_shouting(key: str) -> bool:
    """Two or more words in capitals, one of them an emphasis word (`DO NOT MODIFY`, `EXACTLY
    ONE`): the user's emphasis, which a summary writes in ordinary case and words. Acronyms
    (`Intel XTU CLI`) and SQL (`GROUP BY`) have no emphasis word."""
    caps = [w.rstrip(",.!?:;") for w in key.split() if _SHOUT.fullmatch(w)]
    return len(caps) >= 2 and bool(set(caps) & _EMPHASIS) and not re.search(r"[\"'=()_/]", key)


def has_bare_contraction(key: str) -> bool:
    """`dont`, `cant`, ...: the user's spelling, which a summary corrects."""
    return any(w in _CONTRACTIONS for w in _WORD.findall(key.lower()))


def is_worded_number(key: str) -> bool:
    """A number wrapped in two or more words of its source (`leaks found: 39`, `at least 1000
    entries`): a summary keeps the number in its own words."""
    words = key.split()
    if not _NUMBER.search(key) or len(words) < 3:
        return False
    plain = [bool(_ORDINARY.fullmatch(w)) for w in words]
    return sum(plain) >= 2 and all(p or _NUMBER.fullmatch(w.rstrip(",.!?:;")) for p, w in zip(plain, words, strict=True))


def is_anchor(key: str) -> bool:
    """A literal a faithful summary keeps as written: one that is not a phrase of ordinary
    words, not shouting, not a number wrapped in words and not one common word."""
    k = key.strip()
    return bool(k) and not (is_phrase(k) or is_shouting(k) or is_worded_number(k) or fold(k) in COMMON_WORDS)


# ---------------------------------------------------------------------------- the trace, once


class _TraceText:
    """Folded text and word counts of each message, computed once per trace."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.folded = [fold(message_text(m)) for m in trace.messages]
        self.system = fold(trace.system)
        called = {str(b.get("name", "")).lower() for m in trace.messages if isinstance(m.get("content"), list)
                  for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
        self.tools = TOOL_NAMES | called | {str(t.get("name", "")).lower() for t in trace.tools or () if isinstance(t, dict)}
        self.machine = [fold(_machine_text(i, m)) for i, m in enumerate(trace.messages)]
        self._prose_words: Counter[str] | None = None
        self._all_words: Counter[str] | None = None

    def first_index(self, needle: str) -> int | None:
        """The first message whose folded text contains `needle` (already folded)."""
        if needle in self.system:
            return -1
        return next((i for i, t in enumerate(self.folded) if needle in t), None)

    def share(self, key: str, upto: int) -> tuple[int, int]:
        return message_share(key, self.folded[:upto])

    @property
    def words(self) -> Counter[str]:
        if self._all_words is None:
            self._all_words = Counter(w for t in self.folded for w in _WORD.findall(t))
        return self._all_words

    @property
    def prose_words(self) -> Counter[str]:
        """Words of what the agent says in text (not tool output): how it spells things."""
        if self._prose_words is None:
            words: Counter[str] = Counter()
            for m in self.trace.messages:
                if m["role"] != "assistant":
                    continue
                content = m["content"]
                blocks = [content] if isinstance(content, str) else [
                    str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
                for text in blocks:
                    words.update(_WORD.findall(text.lower()))
            self._prose_words = words
        return self._prose_words

    def typo_of(self, word: str) -> str | None:
        """The word the agent writes where a key has `word`, when `word` looks like a
        misspelling of it: rare in the trace (two uses at most), never written by the agent,
        and one edit (two for words of eight letters or more) from a word the agent writes at
        least twice, with the same first letter and not merely another inflection of it."""
        if len(word) < 5 or self.words[word] > 2 or self.prose_words[word]:
            return None
        limit = 2 if len(word) >= 8 else 1
        best, best_d = None, limit + 1
        for cand, n in self.prose_words.items():
            if n < 2 or cand[0] != word[0] or abs(len(cand) - len(word)) > limit:
                continue
            stem = min(len(cand), len(word)) - 2
            if cand[:stem] == word[:stem]:  # names/named, separate/separated: inflections
                continue
            d = edit_distance(word, cand, limit)
            if d < best_d:
                best, best_d = cand, d
        return best

    def in_output(self, key: str) -> bool:
        """Whether the key is in tool calls or tool output: error text and commands are anchors."""
        needle = fold(key)
        return any(needle in t for t in self.machine)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance, or limit + 1 once it is certainly larger."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > limit:
            return limit + 1
        prev = cur
    return min(prev[-1], limit + 1)


def _machine_text(index: int, message: dict) -> str:
    """The tool calls and tool output of a message (mini-swe-agent returns output as a user
    string that opens with `<returncode>`)."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content if index and message.get("role") == "user" and content.lstrip().startswith("<returncode>") else ""
    return "\n".join(block_text(b) for b in content if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result"))


# ---------------------------------------------------------------------------- the rules


def _points_where(labels: Labels, item: Fact | AvoidItem) -> list[int]:
    if isinstance(item, Fact):
        return [at for at in labels.points if item.expected_at(at)]
    return [at for at in labels.points if any(s < at for s in item.source)]


def _key_rules(labels: Labels, text: _TraceText, kind: str, i: int, item: Fact | AvoidItem) -> list[Problem]:
    out: list[Problem] = []
    fid = item.id
    points = _points_where(labels, item)
    meaning = isinstance(item, Fact) and item.category not in EXACT_CATEGORIES
    for path, key in _keys(kind, i, item):
        k = key.strip()
        if meaning and is_phrase(k, text.tools) and not is_name(k) and not text.in_output(k):
            out.append(_warn(labels, path, "phrase-key", f"{fid}: key {key!r} is a phrase of ordinary words that a faithful "
                             "paraphrase need not contain; key an anchor instead (path, identifier, command, ID, number, "
                             "error text, tool name)"))
        if meaning and is_shouting(k) and not text.in_output(k):
            out.append(_warn(labels, path, "quote-key", f"{fid}: key {key!r} quotes the user's capitals, which a summary "
                             "writes in its own words; key what the rule is about"))
        elif has_bare_contraction(k):
            out.append(_warn(labels, path, "quote-key", f"{fid}: key {key!r} keeps a contraction without its apostrophe "
                             "(the user's spelling), which a summary corrects"))
        elif isinstance(item, Fact) and is_worded_number(k) and (
                item.category == "number" or (meaning and not text.in_output(k))):
            out.append(_warn(labels, path, "quote-key", f"{fid}: key {key!r} wraps a number in the source's words; a "
                             "paraphrase rewords them: key the number (with its unit) alone"))
        else:
            for word in _WORD.findall(k.lower()) if not any(c in k for c in "/_.()=") else ():
                right = text.typo_of(word)
                if right:
                    out.append(_warn(labels, path, "quote-key", f"{fid}: key {key!r} keeps the typo {word!r} (the agent "
                                     f"writes {right!r}), which a summary corrects"))
                    break
        if fold(k) in COMMON_WORDS:
            out.append(_warn(labels, path, "generic-key", f"{fid}: key {key!r} is a common word that any summary of the "
                             "session contains; key what is particular to this fact"))
        elif meaning and points and is_plain_word(k):
            upto = max(points)
            hits, n = text.share(k, upto)
            if hits >= GENERIC_MIN_MESSAGES and hits >= GENERIC_SHARE * n:
                out.append(_warn(labels, path, "generic-key", f"{fid}: key {key!r} is in {hits} of the {n} messages before "
                                 f"point {upto}, so it says nothing about this fact; key what is particular to it"))
        folded = fold(k)
        in_sources = any(0 <= s < len(text.folded) and folded in text.folded[s] for s in item.source)
        # the system prompt and the first message are the standing instructions every step is
        # read against: a key from them needs no source of its own
        if isinstance(item, Fact) and not in_sources and folded not in text.system and not (text.folded and folded in text.folded[0]):
            where = "it is in the fact's text" if folded in fold(item.text) else "it is not in the fact's text either"
            out.append(_warn(labels, path, "key-not-in-source", f"{fid}: key {key!r} is in none of its source messages "
                             f"{list(item.source)} ({where}); take keys from the messages that establish the fact, or "
                             "add the message that says it to source"))
    return out


def text_anchors(text: str) -> list[str]:
    """The literal details a fact's text names: quoted text, paths, identifiers, hex IDs and
    numbers of two or more digits (single digits are counts of prose, `3 subkeys`)."""
    found: list[str] = []
    for m in _QUOTED.finditer(text):
        # a quote the labeller shortened with "..." is checked piece by piece
        found += [part.strip() for part in re.split(r"\.\.\.|\u2026", m.group(1) or m.group(2))]
    rest = _QUOTED.sub(" ", text)
    # a labeller's `proxy/tunnel` or `ubuntu/windows/macos` is wording, not a path
    found += [p for p in (q.rstrip(".,;:") for q in _PATHISH.findall(rest)) if re.search(r"^[~./]|[._\d]", p)]
    found += _IDENT.findall(rest)
    found += [h for h in _HEX.findall(rest) if re.search(r"[a-fA-F]", h) and re.search(r"\d", h)]
    found += [n for n in _NUMBER.findall(rest) if len(n.replace(",", "").replace(".", "").replace(":", "")) >= 2]
    anchors = (a.strip().rstrip(".,;:") for a in found)
    return list(dict.fromkeys(a for a in anchors if len(re.sub(r"\W", "", a)) >= 3 and a.lower() not in _ABBREVIATIONS))


def text_numbers(text: str) -> list[str]:
    """The distinct numbers of a text, versions (`4.1.1`) and numbers inside names left out."""
    return list(dict.fromkeys(n for n in _NUMBER.findall(text) if n.count(".") < 2))


def _after_point(labels: Labels, text: _TraceText, i: int, fact: Fact) -> list[Problem]:
    points = _points_where(labels, fact)
    if not points:
        return []
    first = min(points)
    late = []
    for anchor in text_anchors(fact.text):
        idx = text.first_index(fold(anchor))
        if idx is not None and idx >= first:
            late.append(f"{anchor!r} (first in message {idx})")
    if not late:
        return []
    return [_warn(labels, f"facts[{i}].text", "text-after-point", f"{fact.id}: its text names {', '.join(late[:3])}"
                  f"{' and more' if len(late) > 3 else ''}, after its first expected point {first}; state only what was "
                  "known at that point (or move the fact's sources so that it is first expected later)")]


def _avoid_current(labels: Labels, i: int, item: AvoidItem) -> list[Problem]:
    if item.reason != "superseded" or len(item.source) < 2:
        return []
    last = max(item.source)
    early = [at for at in labels.points if min(item.source) < at <= last]
    if not early:
        return []
    return [_warn(labels, f"avoid[{i}].source", "avoid-current", f"{item.id}: applies at point(s) {early}, before its "
                  f"last source message {last} (where it is superseded), so there it still describes the current state; "
                  "drop those points from it by starting its sources at the superseding message, or make it a fact with "
                  "valid_until")]


def clauses(text: str) -> list[str]:
    """The clauses of a fact's text: split at semicolons, line breaks and sentence ends."""
    return [c.strip() for c in _CLAUSES.split(text) if c.strip()]


def _compound(labels: Labels, i: int, fact: Fact) -> list[Problem]:
    """A text listing independent details is harmful when a key set demands several of them:
    then a summary keeping most of the details is scored as losing the fact."""
    parts = clauses(fact.text)
    if len(parts) < COMPOUND_CLAUSES:
        return []
    numbers = text_numbers(fact.text)
    listed = len(numbers) >= COMPOUND_VALUES and sum(bool(text_numbers(c)) for c in parts) >= COMPOUND_CLAUSES
    spans = []
    for ks in fact.key_sets:
        homes = {next((n for n, c in enumerate(parts) if fold(k) in fold(c)), -1) for k in ks} - {-1}
        spans.append(len(homes))
    widest = max(spans, default=0)
    if widest >= COMPOUND_CLAUSES:
        why = f"one key set needs details from {widest} separate clauses"
    elif listed and widest >= 2:
        why = f"its text lists {len(numbers)} numbers in separate clauses and one key set needs details from {widest} of them"
    else:
        return []
    return [_warn(labels, f"facts[{i}].text", "compound-fact", f"{fact.id}: {why}, so a summary keeping most of the "
                  "details is scored as losing the fact; split it into atomic facts (where gold judgments name the "
                  "fact, give each detail its own alt_keys set instead)")]


def key_warnings(labels: Labels, trace: Trace) -> list[Problem]:
    """Every weak key and leaky fact of `labels` (checked against `trace`), one per finding."""
    if labels.labelled_by == "generator":
        return []  # generated corpora key by construction; the rule is for hand-written labels
    text = _TraceText(trace)
    out: list[Problem] = []
    for i, fact in enumerate(labels.facts):
        out += _key_rules(labels, text, "facts", i, fact)
        out += _after_point(labels, text, i, fact)
        out += _compound(labels, i, fact)
    for i, avoid in enumerate(labels.avoid):
        out += _key_rules(labels, text, "avoid", i, avoid)
        out += _avoid_current(labels, i, avoid)
    return out


def corpus_key_warnings(labels: Iterable[Labels], traces: Mapping[str, Trace]) -> list[Problem]:
    """`key_warnings` of every labels file whose trace is loaded."""
    return [w for lab in labels if lab.trace in traces for w in key_warnings(lab, traces[lab.trace])]


def rule_of(problem: Problem) -> str:
    """The rule name of a key warning (`phrase-key`, ...)."""
    m = re.match(r"\[([a-z-]+)\]", problem.message)
    return m.group(1) if m else ""
