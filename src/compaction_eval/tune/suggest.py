"""Failure-driven suggestions: what each prompt lost, why, and which edit to its template
would address it (`compaction-eval suggest RUN`).

Every lost fact of a run (a fact expected at a sample's point and not kept by the summary)
gets one cause, the first that applies:

- `never_reached`: none of the fact's source messages is in what the compaction model read
  (messages before the verbatim tail; `kept_span.tail_start`);
- `distorted`: the summary holds a near-miss of it (a drifted number, a near-miss path);
- `not_asked`: the prompt's `fields:` header lacks the field for the fact's category (the
  summary was never asked for that kind of fact);
- `budget`: the summary was cut to the budget, or filled it (at least `FULL_SHARE` of it);
- `dropped`: asked for, in the span, with room left, and still not kept.

From the groups come concrete edits, each backed by the lost facts it addresses (two or
three as examples, with, where another prompt of the same run kept the same fact, the
evidence it kept): add the missing field (its header entry and a block in the template's
own style), lift a length cap that dropped facts while the summary had room, ask for exact
copies where facts were distorted, discard noise where the budget was full. The edits are
written as one unified diff against the prompt file (`git apply` or `patch -p1`). The rules
are deterministic; nothing here calls a model.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.prompts import (
    CATEGORY_FIELDS,
    Candidate,
    field_for_category,
    load_candidate,
    load_candidates,
)
from compaction_eval.standins.directives import parse_directives

SUGGEST_SCHEMA = "compaction-eval/suggest@1"
CAUSES = ("never_reached", "distorted", "not_asked", "budget", "dropped")
CAUSE_TEXT = {
    "never_reached": "never reached the compaction model (its source messages are in the verbatim tail or beyond what it read)",
    "distorted": "in the summary but distorted (a near-miss path or a drifted number)",
    "not_asked": "fell in a part the prompt does not ask for (its field is not in the prompt's `fields:`)",
    "budget": "truncated by the budget (the summary was cut to, or filled, its token budget)",
    "dropped": "in the span but dropped (asked for, with room left in the summary)",
}
FULL_SHARE = 0.9  # a summary of at least this share of its budget is full
MAX_EXAMPLES = 3

# How an edit words each category: a section title, a sentence (bullet or section body) and
# an inline phrase (for one-sentence prompts). The field names are contracts.prompts.CATEGORY_FIELDS.
FIELD_FOR = CATEGORY_FIELDS
WORDING = {
    "intent": ("Intent", "The user's request and goal, in the user's own words.", "the user's request in their own words"),
    "constraint": ("Constraints", "Every constraint and requirement the user stated (what must not change, required formats), quoted.",
                   "every constraint the user stated"),
    "decision": ("Decisions", "Each decision taken, with the reason for it.", "each decision with its reason"),
    "bug": ("Open errors", "Each unresolved error with its exact error type and message, verbatim.", "each open error verbatim"),
    "artifact": ("Files and IDs", "Every file path, function, test name and ID the task depends on, written exactly.",
                 "the file paths and IDs written exactly"),
    "number": ("Numbers", "Every count, line number, version and size the task depends on, written exactly.", "the exact numbers"),
    "attempt": ("Attempts", "What was tried, and why it failed.", "what was tried and why it failed"),
    "next_step": ("Next step", "The next action to take.", "the next step"),
}
EXACT_CATEGORIES = ("number", "artifact", "bug")
_BLOCK = re.compile(r'(\{%-?\s*if\s+"(?P<field>[\w-]+)"\s+in\s+fields\s*-?%\})(?P<body>(?:(?!\{%-?\s*(?:if|endif)\b).)*?)(\{%-?\s*endif\s*-?%\})', re.DOTALL)
_BREVITY = re.compile(r"\b(?:in\s+)?(?:a few|a couple of|several|one|two|three|four|five|six|\d{1,2})\s+(?:short\s+|brief\s+)?"
                      r"(?:lines|sentences|bullets|bullet points)\b", re.IGNORECASE)
_DISCARD_LINE = "Discard raw tool output, redundant searches and superseded plans."


@dataclass
class LostFact:
    """One fact a prompt lost at one sample, with why and the evidence."""

    trace: str
    point: int
    fact: str
    category: str
    cause: str
    text: str = ""
    critical: bool = False
    evidence: str = ""  # why this cause (one line)
    distortion: str | None = None
    kept_by: dict[str, str] = field(default_factory=dict)  # other prompt -> its evidence


@dataclass
class Edit:
    """One suggested change to the prompt file.

    Args:
        kind: add_field | lift_cap | exact_copies | discard_noise | strengthen (advice, no diff).
        category: the category it addresses; field: the schema field it adds or strengthens.
        title: one line; why: the evidence (counts); examples: the lost facts it addresses.
        applied: whether the patch carries it (advice-only edits are not in the patch).
    """

    kind: str
    category: str | None
    field: str | None
    title: str
    why: str
    examples: list[LostFact]
    applied: bool = True


@dataclass
class PromptSuggestions:
    """What one prompt lost and what to change."""

    prompt: str
    path: str | None
    recall: float | None
    lost: int
    expected: int
    by_category: dict[str, dict[str, int]]  # category -> cause -> count
    edits: list[Edit]
    patch: str  # unified diff against `path` ('' when no edit changes the file)
    facts: list[LostFact]
    revised: str = ""  # the template text with the applied edits (the patch applied)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------- causes


def field_for(category: str, fields: tuple[str, ...]) -> str | None:
    """The declared field that asks for `category` (see `contracts.prompts.field_for_category`)."""
    return field_for_category(category, fields)


def _fact_index(results: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """(trace, fact id) -> the labelled Fact, from the labels the run was made on."""
    from compaction_eval.corpus.load import run_labels

    return {(lab.trace, f.id): f for lab in run_labels(results).values() for f in lab.facts}


def classify(sample: dict[str, Any], fact: dict[str, Any], label: Any, fields: tuple[str, ...]) -> tuple[str, str]:
    """The cause of one lost fact, and the evidence for it (module docstring)."""
    span = sample.get("kept_span") or {}
    tail = span.get("tail_start")
    sources = tuple(getattr(label, "source", ()) or ())
    if tail is not None and sources and not any(i < tail for i in sources):
        return "never_reached", f"source message(s) {', '.join(map(str, sources))}; the model read messages 0-{tail - 1}"
    if fact.get("distortion"):
        return "distorted", f"summary has {fact['distortion']}"
    if fields and field_for(fact.get("category", ""), fields) is None:
        return "not_asked", f"`fields:` is [{', '.join(fields)}]: no field asks for {fact.get('category')}"
    budget, used = sample.get("budget"), sample.get("summary_tokens")
    if sample.get("budget_truncated"):
        return "budget", f"the summary was cut to its budget of {budget} tokens"
    if budget and used is not None and used >= FULL_SHARE * budget:
        return "budget", f"the summary used {used} of its {budget} tokens"
    where = f"source message(s) {', '.join(map(str, sources))}" if sources else "in the span"
    room = f"; the summary used {used} of {budget} tokens" if budget and used is not None else ""
    return "dropped", where + room


def lost_facts(results: dict[str, Any], prompt: str, fields: tuple[str, ...], labels: dict[tuple[str, str], Any]) -> tuple[list[LostFact], int]:
    """Every fact `prompt` lost in `results`, classified, and how many facts were expected.
    Epochs count separately (a fact lost in two epochs is listed twice)."""
    kept_elsewhere: dict[tuple[str, int, str], dict[str, str]] = defaultdict(dict)
    for s in results.get("samples", []):
        if s["prompt"] == prompt:
            continue
        for f in s.get("facts", []):
            if f.get("kept"):
                kept_elsewhere[(s["trace"], int(s["point"]), f["id"])].setdefault(s["prompt"], str(f.get("evidence") or ""))
    out: list[LostFact] = []
    expected = 0
    for s in results.get("samples", []):
        if s["prompt"] != prompt:
            continue
        for f in s.get("facts", []):
            expected += 1
            if f.get("kept"):
                continue
            label = labels.get((s["trace"], f["id"]))
            cause, evidence = classify(s, f, label, fields)
            out.append(LostFact(
                s["trace"], int(s["point"]), f["id"], f.get("category", ""), cause, getattr(label, "text", "") or "",
                bool(f.get("critical")), evidence, f.get("distortion"),
                dict(sorted(kept_elsewhere.get((s["trace"], int(s["point"]), f["id"]), {}).items())),
            ))
    return out, expected


# ----------------------------------------------------------------------------- edits


def _examples(facts: list[LostFact]) -> list[LostFact]:
    """Up to MAX_EXAMPLES, critical first, then those another prompt kept; different facts
    from different traces first."""
    ranked = sorted(facts, key=lambda f: (not f.critical, not f.kept_by, f.trace, f.point, f.fact))
    traces: set[str] = set()
    ids: set[str] = set()
    first = []
    for f in ranked:
        if f.trace not in traces and f.fact not in ids:
            first.append(f)
            traces.add(f.trace)
            ids.add(f.fact)
    rest = [f for f in ranked if f not in first]
    return (first + rest)[:MAX_EXAMPLES]


def _add_field(text: str, category: str, fieldname: str) -> str:
    """`text` with `fieldname` added to the header's `fields:` and a block asking for
    `category` (unless the template has one), in the style of its last field block."""
    head = re.match(r"^\{#-?\s*\n(.*?)\n\s*-?#\}", text, re.DOTALL)
    if head is None:
        return text
    header = head.group(1)
    m = re.search(r"(?m)^fields:\s*\[(.*)\]\s*$", header)
    if m:
        items = [x.strip() for x in m.group(1).split(",") if x.strip()]
        new_header = header[: m.start()] + f"fields: [{', '.join([*items, fieldname])}]" + header[m.end():]
    else:
        new_header = header + f"\nfields: [{fieldname}]"
    text = text[: head.start(1)] + new_header + text[head.end(1):]
    if re.search(r'\{%-?\s*if\s+"' + re.escape(fieldname) + r'"\s+in\s+fields', text):
        return text
    title, sentence, phrase = WORDING[category]
    blocks = list(_BLOCK.finditer(text))
    if blocks:
        last = blocks[-1]
        body = last.group("body")
        shown = body.lstrip("\n")
        lead = "\n" if body.startswith("\n") else ""
        numbered = [int(m.group(1)) for b in blocks if (m := re.match(r"\s*(\d{1,2})\.\s", b.group("body")))]
        if shown.startswith("#"):
            level = shown[: len(shown) - len(shown.lstrip("#"))]  # the leading #s
            inner = f"{lead}\n{level} {title}\n{sentence}" if body.startswith("\n\n") else f"{lead}{level} {title}\n{sentence}"
        elif shown.startswith("- "):
            inner = f"{lead}- {sentence}"
        elif numbered:
            inner = f"{lead}{max(numbered) + 1}. {title}: {sentence}"
        elif body.strip().endswith(","):
            inner = f" {phrase},"
        else:
            inner = f"{lead or ' '}{sentence}"
        opener = last.group(1).replace(f'"{last.group("field")}"', f'"{fieldname}"')
        block = opener + inner + last.group(4)
        # `{%-` strips the line break before the block: each new block goes on its own line
        sep = "\n" if opener.startswith("{%-") else ""
        return text[: last.end()] + sep + block + text[last.end():]
    # no field blocks: a plain sentence before the line that states the budget (or at the end)
    lines = text.split("\n")
    at = next((i for i in range(len(lines) - 1, -1, -1) if "budget" in lines[i]), len(lines))
    lines.insert(at, f'{{% if "{fieldname}" in fields %}}Also keep {phrase}.{{% endif %}}')
    return "\n".join(lines)


def _body_start(text: str) -> int:
    head = re.match(r"^\{#-?\s*\n(.*?)\n\s*-?#\}", text, re.DOTALL)
    return head.end() if head else 0


def _lift_cap(text: str) -> str:
    """Replace the first length cap of the template's body ("in a few short lines")."""
    at = _body_start(text)
    return text[:at] + _BREVITY.sub("as short bullet points", text[at:], count=1)


def _exact_copies(text: str, fieldname: str) -> str:
    """Append an exactness sentence to the field's block (no change when it already says so)."""
    for m in _BLOCK.finditer(text):
        if m.group("field") == fieldname:
            body = m.group("body")
            if re.search(r"\bexact(ly)?\b|verbatim", body, re.IGNORECASE) and re.search(r"never round", body, re.IGNORECASE):
                return text
            new_body = body.rstrip() + " Copy them exactly as written, never rounded or shortened." + body[len(body.rstrip()):]
            return text[: m.start("body")] + new_body + text[m.end("body"):]
    return text


def _discard_noise(text: str) -> str:
    if re.search(r"\b(?:discard|omit|leave out|drop)\b", text, re.IGNORECASE):
        return text
    lines = text.split("\n")
    at = next((i for i in range(len(lines) - 1, -1, -1) if "budget" in lines[i]), len(lines))
    lines[at:at] = [_DISCARD_LINE, ""]
    return "\n".join(lines)


def unified_patch(path: Path, old: str, new: str) -> str:
    """A unified diff that `git apply` and `patch -p1` accept, run from the current directory."""
    if old == new:
        return ""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        rel = path.as_posix().lstrip("/")
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}")
    out = "".join(lines)
    if not out.endswith("\n"):
        out += "\n\\ No newline at end of file\n"
    return out


def edit_key(edit: Edit) -> str:
    """A stable name of an edit (`add_field:numbers`), to remember which were tried."""
    return f"{edit.kind}:{edit.field or edit.category or ''}"


def suggest_prompt(
    results: dict[str, Any], candidate: Candidate, labels: dict[tuple[str, str], Any] | None = None,
    *, limit: int | None = None, skip: frozenset[str] | set[str] = frozenset(),
) -> PromptSuggestions:
    """Lost facts of `candidate` in `results`, grouped by category and cause, and the edits.

    Args:
        limit: apply at most this many edits to the patch (the first ones, in the order
            they are listed: missing fields by facts lost, then cap, exactness, noise);
            the others are listed as advice.
        skip: edits (by `edit_key`) not to propose (e.g. already tried and rejected).
    """
    labels = _fact_index(results) if labels is None else labels
    fields = candidate.fields
    facts, expected = lost_facts(results, candidate.name, fields, labels)
    groups: dict[str, dict[str, int]] = {}
    for cat in CATEGORIES:
        counts = Counter(f.cause for f in facts if f.category == cat)
        if counts:
            groups[cat] = {c: counts[c] for c in CAUSES if counts[c]}
    source = candidate.path.read_text(encoding="utf-8")
    text = source
    directives = parse_directives(candidate.render(budget=800, span="", focus=None))
    edits: list[Edit] = []

    def allowed(kind: str, name: str | None) -> bool:
        """Whether an edit may change the text: not skipped, and within `limit`."""
        if f"{kind}:{name or ''}" in skip:
            return False
        return limit is None or sum(1 for e in edits if e.applied) < limit

    def by(cause: str, cat: str | None = None) -> list[LostFact]:
        return [f for f in facts if f.cause == cause and (cat is None or f.category == cat)]

    # 1. missing fields, the category that lost most first
    order = sorted(groups, key=lambda c: (-groups[c].get("not_asked", 0), CATEGORIES.index(c)))
    for cat in order:
        lost = by("not_asked", cat)
        if not lost:
            continue
        name = FIELD_FOR[cat]
        if f"add_field:{name}" in skip:
            continue
        ok = allowed("add_field", name)
        text = _add_field(text, cat, name) if ok else text
        edits.append(Edit("add_field", cat, name, f"add the field `{name}`: ask for {WORDING[cat][2]}",
                          f"{len(lost)} {cat} fact(s) lost because no field asks for them", _examples(lost), applied=ok))
    # 2. a length cap that dropped facts while the summary had room
    dropped = by("dropped")
    cap = _BREVITY.search(text, _body_start(text))
    if directives.max_units is not None and dropped and cap and "lift_cap:" not in skip:
        ok = allowed("lift_cap", None)
        text = _lift_cap(text) if ok else text
        edits.append(Edit("lift_cap", None, None, f"lift the cap of {directives.max_units} lines ('{cap.group(0).strip()}')",
                          f"{len(dropped)} fact(s) asked for were dropped while the summary had room left under its budget",
                          _examples(dropped), applied=ok))
    # 3. distortions of exact categories
    for cat in EXACT_CATEGORIES:
        lost = by("distorted", cat)
        field_name = field_for(cat, fields)
        if lost and field_name and f"exact_copies:{field_name}" not in skip:
            new = _exact_copies(text, field_name) if allowed("exact_copies", field_name) else text
            edits.append(Edit("exact_copies", cat, field_name, f"ask for exact copies in `{field_name}`",
                              f"{len(lost)} {cat} fact(s) distorted in the summary", _examples(lost), applied=new != text))
            text = new
    # 4. a full budget
    full = by("budget")
    if full and "discard_noise:" not in skip:
        possible = _discard_noise(text)
        ok = possible != text and allowed("discard_noise", None)
        edits.append(Edit("discard_noise", None, None,
                          "discard noise to make room" if possible != text else "raise --budget or shorten the other sections",
                          f"{len(full)} fact(s) lost in summaries that filled their budget", _examples(full), applied=ok))
        text = possible if ok else text
    # 5. dropped with room left and no cap: advice with examples
    if dropped and directives.max_units is None:
        for cat, n in Counter(f.category for f in dropped).most_common(2):
            lost = by("dropped", cat)
            edits.append(Edit("strengthen", cat, field_for(cat, fields), f"name the {cat} facts more specifically",
                              f"{n} {cat} fact(s) asked for and in the span were not kept, with room left", _examples(lost), applied=False))
    never = by("never_reached")
    if never:
        edits.append(Edit("strengthen", None, None, "not a prompt problem: raise --keep-last or move the compaction point",
                          f"{len(never)} fact(s) never reached the compaction model", _examples(never), applied=False))
    recall = next((p.get("recall") for p in results.get("prompts", []) if p.get("prompt") == candidate.name), None)
    return PromptSuggestions(candidate.name, str(candidate.path), recall, len(facts), expected, groups, edits,
                             unified_patch(candidate.path, source, text), facts, text)


def run_prompts(results: dict[str, Any], prompt: str | Path | None = None) -> list[Candidate]:
    """The prompt files of a run: `prompt` (a file, or a name among the run's prompts), or
    every prompt of the run found under its configured prompt paths."""
    names = list(dict.fromkeys(s["prompt"] for s in results.get("samples", [])))
    if prompt is not None and Path(prompt).suffix == ".j2":
        cand = load_candidate(prompt)
        if cand.name not in names:
            raise ContractError([Problem(str(prompt), "header.name", f"prompt {cand.name!r} is not in the run (it has {', '.join(names)})")])
        return [cand]
    paths = [p for p in results.get("config", {}).get("prompts", []) if Path(p).exists()]
    found = {c.name: c for c in load_candidates(paths)} if paths else {}
    wanted = [str(prompt)] if prompt is not None else names
    missing = [n for n in wanted if n not in found]
    if prompt is not None and str(prompt) not in names:
        raise ContractError([Problem("--prompt", "", f"prompt {prompt!r} is not in the run (it has {', '.join(names)})")])
    if missing and prompt is not None:
        raise ContractError([Problem("--prompt", "", f"the file of prompt {prompt!r} was not found under "
                                     f"{', '.join(paths) or 'the run config prompts'}; pass --prompt FILE.j2")])
    return [found[n] for n in wanted if n in found]


def suggest_run(results: dict[str, Any], prompt: str | Path | None = None) -> list[PromptSuggestions]:
    """`suggest_prompt` for each prompt of a run (or the one asked for)."""
    labels = _fact_index(results)
    return [suggest_prompt(results, c, labels) for c in run_prompts(results, prompt)]


def suggest_document(results: dict[str, Any], suggestions: list[PromptSuggestions]) -> dict[str, Any]:
    """suggest.json: the suggestions of a run, for the report."""
    return {"schema": SUGGEST_SCHEMA, "run": results.get("run"), "model": results.get("model"),
            "offline_stand_in": bool(results.get("offline_stand_in")), "prompts": [s.to_json() for s in suggestions]}


def format_suggestions(s: PromptSuggestions) -> str:
    """The suggestions of one prompt as text, the patch last."""
    rec = f"recall {100 * s.recall:.1f}%, " if s.recall is not None else ""
    lines = [f"{s.prompt} ({s.path}): {rec}{s.lost} of {s.expected} expected facts lost"]
    if s.by_category:
        lines.append("  lost by category and cause:")
        for cat, causes in s.by_category.items():
            lines.append(f"    {cat:<10} " + ", ".join(f"{c.replace('_', ' ')} {n}" for c, n in causes.items()))
    for i, e in enumerate(s.edits, 1):
        tag = "" if e.applied else " (advice, not in the patch)"
        lines.append(f"  {i}. {e.title}{tag}: {e.why}")
        for f in e.examples:
            lines.append(f"       - {f.trace}@{f.point} {f.fact} ({f.category}{', critical' if f.critical else ''}): "
                         f"{f.text[:120]} [{f.evidence}]")
            for other, ev in list(f.kept_by.items())[:1]:
                lines.append(f"         kept by {other}: {ev[:120]}")
    if s.patch:
        lines += ["  patch (apply with `git apply` or `patch -p1`):", s.patch.rstrip("\n")]
    elif not s.edits:
        lines.append("  nothing to fix")
    return "\n".join(lines)
