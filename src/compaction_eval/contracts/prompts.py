"""Candidate compaction prompts: jinja2 templates in `prompts/` with a YAML header.

A template starts with a jinja comment holding its metadata::

    {#-
    name: handoff
    description: what the prompt is for
    fields: [intent, constraints, decisions, ...]   # schema fields, one jinja block each
    -#}

and receives `span` (the conversation text, or None when the conversation is sent as
messages with the instruction last), `budget` (tokens), `focus` (an optional extra
instruction) and `fields` (the enabled schema fields; all by default, fewer when tuning).
Files whose name starts with `_` are partials, not candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from compaction_eval.contracts.problems import ContractError, Problem

# The schema field that asks for each fact category (contracts/labels.CATEGORIES); a prompt
# may name a field otherwise (`errors` for bugs): `field_for_category` reads the name too.
CATEGORY_FIELDS = {
    "intent": "intent", "constraint": "constraints", "decision": "decisions", "bug": "bugs",
    "artifact": "artifacts", "number": "numbers", "attempt": "attempts", "next_step": "next_step",
}
_FIELD_WORDS = {
    "intent": ("intent", "request", "goal", "user_messages"), "constraint": ("constraint", "requirement", "rules"),
    "decision": ("decision", "choice"), "bug": ("bug", "error", "failure"), "artifact": ("artifact", "file", "path", "symbol", "id"),
    "number": ("number", "count", "figure"), "attempt": ("attempt", "tried", "problem_solving"), "next_step": ("next_step", "next", "pending"),
}


def field_for_category(category: str, fields: tuple[str, ...] | list[str]) -> str | None:
    """The declared field that asks for `category`: its canonical name, else a field whose
    name names the category (`errors` for bug, `files` for artifact); None when none does."""
    canonical = CATEGORY_FIELDS.get(category)
    if canonical in fields:
        return canonical
    words = _FIELD_WORDS.get(category, ())
    return next((f for f in fields if any(w in f.lower() for w in words)), None)


def category_of_field(field: str) -> str | None:
    """The fact category a schema field asks for (None for fields such as `state`)."""
    return next((c for c in CATEGORY_FIELDS if field_for_category(c, (field,)) == field), None)


_HEADER = re.compile(r"^\{#-?\s*\n(.*?)\n\s*-?#\}", re.S)


@dataclass(frozen=True)
class Candidate:
    """One candidate prompt.

    Args:
        name: its name in results (from the header).
        description: one line for reports.
        fields: the schema fields it declares, in order.
        path: the template file.
        enabled: the fields switched on (all unless ablated).
    """

    name: str
    description: str
    fields: tuple[str, ...]
    path: Path
    enabled: tuple[str, ...] | None = None

    @property
    def active_fields(self) -> tuple[str, ...]:
        return self.fields if self.enabled is None else self.enabled

    def without(self, field: str) -> "Candidate":
        """This prompt with one schema field removed (for recall-first tuning)."""
        kept = tuple(f for f in self.active_fields if f != field)
        return Candidate(f"{self.name}-{field}", self.description, self.fields, self.path, kept)

    def render(self, *, budget: int, span: str | None = None, focus: str | None = None) -> str:
        env = _environment(self.path.parent)
        template = env.get_template(self.path.name)
        text = template.render(span=span, budget=budget, focus=focus, fields=set(self.active_fields))
        return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _environment(directory: Path) -> jinja2.Environment:
    # Prompts are plain text sent to a model, not HTML: no autoescaping here. StrictUndefined
    # turns a typo in a template variable into an error instead of an empty string.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def load_candidate(path: Path | str) -> Candidate:
    """Read one template's header and check that the template compiles."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "prompt file not found")]) from None
    match = _HEADER.match(text)
    if not match:
        raise ContractError([Problem(str(path), "line 1", "missing metadata header {#- name: ... -#}")])
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ContractError([Problem(str(path), "header", f"malformed YAML: {exc}".splitlines()[0])]) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ContractError([Problem(str(path), "header", "header needs 'name'")])
    fields = meta.get("fields") or []
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise ContractError([Problem(str(path), "header.fields", "must be a list of field names")])
    try:
        _environment(path.parent).get_template(path.name)
    except jinja2.TemplateSyntaxError as exc:
        raise ContractError([Problem(str(path), f"line {exc.lineno}", f"template error: {exc.message}")]) from None
    return Candidate(meta["name"], str(meta.get("description", "")), tuple(fields), path)


def load_candidates(paths: list[Path | str]) -> list[Candidate]:
    """Candidates from files and directories (a directory gives its `*.j2`, partials skipped)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.glob("*.j2") if not f.name.startswith("_"))
        else:
            files.append(p)
    candidates = [load_candidate(f) for f in files]
    seen: dict[str, Path] = {}
    for c in candidates:
        if c.name in seen:
            raise ContractError([Problem(str(c.path), "header.name", f"prompt name {c.name!r} also used by {seen[c.name]}")])
        seen[c.name] = c.path
    if not candidates:
        raise ContractError([Problem(", ".join(map(str, paths)), "", "no prompt templates (*.j2) found")])
    return candidates
