"""`compaction-eval lint mine.j2`: what is wrong with a prompt before anything is sent to a model.

Problems (exit 1): a header that does not parse or misses `name`, unknown header keys, names
outside the allowed spelling, a template that does not render, a prompt that never renders the
conversation in the chosen shape (in the inline shape such a prompt scores 0% on every sample).
Warnings (exit 0): a declared field that changes nothing in the rendered prompt (tuning cannot
remove it), no field that asks for a fact category, no description. Last, a trial render of the
real request on a small real trace, so the user sees the prompt's size.

The format is documented in docs/prompts.md; the rules live in contracts/prompts.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from compaction_eval.contracts.paths import resolve_input
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.prompts import (
    FIELD_NAME,
    HEADER_KEYS,
    PROMPT_NAME,
    Candidate,
    category_of_field,
    folder_templates,
    load_candidate,
    read_header,
    renders_span,
)
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST, Shape
from compaction_eval.contracts.tokens import count_tokens


@dataclass
class PromptLint:
    """What lint found in one prompt file: problems fail lint, warnings and notes do not."""

    path: Path
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def prompt_files(paths: list[Path]) -> list[Path]:
    """The prompt templates among `paths`: `.j2` files, and a directory's candidates
    (contracts.prompts.folder_templates)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += folder_templates(p)
        elif p.suffix == ".j2":
            out.append(p)
    return out


def lint_prompt(path: Path, *, shape: Shape = "inline", trial_trace: Path | None = None) -> PromptLint:
    """Check one prompt template (see the module docstring); never raises on a bad file."""
    found = PromptLint(Path(path))
    where = str(path)
    try:
        meta = read_header(path)
    except ContractError as exc:
        found.problems += exc.problems
        return found
    found.problems += [Problem(where, f"header.{k}", f"unknown header key (allowed: {', '.join(HEADER_KEYS)})")
                       for k in meta if k not in HEADER_KEYS]
    if not PROMPT_NAME.fullmatch(meta["name"]):
        found.problems.append(Problem(where, "header.name", f"{meta['name']!r}: a name is letters, digits, '_', '.' and '-' (at most 64, "
                                                            "starting with a letter or digit)"))
    fields = meta.get("fields") or []
    if isinstance(fields, list):
        found.problems += [Problem(where, f"header.fields[{i}]", f"{f!r}: a field name is lower-case letters, digits and '_' "
                                                                 "(starting with a letter)")
                           for i, f in enumerate(fields) if not (isinstance(f, str) and FIELD_NAME.fullmatch(f))]
        found.problems += [Problem(where, "header.fields", f"{f!r} is declared {n} times") for f, n in Counter(map(str, fields)).items() if n > 1]
    if not meta.get("description"):
        found.warnings.append(f"warning: {where}: header.description: none (reports show it beside the prompt's name)")
    try:
        candidate = load_candidate(path)
    except ContractError as exc:
        found.problems += exc.problems
        return found
    found.warnings += _field_warnings(candidate)
    found.problems += _shape_problems(candidate, shape)
    if not found.problems:
        found.notes += _trial_render(candidate, shape, trial_trace)
    return found


def _field_warnings(candidate: Candidate) -> list[str]:
    where = str(candidate.path)
    out = []
    full = candidate.render(budget=DEFAULT_BUDGET, span="(conversation)")
    for f in candidate.fields:
        without = candidate.without(f).render(budget=DEFAULT_BUDGET, span="(conversation)")
        if without == full:
            out.append(f"warning: {where}: header.fields: {f!r} changes nothing in the prompt: test it with "
                       f"{{% if \"{f}\" in fields %}} ... {{% endif %}} (else tuning cannot remove it)")
    if candidate.fields and not any(category_of_field(f) for f in candidate.fields):
        out.append(f"warning: {where}: header.fields: no field asks for a fact category (intent, constraints, decisions, bugs, "
                   "artifacts, numbers, attempts, next_step): per-field results stay empty")
    return out


def _shape_problems(candidate: Candidate, shape: Shape) -> list[Problem]:
    where = str(candidate.path)
    if shape == "inline":
        if not renders_span(candidate):
            return [Problem(where, "", "never renders the conversation in the inline shape (every fact would be lost, recall 0%): "
                                       "add {% include \"_span.j2\" %} where it goes, or render {{ span }}")]
        return []
    # messages: the conversation is sent as messages and `span` is None
    text = candidate.render(budget=DEFAULT_BUDGET)
    if "None" in text and "None" not in candidate.render(budget=DEFAULT_BUDGET, span="(conversation)"):
        return [Problem(where, "", "renders `None` in the messages shape (span is None there): "
                                   "wrap {{ span }} in {% if span %} ... {% endif %}, or include \"_span.j2\"")]
    return []


def trial_trace() -> Path | None:
    """The smallest shipped real trace (the package's copy outside a project)."""
    real = resolve_input("fixtures/real")
    files = sorted(real.glob("*/*.json.gz"), key=lambda p: (p.stat().st_size, p.name)) if real.is_dir() else []
    return files[0] if files else None


def _trial_render(candidate: Candidate, shape: Shape, trace_path: Path | None) -> list[str]:
    """One request as the recall suite would send it, on a small real trace."""
    from compaction_eval.compaction.compact import build_request
    from compaction_eval.compaction.split import split_history
    from compaction_eval.corpus.load import read_trace

    trace_path = trace_path or trial_trace()
    if trace_path is None:
        return []
    trace, _ = read_trace(trace_path)
    if trace is None or len(trace.messages) < DEFAULT_KEEP_LAST + 3:
        return []
    at = len(trace.messages)
    split = split_history(trace, at, DEFAULT_KEEP_LAST)
    request = build_request(trace, split, candidate, budget=DEFAULT_BUDGET, shape=shape, focus=None)
    instruction = str(request[-1].content)
    return [f"note: {candidate.path}: trial render on the real trace {trace.id} (messages[0:{at}], --shape {shape}): "
            f"{len(request)} message(s), instruction {count_tokens(instruction)} tokens"]
