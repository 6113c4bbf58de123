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
Files whose name starts with `_` are partials, not candidates. An include that is not beside
the prompt (`_span.j2` in a folder holding only a copied prompt) is read from the packaged
prompts. The format, for users: docs/prompts.md (`compaction-eval prompts docs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.runfiles import RUN_NAME
from compaction_eval.contracts.yamlfile import load_yaml_text

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


# The metadata header: a jinja comment opening the file, over several lines or on one
# (`{#- name: mine -#}`, the form the missing-header error shows). Group 1 is its YAML.
HEADER_BLOCK = re.compile(r"^\{#-?[ \t]*\n?(.*?)\n?\s*-?#\}", re.S)
_HEADER = HEADER_BLOCK


def with_name(text: str, name: str) -> str:
    """Template `text` with its header's `name:` set to `name` (the header must exist)."""
    match = HEADER_BLOCK.match(text)
    assert match is not None, "a template read through HEADER_BLOCK"
    header = re.sub(r"(?m)^(\s*)name:.*$", lambda m: f"{m.group(1)}name: {name}", match.group(1), count=1)
    return text[: match.start(1)] + header + text[match.end(1):]


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
        text = _render(self.path, span=span, budget=budget, focus=focus, fields=set(self.active_fields))
        return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


class _FolderLoader(jinja2.FileSystemLoader):
    """Templates from one folder only: `include`/`import` of a file outside it (through
    `..`, an absolute path or a symbolic link) is refused, and so is a file that is not
    UTF-8 text."""

    def __init__(self, directory: Path):
        super().__init__(str(directory))
        self.root = directory.resolve()

    def get_source(self, environment: jinja2.Environment, template: str):  # type: ignore[override]
        target = (self.root / template).resolve()
        if not target.is_relative_to(self.root):
            raise jinja2.TemplateNotFound(f"{template} (outside the prompts folder {self.root})")
        if target.is_dir():
            raise jinja2.TemplateNotFound(f"{template} (a directory)")
        try:
            return super().get_source(environment, template)
        except UnicodeDecodeError as exc:
            raise _NotText(template, exc.start) from None


class _NotText(Exception):
    def __init__(self, template: str, byte: int):
        super().__init__(template)
        self.template, self.byte = template, byte


def packaged_prompts() -> Path:
    """The prompts shipped in the package (the repository's prompts/ in a checkout)."""
    from compaction_eval.contracts.paths import package_data

    return package_data() / "prompts"


def _loader(directory: Path) -> jinja2.BaseLoader:
    """The prompt's own folder first, then the packaged prompts: a copied prompt's
    `{% include "_span.j2" %}` works without copying the partial. Both refuse paths outside
    their folder."""
    packaged = packaged_prompts()
    if not packaged.is_dir() or packaged.resolve() == directory.resolve():
        return _FolderLoader(directory)
    return jinja2.ChoiceLoader([_FolderLoader(directory), _FolderLoader(packaged)])


# The budgets of one render (prompts and an optimiser's proposals alike: both render here).
# A prompt is a few KB of instructions around the span: the output may be the context's text
# (span, focus) several times over plus OUTPUT_ALLOWANCE; loops may run MAX_ITERATIONS times
# in all, nested or not. Sizes are checked before a string is built (`'A ' * 150000000`,
# `'%0999999999d' % 1`, `'x'|center(10**9)`, `a ~ a` doubled), not after.
OUTPUT_ALLOWANCE = 1024 * 1024
MAX_ITERATIONS = 1_000_000
_NUMBER = re.compile(r"\d+")


class TemplateBudget(SecurityError):
    """A render that would exceed its output or loop budget."""


@dataclass
class _Budget:
    chars: int
    iterations: int = MAX_ITERATIONS

    def size(self, n: int, what: str) -> None:
        if n > self.chars:
            raise TemplateBudget(f"{what} would be {n} characters, over the budget of {self.chars} for one prompt")

    def step(self) -> None:
        self.iterations -= 1
        if self.iterations < 0:
            raise TemplateBudget(f"loops ran more than {MAX_ITERATIONS} times in all (nested loops?)")


_BUDGET: ContextVar[_Budget | None] = ContextVar("compaction_eval_template_budget", default=None)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    return budget if budget is not None else _Budget(OUTPUT_ALLOWANCE)


def _sized(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _check_numbers(text: str, what: str) -> None:
    """A format string whose width or precision alone is over the budget (`%0999999999d`)."""
    budget = _budget()
    for number in _NUMBER.findall(text):
        if len(number) > 12 or int(number) > budget.chars:
            budget.size(int(number[:13]), what)


def _check_args(args: Iterable[Any], what: str) -> None:
    budget = _budget()
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and arg > budget.chars:
            budget.size(arg, what)


def _budgeted_filter(name: str, fn: Any) -> Any:
    @wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        values = [a for a in (*args, *kwargs.values()) if not isinstance(a, (jinja2.runtime.Context, jinja2.nodes.EvalContext, jinja2.Environment))]
        _check_args(values[1:], f"the {name} filter's output")
        if name == "format" and values and isinstance(values[0], str):
            _check_numbers(values[0], "the format filter's output")
        out = fn(*args, **kwargs)
        _budget().size(_sized(out), f"the {name} filter's output")
        return out

    return checked


class _BudgetedCodeGenerator(CodeGenerator):
    """Every `{% for %}` iterates through `environment.counted` (one shared loop budget), and
    every `~` concatenation through `environment.joined` (sized before it is built)."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        node.iter = nodes.Call(nodes.EnvironmentAttribute("counted"), [node.iter], [], None, None, lineno=node.lineno)
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.joined((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BudgetedSandbox(ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with an output budget and a loop budget (`_Budget`)."""

    code_generator_class = _BudgetedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = {name: _budgeted_filter(name, fn) for name, fn in self.filters.items()}

    @staticmethod
    def counted(iterable: Iterable[Any]) -> Iterator[Any]:
        budget = _budget()
        for item in iterable:
            budget.step()
            yield item

    @staticmethod
    def joined(parts: Iterable[Any]) -> str:
        texts = [str(p) for p in parts]
        _budget().size(sum(map(len, texts)), "a ~ concatenation")
        return "".join(texts)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget = _budget()
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if _sized(seq) and isinstance(n, int):
                    budget.size(_sized(seq) * max(n, 0), "a repeated string or list")
        elif operator == "+":
            if _sized(left) and _sized(right):
                budget.size(_sized(left) + _sized(right), "a concatenation")
        elif operator == "%" and isinstance(left, str):
            _check_numbers(left, "a %-formatted string")
        elif operator == "**" and isinstance(left, (int, float)) and isinstance(right, (int, float)):
            if abs(right) > 64 and abs(left) > 1:
                raise TemplateBudget(f"{left!r} ** {right!r} is too large a number for a prompt")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _check_args((*args, *kwargs.values()), f"the result of {getattr(__obj, '__name__', 'a call')}()")
        out = super().call(__context, __obj, *args, **kwargs)
        _budget().size(_sized(out), f"the result of {getattr(__obj, '__name__', 'a call')}()")
        return out

    def wrap_str_format(self, value: Any) -> Any:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_numbers(value.__self__, "a .format() string")
        return wrapped


@lru_cache(maxsize=32)
def _environment(directory: Path) -> jinja2.Environment:
    # One environment per prompts folder, so a template compiles once per process; jinja's
    # auto_reload still recompiles a template whose file changed (the loader's mtime check).
    # Templates are untrusted input: the immutable sandbox refuses attribute access to
    # internals (`cycler.__init__.__globals__`), calls of unsafe callables and mutation, and
    # the budgets bound what one render may build and how long its loops run.
    # Prompts are plain text sent to a model, not HTML: no autoescaping here. StrictUndefined
    # turns a typo in a template variable into an error instead of an empty string.
    return BudgetedSandbox(
        loader=_loader(directory),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _template_line(exc: BaseException, path: Path) -> str:
    """`line N` of the innermost template frame of `exc`'s traceback (jinja2 maps template
    lines into it), or "" when none is found."""
    line = None
    folder = str(path.parent.resolve())
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith(".j2") or name.startswith(folder):
            line = tb.tb_lineno
        tb = tb.tb_next
    return f"line {line}" if line else ""


def _render(path: Path, **context: object) -> str:
    """Render one template in the sandbox; every failure is a ContractError naming the file."""
    where = str(path)
    given = sum(len(v) for v in context.values() if isinstance(v, str))
    budget = _Budget(4 * given + OUTPUT_ALLOWANCE)
    token = _BUDGET.set(budget)
    try:
        out: list[str] = []
        written = 0
        for chunk in _environment(path.parent).get_template(path.name).generate(**context):
            written += len(chunk)
            budget.size(written, "the rendered prompt")
            out.append(chunk)
        return "".join(out)
    except _NotText as exc:
        raise ContractError([Problem(str(path.parent / exc.template), f"byte {exc.byte}", "not UTF-8 text: a prompt must be a text file")]) from None
    except jinja2.TemplateSyntaxError as exc:
        raise ContractError([Problem(exc.filename or where, f"line {exc.lineno}", f"template error: {exc.message}")]) from None
    except jinja2.TemplateNotFound as exc:
        raise ContractError([Problem(where, _template_line(exc, path), f"included template not found: {exc.message}")]) from None
    except SecurityError as exc:
        raise ContractError([Problem(where, _template_line(exc, path), f"unsafe template: {exc} (prompts are rendered in a sandbox)")]) from None
    except jinja2.UndefinedError as exc:
        raise ContractError([Problem(where, _template_line(exc, path), f"template error: {exc.message} (variables: span, budget, focus, fields)")]) from None
    except RecursionError:
        raise ContractError([Problem(where, "", "template error: macros or includes nested too deeply (recursion)")]) from None
    except MemoryError:
        raise ContractError([Problem(where, "", "template error: out of memory while rendering")]) from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
        raise ContractError([Problem(where, _template_line(exc, path), f"template error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")]) from None
    finally:
        _BUDGET.reset(token)


# The header's keys, and the names it may use (docs/prompts.md; `lint` checks them).
HEADER_KEYS = ("name", "description", "fields")
PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def read_header(path: Path | str) -> dict:
    """The metadata header of one template as a mapping (ContractError naming the file)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "prompt file not found")]) from None
    except IsADirectoryError:
        raise ContractError([Problem(str(path), "", "is a directory, not a prompt template")]) from None
    except UnicodeDecodeError as exc:
        raise ContractError([Problem(str(path), f"byte {exc.start}", "not UTF-8 text: a prompt must be a text file")]) from None
    except OSError as exc:
        raise ContractError([Problem(str(path), "", f"cannot read: {exc.strerror or exc}")]) from None
    match = _HEADER.match(text)
    if not match:
        raise ContractError([Problem(str(path), "line 1", "missing metadata header {#- name: ... -#}")])
    meta = load_yaml_text(match.group(1), f"{path} header") or {}
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ContractError([Problem(str(path), "header", "header needs 'name'")])
    if not RUN_NAME.fullmatch(meta["name"]):  # it becomes a file name (`<name>-tuned.j2`): the one name rule of runfiles
        raise ContractError([Problem(str(path), "header.name", f"{meta['name'][:80]!r}: a name is letters, digits, '_', '.' and '-', "
                                     "starting with a letter or digit (it becomes a file name: no path separators)")])
    return meta


def load_candidate(path: Path | str) -> Candidate:
    """Read one template's header and check that the template renders (in the sandbox)."""
    path = Path(path)
    meta = read_header(path)
    fields = meta.get("fields") or []
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise ContractError([Problem(str(path), "header.fields", "must be a list of field names")])
    # A trial render in both shapes, so an undefined variable, an unsafe expression or a
    # missing include fails here, before anything is sent to a model.
    for span in ("(conversation)", None):
        _render(path, span=span, budget=800, focus="(focus)", fields=set(fields))
    return Candidate(meta["name"], str(meta.get("description", "")), tuple(fields), path)


# A string no trace contains: rendered as the span, it shows whether a prompt puts the history in.
_SPAN_PROBE = "\u2063compaction-eval span probe\u2063"


def renders_span(candidate: Candidate) -> bool:
    """Whether `candidate` puts the conversation into its prompt in the inline shape (includes
    `_span.j2` or renders `span`). A prompt that does not asks the model to summarise nothing:
    every fact is lost and recall reads 0%."""
    return _SPAN_PROBE in _render(candidate.path, span=_SPAN_PROBE, budget=800, focus=None, fields=set(candidate.active_fields))


def require_span(candidates: Sequence[Candidate], shape: str) -> None:
    """Refuse (ContractError naming each file) prompts that never render the conversation when
    it is sent inline (`shape` "inline"); in the messages shape the conversation is sent as
    messages whatever the template says."""
    if shape != "inline":
        return
    bad = [c for c in candidates if not renders_span(c)]
    if bad:
        raise ContractError([Problem(str(c.path), "", f"prompt {c.name!r} never renders the conversation in the inline shape: "
                                     "add {% include \"_span.j2\" %} where it goes (or render {{ span }}), or run with --shape messages")
                             for c in bad])


def folder_templates(directory: Path) -> list[Path]:
    """The candidate templates of a prompts folder: its own `*.j2` (partials skipped); a folder
    with none of its own gives those one level down instead (`prompts/wild/<agent>/`). So the
    default `prompts/` never reads its subfolders, and `--prompts prompts/wild` reads them all."""
    own = sorted(f for f in directory.glob("*.j2") if not f.name.startswith("_"))
    return own or sorted(f for f in directory.glob("*/*.j2") if not f.name.startswith("_"))


def load_candidates(paths: Sequence[Path | str]) -> list[Candidate]:
    """Candidates from files and directories (a directory gives `folder_templates`)."""
    from compaction_eval.contracts.paths import resolve_input

    files: list[Path] = []
    for p in map(resolve_input, paths):
        if p.is_dir():
            files += folder_templates(p)
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
