"""Failure-driven prompt optimisation (`compaction-eval tune PROMPT --optimize`), after ACON:
an optimiser reads the facts a prompt lost (and, where another prompt kept the same fact,
what that prompt's summary said) and proposes a revised template; a proposal is accepted
only when it raises recall on the tune split AND the regression gate passes on the held-out
split (the current prompt's held-out run as the baseline, the proposal's as the candidate).

- Splits are by trace, deterministic: traces ordered by the SHA-1 of their id, every second
  one held out (`split_traces`). The optimiser sees failures of the tune split only.
- The optimiser is a model called through inspect (`--model anthropic/...`; one sample whose
  input is `optimiser_request`, answered with the whole template in a ```jinja block), or,
  offline (`suggest/default`), a stand-in that applies the next of `suggest`'s rule-based
  edits not yet tried: it is labelled a stand-in wherever its history appears.
- Each round measures the proposal with the recall suite on every trace (one inspect run),
  then splits the samples. The history (every proposal as a diff, its scores, the gate's
  verdict on the held-out split and whether it was accepted) is written to `optimize.json`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.paths import DEFAULTS
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.prompts import Candidate, load_candidate, load_candidates
from compaction_eval.contracts.settings import DEFAULT_MODEL, CompactionSettings
from compaction_eval.contracts.traces import parse_json_text
from compaction_eval.tune.suggest import (
    CAUSES,
    MAX_EXAMPLES,
    PromptSuggestions,
    edit_key,
    suggest_prompt,
    unified_patch,
)

OPTIMIZE_FILE = "optimize.json"
OPTIMIZE_SCHEMA = "compaction-eval/optimize@1"
STANDIN_OPTIMISER = "suggest/default"
STANDIN_NOTE = "offline optimiser stand-in: applies compaction-eval suggest's rule-based edits, one per round; not an LLM"
OPTIMISER_MARKER = "[compaction-eval optimiser request]"
_FENCE = re.compile(r"```(?:jinja2?|j2)?\s*\n(.*?)\n```", re.DOTALL)


@dataclass
class OptimizeConfig:
    """What to optimise and how to measure it.

    Args:
        prompt: the template to improve.
        optimiser: the model proposing revisions (`suggest/default`: the offline stand-in).
        rounds: proposals to try at most.
        traces, labels, model, compaction: the recall suite (the compaction model and its settings).
        others: prompt files or directories run alongside in round 0, so that the optimiser
            sees where another prompt kept a fact this one lost (default: none).
        tolerance, category_tolerance: the held-out gate's.
        work_dir: where the per-round runs go.
        max_retries, timeout: limits of the optimiser model.
    """

    prompt: str
    optimiser: str = STANDIN_OPTIMISER
    rounds: int = 3
    traces: list[str] = field(default_factory=lambda: list(DEFAULTS["traces"]))
    labels: list[str] = field(default_factory=lambda: list(DEFAULTS["labels"]))
    model: str = DEFAULT_MODEL
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    others: list[str] = field(default_factory=list)
    tolerance: float = 0.02
    category_tolerance: float = 0.05
    work_dir: str | None = None
    max_retries: int = 4
    timeout: int = 120

    @property
    def stand_in(self) -> bool:
        return self.optimiser == STANDIN_OPTIMISER


@dataclass
class Step:
    """One proposal (round 0: the starting prompt).

    Args:
        round: 0 for the start, then 1, 2, ...
        edits: what the proposal changes (edit names from `suggest`, or "model revision").
        diff: the proposal against the prompt current at that round.
        tune_recall, held_recall: recall of the proposal on each split.
        gate: the held-out gate's verdict ("pass" / "regression"; None for round 0).
        gate_reasons: why the gate failed, when it did.
        accepted: whether the proposal became the current prompt.
        why: one line on the decision.
    """

    round: int
    edits: list[str]
    diff: str
    tune_recall: float | None
    held_recall: float | None
    gate: str | None
    gate_reasons: list[str]
    accepted: bool
    why: str


@dataclass
class OptimizeResult:
    prompt: str
    source: str
    optimiser: str
    offline_stand_in: bool
    model: str
    split: dict[str, list[str]]
    history: list[Step]
    out_prompt: str | None
    notes: list[str]

    @property
    def accepted(self) -> list[Step]:
        return [s for s in self.history if s.round > 0 and s.accepted]

    def to_json(self) -> dict[str, Any]:
        return {"schema": OPTIMIZE_SCHEMA, **asdict(self)}


# ----------------------------------------------------------------------------- splits


def split_traces(trace_ids: list[str]) -> tuple[list[str], list[str]]:
    """(tune, held-out): traces ordered by the SHA-1 of their id, every second one held out.
    Deterministic, and independent of the order the traces were listed in."""
    ordered = sorted(set(trace_ids), key=lambda t: (hashlib.sha1(t.encode("utf-8")).hexdigest(), t))
    return ordered[0::2], ordered[1::2]


def restrict(results: dict[str, Any], traces: list[str], prompt: str | None = None) -> dict[str, Any]:
    """`results` with only the samples of `traces` (and of `prompt`), each prompt's recall
    recomputed as the mean over the samples kept."""
    keep = set(traces)
    samples = [s for s in results["samples"] if s["trace"] in keep and (prompt is None or s["prompt"] == prompt)]
    prompts = []
    for p in dict.fromkeys(s["prompt"] for s in samples):
        vals = [float(s["recall"]) for s in samples if s["prompt"] == p]
        prompts.append({"prompt": p, "recall": sum(vals) / len(vals)})
    return {**results, "samples": samples, "prompts": prompts}


def _recall(doc: dict[str, Any], prompt: str) -> float | None:
    return next((p["recall"] for p in doc.get("prompts", []) if p["prompt"] == prompt), None)


# ----------------------------------------------------------------------------- optimiser


def optimiser_request(template: str, failures: PromptSuggestions, rejected: list[str]) -> str:
    """The text sent to an optimiser model: the template, the failures by category and
    cause with examples (and what another prompt kept), what was already rejected."""
    lines = [
        OPTIMISER_MARKER,
        "You improve a prompt that compacts an agent's conversation into a summary. Below are the template (jinja2, "
        "with a YAML header in the first comment) and the must-keep facts its summaries lost, by category and cause. "
        "Revise the guidelines so that these facts survive: add or strengthen the parts that ask for them. Keep the "
        "header's name, keep every jinja variable, and answer with the complete revised template in one ```jinja block.",
        "",
        "Current template:",
        "```jinja",
        template.rstrip("\n"),
        "```",
        "",
        "Lost facts by category and cause (count):",
    ]
    for cat, causes in failures.by_category.items():
        lines.append(f"- {cat}: " + ", ".join(f"{c} {n}" for c, n in causes.items() if c in CAUSES))
    lines += ["", "Examples:"]
    shown = 0
    for edit in failures.edits:
        for f in edit.examples:
            if shown >= 4 * MAX_EXAMPLES:
                break
            shown += 1
            lines.append(f"- [{f.category}, {f.cause}] {f.text}")
            for other, evidence in list(f.kept_by.items())[:1]:
                lines.append(f"  kept under prompt {other!r} as: {evidence}")
    if rejected:
        lines += ["", "Already tried and rejected (do not propose again): " + "; ".join(rejected)]
    return "\n".join(lines) + "\n"


def parse_revision(answer: str) -> str | None:
    """The template in an optimiser's answer (the first fenced block holding a header)."""
    for block in _FENCE.findall(answer or ""):
        if block.lstrip().startswith("{#"):
            return block.rstrip("\n") + "\n"
    return None


def _added_fields(old: str, new: str) -> list[str]:
    def fields(text: str) -> list[str]:
        m = re.search(r"(?m)^fields:\s*\[(.*)\]\s*$", text)
        return [x.strip() for x in m.group(1).split(",") if x.strip()] if m else []

    return [f for f in fields(new) if f not in fields(old)]


def scripted_revision(request: str) -> str:
    """A deterministic answer to an `optimiser_request`, for the loopback server: the request's
    template with the field of the category that lost most facts as `not_asked` added (one
    not named among the rejected), in a ```jinja block; the template unchanged when none is left.
    It is a stand-in, not an LLM."""
    from compaction_eval.tune.suggest import FIELD_FOR, _add_field

    blocks = _FENCE.findall(request)
    template = blocks[0] + "\n" if blocks else ""
    rejected = request.split("Already tried and rejected", 1)[1] if "Already tried and rejected" in request else ""
    best: tuple[int, str] | None = None
    for m in re.finditer(r"(?m)^- (\w+): .*?\bnot_asked (\d+)", request):
        cat, n = m.group(1), int(m.group(2))
        name = FIELD_FOR.get(cat)
        if name and name not in rejected and (best is None or n > best[0]):
            best = (n, cat)
    revised = _add_field(template, best[1], FIELD_FOR[best[1]]) if best else template
    return f"Revised template:\n\n```jinja\n{revised.rstrip()}\n```\n"


def _ask_model(config: OptimizeConfig, request: str, log_dir: Path) -> str:
    """One optimiser call through inspect; the run's status is checked. The call is cached and
    journaled like every paid call (a resumed `tune --optimize` does not pay for a proposal
    twice)."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample

    from compaction_eval.compaction.session import bounded_model, eval_or_interrupt

    model = bounded_model(config.optimiser)
    task = Task(dataset=[Sample(input=request, id="optimiser")], solver=_cached_generate(), name="prompt-optimiser")
    logs = eval_or_interrupt(task, model=model, log_dir=str(log_dir), display="none", max_retries=config.max_retries,
                             timeout=config.timeout, fail_on_error=True, score_display=False)
    log = logs[0]
    if log.status != "success" or not log.samples:
        message = log.error.message if log.error else log.status
        raise RuntimeError(f"optimiser run failed ({log.status}): {str(message).splitlines()[0] if message else ''}")
    return log.samples[0].output.completion


def _cached_generate() -> Any:
    """The `generate()` solver of inspect, through `generate_cached`."""
    from inspect_ai.model import GenerateConfig, get_model
    from inspect_ai.solver import Generate, Solver, TaskState, solver

    from compaction_eval.compaction.cache import generate_cached

    @solver(name="cached_generate")
    def cached_generate() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.output = await generate_cached(get_model(), state.messages, config=GenerateConfig())
            state.messages.append(state.output.message)
            return state

        return solve

    return cached_generate()


# ----------------------------------------------------------------------------- the loop


def why_nothing(failures: PromptSuggestions, config: OptimizeConfig, rnd: int) -> str:
    """Why a round proposes no edit, in one line: nothing was lost, or what was lost has no
    template edit (only advice, such as a larger budget), or every edit was already tried."""
    if not failures.lost:
        return f"nothing to fix: the prompt lost none of the {failures.expected} facts expected on the tune split; stopped"
    causes: dict[str, int] = {}
    for by_cause in failures.by_category.values():
        for cause, n in by_cause.items():
            causes[cause] = causes.get(cause, 0) + n
    lost = ", ".join(f"{cause.replace('_', ' ')} {n}" for cause, n in sorted(causes.items(), key=lambda x: -x[1]))
    advice = [e.title for e in failures.edits if not e.applied]
    who = "the offline optimiser stand-in applies only suggest's template edits" if config.stand_in else "the optimiser returned the same template"
    line = f"no edit proposed for the {failures.lost} facts lost on the tune split ({lost}): {who}"
    if rnd > 1:
        line += " and those not yet tried"
    if advice:
        line += "; advice that is not a template edit: " + "; ".join(dict.fromkeys(advice))
    return line + "; stopped"


def other_prompts(refs: list[str]) -> list[Candidate]:
    """`--others`: prompt files, directories, the default name `prompts`, or prompt names
    (`handoff`), found in the project or, outside one, in the package's prompts, so that
    `--others handoff` works from any directory."""
    from compaction_eval.contracts.paths import resolve_input, resolve_inputs

    paths: list[str] = []
    named: list[str] = []
    for ref in refs:
        path = resolve_input(ref)
        (paths if path.exists() else named).append(str(path) if path.exists() else ref)
    found = load_candidates(paths) if paths else []
    if named:
        shipped = {c.name: c for c in load_candidates([str(p) for p in resolve_inputs(None, "prompts")])}
        missing = [n for n in named if n not in shipped]
        if missing:
            raise ContractError([Problem("--others", n, f"no prompt file or prompt named {n!r} (prompts: {', '.join(sorted(shipped))})")
                                 for n in missing])
        found += [shipped[n] for n in named]
    return found


def _measure(config: OptimizeConfig, prompts: list[str], run_dir: Path) -> dict[str, Any]:
    from compaction_eval.recall.run import RecallConfig, run_recall

    rc = RecallConfig(traces=config.traces, labels=config.labels, prompts=prompts, model=config.model, compaction=config.compaction)
    return run_recall(rc, run_dir)


def optimize(config: OptimizeConfig, *, out_prompt: Path | None = None, log=lambda _m: None) -> OptimizeResult:
    """Run the loop (module docstring); write the best prompt when a proposal was accepted.

    Raises ContractError for unusable input (a prompt that does not load, a corpus with
    fewer than two traces).
    """
    from compaction_eval.gate.rules import gate_runs

    if config.rounds < 1:
        raise ContractError([Problem("--rounds", "", "must be at least 1")])
    candidate = load_candidate(config.prompt)
    from compaction_eval.corpus.load import load_corpus

    if len(load_corpus(config.traces, config.labels).labels) < 2:
        raise ContractError([Problem(" ".join(config.traces), "", "optimisation needs at least two traces (a tune and a held-out split)")])
    work = Path(config.work_dir) if config.work_dir else Path(tempfile.mkdtemp(prefix=f"optimize-{candidate.name}-"))
    work.mkdir(parents=True, exist_ok=True)
    current_dir = work / "round-00" / "prompt"
    current_dir.mkdir(parents=True, exist_ok=True)
    for partial in candidate.path.parent.glob("_*.j2"):
        shutil.copy(partial, current_dir / partial.name)
    current_path = current_dir / candidate.path.name
    current_text = candidate.path.read_text(encoding="utf-8")
    current_path.write_text(current_text, encoding="utf-8")

    others = [str(c.path) for c in other_prompts(config.others) if c.name != candidate.name] if config.others else []
    log(f"optimize: round 0: measuring {candidate.name}" + (f" with {len(others)} other prompt(s) for context" if others else ""))
    results = _measure(config, [str(current_path), *others], work / "round-00" / "run")
    traces = sorted({s["trace"] for s in results["samples"]})
    tune_ids, held_ids = split_traces(traces)
    if not held_ids:
        raise ContractError([Problem(",".join(config.traces), "", "optimisation needs at least two traces (a tune and a held-out split)")])
    tune_doc = restrict(results, tune_ids)
    held_cur = restrict(results, held_ids, candidate.name)
    tune_cur = _recall(tune_doc, candidate.name)
    history = [Step(0, [], "", tune_cur, _recall(held_cur, candidate.name), None, [], True, "the starting prompt")]
    rejected: list[str] = []
    tried: set[str] = set()
    context_doc = tune_doc  # failures of the current prompt on the tune split (+ other prompts kept there)

    for rnd in range(1, config.rounds + 1):
        cur = Candidate(candidate.name, candidate.description, load_candidate(current_path).fields, current_path)
        failures = suggest_prompt(context_doc, cur, limit=1 if config.stand_in else None, skip=tried)
        if config.stand_in:
            edits = [edit_key(e) for e in failures.edits if e.applied]
            proposal = failures.revised
        else:
            request = optimiser_request(current_text, failures, rejected)
            answer = _ask_model(config, request, work / f"round-{rnd:02d}" / "optimiser-logs")
            parsed = parse_revision(answer)
            if parsed is None:
                history.append(Step(rnd, ["model revision"], "", None, None, None, [], False,
                                    "the optimiser's answer holds no ```jinja template: " + " ".join(answer.split())[:160]))
                rejected.append("an answer without a template")
                continue
            proposal = parsed
            added = _added_fields(current_text, proposal)
            edits = ["model revision" + (f" (+fields: {', '.join(added)})" if added else "")]
        tried.update(edits)
        if proposal == current_text:
            why = why_nothing(failures, config, rnd)
            history.append(Step(rnd, edits, "", None, None, None, [], False, why))
            log(f"optimize: round {rnd}: {why}")
            break
        prop_dir = work / f"round-{rnd:02d}" / "prompt"
        prop_dir.mkdir(parents=True, exist_ok=True)
        for partial in candidate.path.parent.glob("_*.j2"):
            shutil.copy(partial, prop_dir / partial.name)
        prop_path = prop_dir / candidate.path.name
        prop_path.write_text(proposal, encoding="utf-8")
        diff = unified_patch(candidate.path, current_text, proposal)
        try:
            prop = load_candidate(prop_path)
        except ContractError as exc:
            history.append(Step(rnd, edits, diff, None, None, None, [], False, f"the proposal does not load: {exc.problems[0].message}"))
            rejected.append(", ".join(edits))
            continue
        if prop.name != candidate.name:
            history.append(Step(rnd, edits, diff, None, None, None, [], False, f"the proposal renamed the prompt to {prop.name!r}"))
            rejected.append(", ".join(edits))
            continue
        log(f"optimize: round {rnd}: measuring proposal ({', '.join(edits)})")
        prop_results = _measure(config, [str(prop_path)], work / f"round-{rnd:02d}" / "run")
        tune_prop = restrict(prop_results, tune_ids)
        held_prop = restrict(prop_results, held_ids, candidate.name)
        t_recall, h_recall = _recall(tune_prop, candidate.name), _recall(held_prop, candidate.name)
        gate = gate_runs(held_cur, held_prop, tolerance=config.tolerance, category_tolerance=config.category_tolerance,
                         baseline_path="held-out: current prompt", candidate_path="held-out: proposal")
        improves = t_recall is not None and tune_cur is not None and t_recall > tune_cur + 1e-9
        accepted = improves and gate.exit_code == 0
        if accepted:
            assert t_recall is not None and tune_cur is not None  # accepted implies improves
            why = f"tune recall {100 * tune_cur:.1f}% -> {100 * t_recall:.1f}%, held-out gate passes"
        elif not improves:
            why = f"tune recall does not improve ({100 * (tune_cur or 0):.1f}% -> {100 * (t_recall or 0):.1f}%)"
        else:
            why = "the held-out gate fails: " + "; ".join(gate.reasons[:2])
        history.append(Step(rnd, edits, diff, t_recall, h_recall, gate.verdict, list(gate.reasons), accepted, why))
        log(f"optimize: round {rnd}: {'accepted' if accepted else 'rejected'}: {why}")
        if accepted:
            current_text, current_path = proposal, prop_path
            tune_cur, held_cur = t_recall, held_prop
            # the next round reads the new prompt's failures, still next to the other prompts' kept facts
            others_tune = [s for s in tune_doc["samples"] if s["prompt"] != candidate.name]
            context_doc = {**tune_prop, "samples": tune_prop["samples"] + others_tune}
        else:
            rejected.append(", ".join(edits))

    written = None
    if any(s.accepted for s in history[1:]):
        target = Path(out_prompt) if out_prompt else candidate.path.with_name(f"{candidate.name}-optimized.j2")
        target.parent.mkdir(parents=True, exist_ok=True)
        from compaction_eval.contracts.runfiles import write_text_atomic

        write_text_atomic(target, current_text)
        written = str(target)
    notes = []
    if config.stand_in:
        notes.append(f"Optimiser: {STANDIN_NOTE}.")
    if config.model.startswith("extractive/"):
        notes.append("Compaction model: the offline extractive summariser, a deterministic sentence-selection baseline, not an LLM.")
    notes.append(f"Splits by trace (SHA-1 order, every second held out): {len(tune_ids)} tune, {len(held_ids)} held-out traces.")
    return OptimizeResult(candidate.name, str(candidate.path), config.optimiser, config.stand_in, config.model,
                          {"tune": tune_ids, "held_out": held_ids}, history, written, notes)


def format_history(result: OptimizeResult) -> str:
    """The optimisation history as text."""
    lines = [f"optimize {result.prompt} (optimiser {result.optimiser}"
             + (", offline stand-in, not an LLM" if result.offline_stand_in else "") + f"; compaction model {result.model})"]
    lines.append(f"{'round':>5}  {'tune':>6}  {'held':>6}  {'gate':<10} {'decision':<9} edits / why")
    for s in result.history:
        pct = lambda x: "–" if x is None else f"{100 * x:.1f}%"
        decision = "start" if s.round == 0 else ("accepted" if s.accepted else "rejected")
        lines.append(f"{s.round:>5}  {pct(s.tune_recall):>6}  {pct(s.held_recall):>6}  {s.gate or '–':<10} {decision:<9} "
                     f"{', '.join(s.edits) or '–'}: {s.why}")
    if result.out_prompt:
        lines.append(f"wrote {result.out_prompt}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def read_optimize(run_dir: Path) -> dict[str, Any] | None:
    """A run directory's optimize.json, or None."""
    path = Path(run_dir) / OPTIMIZE_FILE
    if not path.exists():
        return None
    data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    return data if data.get("schema") == OPTIMIZE_SCHEMA else None
