"""Recall-first tuning: backward elimination over a prompt's schema fields.

The procedure: start from every field the prompt declares (maximal recall), then remove
fields one at a time. Each round tries removing each remaining field, keeps the removal
that hurts least (highest recall, then highest completion, then fewest summary tokens), and
records it; the rounds form the frontier from all fields down to one. The recommended stop
is the smallest field set whose recall (and completion, when measured) stays within
`tolerance` of the best on the frontier; it is written as a new prompt file whose header
declares only those fields and whose disabled blocks are removed.

Measurements go through the same suites as everything else: `run_recall` (one inspect run
per round, every variant of the round as a prompt) for recall, precision and summary tokens;
the long-horizon task with configuration `full` for completion. With `--suite both` the
rounds are ranked by recall and completion is measured for the frontier steps only (one
horizon run per step instead of one per variant, which keeps a tune run to minutes).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.paths import DEFAULTS
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.prompts import HEADER_BLOCK, Candidate, load_candidate
from compaction_eval.contracts.settings import (
    DEFAULT_AGENT,
    DEFAULT_MODEL,
    HORIZON_COMPACTION,
    CompactionSettings,
    is_stand_in,
)
from compaction_eval.contracts.traces import parse_json_text

TUNE_FILE = "tune.json"
TUNE_SCHEMA = "compaction-eval/tune@1"


@dataclass
class Point:
    """One field set, measured.

    Args:
        fields: the enabled fields.
        removed: the field removed to reach this set from the previous frontier step
            (None for the full set).
        recall, recall_ci, precision, summary_tokens: from the recall suite (None when
            not measured).
        completion, completion_ci: long-horizon completion rate of `full` (None when not measured).
    """

    fields: tuple[str, ...]
    removed: str | None = None
    recall: float | None = None
    recall_ci: tuple[float, float] | None = None
    precision: float | None = None
    summary_tokens: float | None = None
    completion: float | None = None
    completion_ci: tuple[float, float] | None = None


@dataclass
class TuneResult:
    """The frontier and the recommendation.

    Args:
        prompt: the tuned prompt's name; source: its file.
        suite: recall, horizon or both.
        frontier: the full set, then one point per round.
        tried: every point evaluated (all removals of every round).
        recommended: index into `frontier`.
        tolerance: how far below the best recall/completion the stop may be.
        out_prompt: the reduced prompt file written (None when not written).
        model, agent: the compaction model and the long-horizon agent.
        notes: how it was measured, in sentences for the report.
    """

    prompt: str
    source: str
    suite: str
    frontier: list[Point]
    tried: list[Point]
    recommended: int
    tolerance: float
    out_prompt: str | None
    model: str
    agent: str | None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"schema": TUNE_SCHEMA, **asdict(self)}


# ----------------------------------------------------------------------------- variants


def variant_name(base: str, fields: tuple[str, ...], all_fields: tuple[str, ...]) -> str:
    """A stable prompt name for a field set: the base name, then the removed fields."""
    removed = [f for f in all_fields if f not in fields]
    return base if not removed else f"{base}--no-" + "-".join(removed)


_BLOCK = r'\n?\{%-?\s*if\s+"{field}"\s+in\s+fields\s*-?%\}(?:(?!\{%-?\s*(?:if|endif)\b).)*?\{%-?\s*endif\s*-?%\}'


def reduced_template(candidate: Candidate, fields: tuple[str, ...], name: str) -> str:
    """The template text of `candidate` declaring only `fields`, under a new name.

    The header's `name` and `fields` are rewritten; each `{% if "f" in fields %}...{% endif %}`
    block of a removed field is deleted when it is a simple block (no nested if). Blocks
    that cannot be removed safely stay in place: they are off because the header no longer
    declares their field.
    """
    text = candidate.path.read_text(encoding="utf-8")
    header = re.match(r"^\{#-?\s*\n(.*?)\n\s*-?#\}", text, re.S)
    assert header is not None  # load_candidate checked it
    head = header.group(1)
    head = re.sub(r"(?m)^name:.*$", f"name: {name}", head, count=1)
    head = re.sub(r"(?m)^fields:.*$", f"fields: [{', '.join(fields)}]", head, count=1)
    removed = [f for f in candidate.fields if f not in fields]
    note = f"# tuned from {candidate.name}: removed {', '.join(removed) or 'nothing'} (compaction-eval tune)"
    body = text[header.end():]
    for f in removed:
        body = re.sub(_BLOCK.replace("{field}", re.escape(f)), "", body, flags=re.S)
    return text[: header.start(1)] + head + "\n" + note + text[header.end(1): header.end()] + body


def write_variant(candidate: Candidate, fields: tuple[str, ...], directory: Path, name: str) -> Path:
    """Write the reduced template to `directory/<name>.j2`, with the partials it includes,
    and check it renders exactly as the original with those fields enabled."""
    directory.mkdir(parents=True, exist_ok=True)
    for partial in candidate.path.parent.glob("_*.j2"):
        if not (directory / partial.name).exists():
            shutil.copy(partial, directory / partial.name)
    path = directory / f"{name}.j2"
    path.write_text(reduced_template(candidate, fields, name), encoding="utf-8")
    reduced = load_candidate(path)
    original = Candidate(candidate.name, candidate.description, candidate.fields, candidate.path, fields)
    probe: dict[str, Any] = {"budget": 500, "span": "SPAN", "focus": "FOCUS"}
    if reduced.render(**probe) != original.render(**probe):
        # keep every block: the header alone turns the removed fields off
        text = candidate.path.read_text(encoding="utf-8")
        header = HEADER_BLOCK.match(text)
        assert header is not None  # a Candidate was loaded through this header
        head = re.sub(r"(?m)^name:.*$", f"name: {name}", header.group(1), count=1)
        head = re.sub(r"(?m)^fields:.*$", f"fields: [{', '.join(fields)}]", head, count=1)
        path.write_text(text[: header.start(1)] + head + text[header.end(1):], encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- measuring


@dataclass
class TuneConfig:
    """What to tune and how to measure.

    Args:
        prompt: the prompt file (all its fields on: the recall-first start).
        suite: recall, horizon or both.
        tolerance: recall/completion drop from the best tolerated at the stop point.
        traces, labels, model, compaction: the recall suite (see RecallConfig).
        worlds, size, agent, horizon_compaction: the long-horizon suite (configuration `full`).
        work_dir: where the per-round runs go (kept, for inspection).
        min_fields: stop eliminating at this many fields.
    """

    prompt: str
    suite: str = "recall"
    tolerance: float = 0.02
    traces: list[str] = field(default_factory=lambda: list(DEFAULTS["traces"]))
    labels: list[str] = field(default_factory=lambda: list(DEFAULTS["labels"]))
    model: str = DEFAULT_MODEL
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    worlds: list[str] | None = None
    size: str = "small"
    agent: str = DEFAULT_AGENT
    horizon_compaction: CompactionSettings = HORIZON_COMPACTION
    work_dir: str | None = None
    min_fields: int = 1


def _measure_recall(config: TuneConfig, paths: dict[str, Path], run_dir: Path) -> dict[str, dict[str, Any]]:
    from compaction_eval.recall.run import RecallConfig, run_recall

    rc = RecallConfig(traces=config.traces, labels=config.labels, prompts=[str(p) for p in paths.values()],
                      model=config.model, compaction=config.compaction)
    results = run_recall(rc, run_dir, with_samples=False)
    return {p["prompt"]: p for p in results["prompts"]}


def _measure_completion(config: TuneConfig, names: list[str], prompts_dir: Path, log_dir: Path) -> dict[str, tuple[float, tuple[float, float]]]:
    """Completion rate of configuration `full` with each named prompt (one inspect run)."""
    from compaction_eval.compaction.session import bounded_model, eval_or_interrupt  # inspect's eval, Ctrl-C kept
    from compaction_eval.horizon.measure import config_summary, sample_record
    from compaction_eval.horizon.prices import PRICES, price_for
    from compaction_eval.horizon.task import horizon_task_settings, long_horizon

    tasks = [long_horizon(config="full", worlds=config.worlds, size=config.size, prompt=n, prompts_dir=str(prompts_dir.resolve()),
                          compactor=config.model, **horizon_task_settings(config.horizon_compaction)) for n in names]
    logs = eval_or_interrupt(tasks, model=bounded_model(config.agent), model_roles={"compactor": bounded_model(config.model)}, log_dir=str(log_dir),
                        display="none", max_tasks=1, fail_on_error=True, score_display=False)
    _, price = price_for(config.agent, dict(PRICES))
    out = {}
    for name, log in zip(names, logs, strict=True):
        if log.status != "success":
            raise RuntimeError(f"long-horizon run for {name} failed: {log.error.message if log.error else log.status}")
        summary = config_summary("full", [sample_record(s, price, seconds_per_request=5.0) for s in log.samples or []])
        out[name] = (summary["completion_rate"], tuple(summary["completion_ci"]))
    return out


def _rank_key(p: Point, suite: str) -> tuple:
    recall = p.recall if p.recall is not None else -1.0
    completion = p.completion if p.completion is not None else -1.0
    tokens = p.summary_tokens if p.summary_tokens is not None else 0.0
    primary = (completion, recall) if suite == "horizon" else (recall, completion)
    return (*primary, -tokens)


def recommend(frontier: list[Point], tolerance: float) -> int:
    """Index of the smallest field set whose recall and completion (where measured) are
    within `tolerance` of their best on the frontier (the full set when none is smaller)."""
    def best(attr: str) -> float | None:
        vals = [getattr(p, attr) for p in frontier if getattr(p, attr) is not None]
        return max(vals) if vals else None

    best_recall, best_completion = best("recall"), best("completion")
    ok = []
    for i, p in enumerate(frontier):
        if best_recall is not None and p.recall is not None and p.recall < best_recall - tolerance - 1e-12:
            continue
        if best_completion is not None and p.completion is not None and p.completion < best_completion - tolerance - 1e-12:
            continue
        ok.append(i)
    return min(ok, key=lambda i: (len(frontier[i].fields), i)) if ok else 0


def tune(config: TuneConfig, *, out_prompt: Path | None = None, log=print) -> TuneResult:
    """Run backward elimination and write the recommended prompt.

    Args:
        config: see TuneConfig.
        out_prompt: the reduced prompt file (default: next to the source, `<name>-tuned.j2`).
        log: progress lines (stderr in the CLI).
    """
    if config.suite not in ("recall", "horizon", "both"):
        raise ContractError([Problem("--suite", "", f"unknown suite {config.suite!r}: recall, horizon or both")])
    candidate = load_candidate(config.prompt)
    if len(candidate.fields) < 2:
        raise ContractError([Problem(str(candidate.path), "header.fields",
                                     "tuning needs a prompt declaring at least two schema fields (one jinja block each)")])
    work = Path(config.work_dir) if config.work_dir else Path(tempfile.mkdtemp(prefix=f"tune-{candidate.name}-"))
    work.mkdir(parents=True, exist_ok=True)
    variants_dir = work / "variants"
    all_fields = candidate.fields
    measure_recall = config.suite in ("recall", "both")
    measure_horizon = config.suite in ("horizon", "both")
    tried: list[Point] = []
    run_no = 0

    def evaluate(sets: list[tuple[tuple[str, ...], str | None]], *, horizon: bool) -> list[Point]:
        nonlocal run_no
        run_no += 1
        names = {variant_name(candidate.name, fs, all_fields): (fs, rm) for fs, rm in sets}
        paths = {n: write_variant(candidate, fs, variants_dir, n) for n, (fs, _) in names.items()}
        points = {n: Point(fs, rm) for n, (fs, rm) in names.items()}
        if measure_recall:
            rows = _measure_recall(config, paths, work / f"round-{run_no:02d}")
            for n, p in points.items():
                row = rows[n]
                p.recall, p.recall_ci = row["recall"], tuple(row["recall_ci"])
                p.precision, p.summary_tokens = row["precision"], row["summary_tokens"]
        if horizon:
            comp = _measure_completion(config, list(names), variants_dir, work / f"horizon-{run_no:02d}")
            for n, p in points.items():
                p.completion, p.completion_ci = comp[n]
        tried.extend(points.values())
        return list(points.values())

    # With `both`, completion is measured per frontier step (see the module docstring).
    horizon_each = config.suite == "horizon"
    start = evaluate([(all_fields, None)], horizon=measure_horizon)[0]
    frontier = [start]
    current = all_fields
    while len(current) > max(1, config.min_fields):
        log(f"tune: round {len(frontier)}: trying {len(current)} removal(s) from {len(current)} fields")
        options = evaluate([(tuple(f for f in current if f != rm), rm) for rm in current], horizon=horizon_each)
        best = max(options, key=lambda p: _rank_key(p, config.suite))
        if config.suite == "both":
            names = [variant_name(candidate.name, best.fields, all_fields)]
            c = _measure_completion(config, names, variants_dir, work / f"horizon-step-{len(frontier):02d}")
            best.completion, best.completion_ci = c[names[0]]
        frontier.append(best)
        current = best.fields
        log(f"tune:   removed {best.removed}: " + _point_line(best))

    rec = recommend(frontier, config.tolerance)
    chosen = frontier[rec]
    target = Path(out_prompt) if out_prompt else candidate.path.with_name(f"{candidate.name}-tuned.j2")
    name = target.stem if out_prompt else f"{candidate.name}-tuned"
    written = None
    if chosen.fields != all_fields or out_prompt:
        tmp = write_variant(candidate, chosen.fields, variants_dir, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp, target)
        for partial in tmp.parent.glob("_*.j2"):  # the partials it includes, or it cannot render
            if not (target.parent / partial.name).exists():
                shutil.copy(partial, target.parent / partial.name)
        written = str(target)
    notes = []
    if is_stand_in(config.model):
        notes.append("Compaction model: the offline extractive summariser, a deterministic sentence-selection baseline, not an LLM.")
    if measure_horizon:
        notes.append(f"Completion: long-horizon configuration `full` with agent {config.agent}"
                     + (" (the offline scripted agent, not an LLM)" if config.agent.startswith("scripted/") else "") + ".")
    if config.suite == "both":
        notes.append("Rounds are ranked by recall; completion is measured for the frontier steps.")
    return TuneResult(candidate.name, str(candidate.path), config.suite, frontier, tried, rec, config.tolerance, written,
                      config.model, config.agent if measure_horizon else None, notes)


# ----------------------------------------------------------------------------- output


def _fmt(x: float | None, pct: bool = True) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.1f}%" if pct else f"{x:.0f}"


def _point_line(p: Point) -> str:
    bits = []
    if p.recall is not None:
        bits.append(f"recall {_fmt(p.recall)}, precision {_fmt(p.precision)}, {_fmt(p.summary_tokens, False)} summary tokens")
    if p.completion is not None:
        bits.append(f"completion {_fmt(p.completion)}")
    return "; ".join(bits)


def format_frontier(result: TuneResult) -> str:
    """The frontier as a text table, with the recommended row marked."""
    lines = [f"tune {result.prompt} ({result.suite}; tolerance {100 * result.tolerance:.1f} points)"]
    head = f"{'step':>4}  {'fields':>6}  {'removed':<12} {'recall':>7} {'95% CI':>15} {'prec.':>6} {'tokens':>6} {'compl.':>7}"
    lines.append(head)
    for i, p in enumerate(result.frontier):
        ci = f"[{_fmt(p.recall_ci[0])}, {_fmt(p.recall_ci[1])}]" if p.recall_ci else "–"
        mark = "  <- recommended" if i == result.recommended else ""
        lines.append(f"{i:>4}  {len(p.fields):>6}  {p.removed or '(all)':<12} {_fmt(p.recall):>7} {ci:>15} "
                     f"{_fmt(p.precision):>6} {_fmt(p.summary_tokens, False):>6} {_fmt(p.completion):>7}{mark}")
    rec = result.frontier[result.recommended]
    lines.append(f"recommended: {len(rec.fields)} field(s): {', '.join(rec.fields)}")
    if result.out_prompt:
        lines.append(f"wrote {result.out_prompt}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def read_tune(run_dir: Path) -> dict[str, Any] | None:
    """A run directory's tune.json, or None."""
    path = Path(run_dir) / TUNE_FILE
    if not path.exists():
        return None
    data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    return data if data.get("schema") == TUNE_SCHEMA else None
