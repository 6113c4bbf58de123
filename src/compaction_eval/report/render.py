"""Render a run directory (results.json, optionally horizon.json) into one HTML file.

The page is self-contained: inline CSS, inline SVG plots, a few lines of inline script for
sorting and the drill-down; no network, opens from file://. Templates are jinja2 with
autoescaping on; the only markup that reaches the page unescaped is built in `drilldown`
(escaped piece by piece) and the plots (generated here, from numbers).
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from compaction_eval.contracts.labels import CATEGORIES, Labels
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.runfiles import RESULTS_FILE, read_results, write_text_atomic
from compaction_eval.contracts.settings import is_stand_in
from compaction_eval.contracts.traces import Trace, parse_json_text
from compaction_eval.gate.compare import (
    Comparison,
    CorpusMismatch,
    paired_delta,
)
from compaction_eval.report import plots
from compaction_eval.report.drilldown import Mark, highlight_summary, source_excerpt

HORIZON_FILE = "horizon.json"
HORIZON_SCHEMA = "compaction-eval/horizon@1"
MATCHERS_FILE = "matchers.json"
REPORT_FILE = "report.html"
MAX_SOURCES = 3  # source excerpts shown per fact
TEMPLATES = Path(__file__).parent / "templates"

CATEGORY_LABELS = {
    "intent": "intent",
    "constraint": "constraints",
    "decision": "decisions",
    "bug": "bugs (error text)",
    "artifact": "paths & symbols",
    "number": "numbers",
    "attempt": "failed attempts",
    "next_step": "next step",
}
CATEGORY_SHORT = {
    "intent": "intent",
    "constraint": "constr.",
    "decision": "decis.",
    "bug": "bug",
    "artifact": "artifact",
    "number": "number",
    "attempt": "attempt",
    "next_step": "next",
}


# ----------------------------------------------------------------------------- inputs


def read_matchers(run_dir: Path) -> dict[str, Any] | None:
    """The run's matchers.json (`compaction-eval validate-matchers --out`), or None when absent
    or not that kind of file (the report never fails over this optional extra)."""
    path = Path(run_dir) / MATCHERS_FILE
    if not path.is_file():
        return None
    try:
        data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except (ContractError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("facts"), dict) else None


def read_horizon(run_dir: Path) -> dict[str, Any] | None:
    """The run's horizon.json (DESIGN.md 5), or None when the run has none."""
    path = Path(run_dir) / HORIZON_FILE
    if not path.exists():
        return None
    try:
        data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except json.JSONDecodeError as exc:
        raise ContractError([Problem(str(path), f"line {exc.lineno}", f"malformed JSON: {exc.msg}")]) from None
    if not isinstance(data, dict) or data.get("schema") != HORIZON_SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"not a {HORIZON_SCHEMA} file")])
    return data


@dataclass
class SourceCorpus:
    """Labels and traces for the drill-down (fact text, source excerpts), when they can be found.

    Args:
        labels, traces: by trace id; only the traces the run sampled.
        missing: a note for the page when some could not be found.
    """

    labels: dict[str, Labels] = field(default_factory=dict)
    traces: dict[str, Trace] = field(default_factory=dict)
    missing: str | None = None


def _resolve(paths: Iterable[str], bases: list[Path]) -> list[Path]:
    """Each path as given if it exists, else under the first base where it exists."""
    out = []
    for p in paths:
        cand = Path(p)
        if cand.is_absolute():
            if cand.exists():
                out.append(cand)
            continue
        for base in bases:
            if (base / cand).exists():
                out.append(base / cand)
                break
    return out


def load_source_corpus(
    results: dict[str, Any], run_dir: Path, traces: list[str] | None = None, labels: list[str] | None = None
) -> SourceCorpus:
    """Find the labels and traces a run was made on (its config paths, relative to the working
    directory or to a parent of the run directory), reading only the traces it sampled.

    Never raises for missing or broken files: the drill-down then shows verdicts without
    fact text and source excerpts, and says why.
    """
    from compaction_eval.corpus.load import (
        NotATrace,
        read_labels_back,
        read_trace,
        run_labels,
        trace_paths,
    )

    needed = {s["trace"] for s in results.get("samples", [])}
    config = results.get("config", {})
    bases = [Path.cwd(), *Path(run_dir).resolve().parents]
    given = results.get("inputs_as_given") or {}

    def recorded(kind: str) -> list[str]:
        # where the run read them (absolute), then as given (for a moved run directory)
        return [*config.get(kind, []), *given.get(kind, [])]

    trace_dirs = _resolve(traces if traces is not None else recorded("traces"), bases)
    found = SourceCorpus()
    found.labels = (read_labels_back(labels, bases=bases, traces=needed) if labels is not None
                    else run_labels(results, bases=bases, traces=needed))
    try:
        files = trace_paths(trace_dirs)
    except ContractError:
        files = []
    # files named after a needed trace first; stop as soon as every trace is found
    files.sort(key=lambda f: not any(f.name.startswith(t) for t in needed))
    for path in files:
        if needed <= found.traces.keys():
            break
        try:
            trace, _ = read_trace(path, strict=False)
        except (NotATrace, ContractError, OSError, ValueError):
            continue
        if trace is not None and trace.id in needed:
            found.traces.setdefault(trace.id, trace)
    if config.get("redact"):
        _redact_sources(found)
    lacking = sorted(needed - (found.labels.keys() & found.traces.keys()))
    if lacking:
        where = ", ".join(map(str, [*config.get("traces", []), *config.get("labels", [])]))
        found.missing = (
            f"labels or trace not found for {len(lacking)} of {len(needed)} traces (looked in {where} "
            "relative to the working directory and the run directory): those samples show verdicts only, "
            "without fact text and source excerpts."
        )
    return found


def _redact_sources(found: SourceCorpus) -> None:
    """A redacted run shows only redacted sources: its excerpts and fact text come from the
    original files, which still hold the secrets the model never saw."""
    from compaction_eval.contracts.traces import trace_from_json
    from compaction_eval.corpus.redact import redact_json, redact_labels

    found.traces = {tid: trace_from_json(redact_json(t.to_json()), t.path) for tid, t in found.traces.items()}
    found.labels = {tid: redact_labels(lab) for tid, lab in found.labels.items()}


# ----------------------------------------------------------------------------- view model


def _num(x: Any) -> float | None:
    """A number, or None for missing values (None, NaN, a key the document does not have)."""
    if x is None or isinstance(x, jinja2.Undefined) or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def _per_sample(p: dict[str, Any], key: str) -> float:
    return p.get(key, 0) / p["samples"] if p.get("samples") else 0.0


def _leaderboard(results: dict[str, Any], categories: list[str]) -> list[dict[str, Any]]:
    by_prompt: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in results.get("samples", []):
        by_prompt[s["prompt"]].append(s)
    rows = []
    for rank, p in enumerate(results.get("prompts", []), 1):
        group = by_prompt.get(p["prompt"], [])
        n = max(1, len(group))
        rows.append(
            {
                **p,
                "rank": rank,
                "by_cat": [
                    (c, p["recall_by_category"][c]["mean"] if c in p["recall_by_category"] else None,
                     p["recall_by_category"].get(c))
                    for c in categories
                ],
                "input_per_sample": _per_sample(p, "input_tokens"),
                "output_per_sample": _per_sample(p, "output_tokens"),
                "cache_read_per_sample": sum(s.get("cache_read_tokens", 0) for s in group) / n,
                "cache_write_per_sample": sum(s.get("cache_write_tokens", 0) for s in group) / n,
                "critical_expected": sum(1 for s in group for f in s["facts"] if f.get("critical")),
            }
        )
    return rows


def _losses(results: dict[str, Any], prompt: str) -> list[dict[str, Any]]:
    """Per category, for one prompt: fact instances expected and lost (over samples)."""
    expected: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    for s in results.get("samples", []):
        if s["prompt"] != prompt:
            continue
        for f in s["facts"]:
            expected[f["category"]] += 1
            lost[f["category"]] += not f["kept"]
    rows: list[dict[str, Any]] = [
        {"category": c, "label": CATEGORY_LABELS.get(c, c), "lost": lost[c], "expected": expected[c]}
        for c in expected
    ]
    rows.sort(key=lambda r: (-r["lost"], -r["lost"] / max(1, r["expected"]), r["category"]))
    return rows


def _runner_up_delta(results: dict[str, Any], best: str, second: str) -> Any:
    """Paired recall difference best - second over the samples both scored."""
    rec: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for s in results.get("samples", []):
        rec[(s["trace"], int(s["point"]), s["prompt"])].append(float(s["recall"]))
    keys = sorted({(t, p) for t, p, _ in rec})
    triples = [(k, (k[0], k[1], best), (k[0], k[1], second)) for k in keys]
    pairs = [(rec[b], rec[c]) for _, b, c in triples if b in rec and c in rec]
    return paired_delta([sum(c) / len(c) for _, c in pairs], [sum(b) / len(b) for b, _ in pairs])


def _verdict(results: dict[str, Any], board: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not board:
        return None
    best = board[0]
    out: dict[str, Any] = {"best": best, "losses": [], "runner_up": None}
    losses = [r for r in _losses(results, best["prompt"]) if r["lost"]]
    out["losses"] = losses[:3]
    out["lost_total"] = sum(r["lost"] for r in losses)
    if len(board) > 1:
        second = board[1]
        out["runner_up"] = {"prompt": second["prompt"], "delta": _runner_up_delta(results, best["prompt"], second["prompt"])}
    cheapest = min(board, key=lambda r: r["input_per_sample"] + r["output_per_sample"])
    out["cheapest"] = cheapest
    return out


def _frontier(board: list[dict[str, Any]]) -> tuple[str, list[str]]:
    points = [
        plots.Point(r["prompt"], r["recall"], tuple(r["recall_ci"]), r["precision"], tuple(r["precision_ci"]))
        for r in board
        if _num(r["recall"]) is not None and _num(r["precision"]) is not None
    ]
    if not points:
        return "", []
    return plots.frontier_svg(points, best=board[0]["prompt"]), [p.name for p in plots.pareto_front(points)]


def _heat(board: list[dict[str, Any]], categories: list[str]) -> list[dict[str, Any]]:
    rows = []
    for r in board:
        cells = []
        for c, value, detail in r["by_cat"]:
            title = (
                f"{r['prompt']} · {c}: recall {value:.2f}, 95% interval [{detail['ci'][0]:.2f}, {detail['ci'][1]:.2f}], "
                f"{detail['n']} samples"
                if detail
                else f"{r['prompt']} · {c}: not expected in any sample"
            )
            cells.append({"category": c, "value": value, "colour": plots.recall_colour(value), "title": title})
        rows.append({"prompt": r["prompt"], "cells": cells})
    return rows


def _sample_id(trace: str, point: int) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in trace)
    return f"s-{safe}-{point}"


BASELINE_SUFFIX = " (baseline)"


def _baseline_samples(baseline: dict[str, Any], partners: dict[str, str]) -> list[dict[str, Any]]:
    """The baseline's samples of the prompts compared with this run (`partners`: baseline
    prompt -> the name shown, `handoff (baseline)`), for the drill-down beside the run's own."""
    return [{**s, "prompt": partners[s["prompt"]]} for s in baseline.get("samples", []) if s["prompt"] in partners]


def _drilldown(results: dict[str, Any], prompts: list[str], corpus: SourceCorpus,
               extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One entry per (trace, point): facts x prompts verdicts, summaries, source excerpts.
    `extra` samples (a baseline's, renamed) are shown as further prompts of the same sample."""
    cells: dict[tuple[str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for s in [*results.get("samples", []), *(extra or [])]:
        # with several epochs, the drill-down shows the first
        cells[(s["trace"], int(s["point"]))].setdefault(s["prompt"], s)
    out = []
    for (trace, point), by_prompt in sorted(cells.items()):
        shown = [p for p in prompts if p in by_prompt]
        first = by_prompt[shown[0]]
        lab = corpus.labels.get(trace)
        tr = corpus.traces.get(trace)
        label_facts = {f.id: f for f in lab.facts} if lab else {}
        facts = []
        for f in first["facts"]:
            lf = label_facts.get(f["id"])
            sources = []
            more: list[int] = []
            if lf is not None and tr is not None:
                seen = [i for i in lf.source if 0 <= i < min(point, len(tr.messages))]
                # a few excerpts say where a fact came from; the rest are named (keeps pages light)
                seen, more = seen[:MAX_SOURCES], seen[MAX_SOURCES:]
                keys = [k for ks in lf.key_sets for k in ks]
                for idx in seen:
                    msg = tr.messages[idx]
                    sources.append({"index": idx, "role": msg.get("role", ""), "excerpt": source_excerpt(tr.texts[idx], keys)})
            verdicts: list[dict[str, Any]] = []
            for p in shown:
                v = next((x for x in by_prompt[p]["facts"] if x["id"] == f["id"]), None)
                verdicts.append({"prompt": p, "v": v})
            facts.append(
                {**f, "text": lf.text if lf else None, "keys": list(lf.keys) if lf else [], "sources": sources, "more_sources": more,
                 "verdicts": verdicts, "kept_by": sum(1 for v in verdicts if v["v"] and v["v"]["kept"])}
            )
        summaries = []
        for p in shown:
            s = by_prompt[p]
            marks = [Mark(f["evidence"], "ev", f"{f['id']} ({f['category']})") for f in s["facts"] if f["kept"] and f.get("evidence")]
            marks += [
                Mark(d["found"], "dist", f"{d['kind']}" + (f": expected {d['expected']}" if d.get("expected") else "")
                     + (f" ({d['fact']})" if d.get("fact") else ""))
                for d in s.get("distortions", []) if d.get("found")
            ]
            html, cut = highlight_summary(s.get("summary", ""), marks)
            summaries.append(
                {"prompt": p, "html": html, "cut": cut, "recall": s["recall"], "precision": s["precision"],
                 "tokens": s.get("summary_tokens"), "distortions": s.get("distortions", []),
                 "avoid": [a for a in s.get("avoid", []) if a.get("present")],
                 "lost": sum(1 for f in s["facts"] if not f["kept"])}
            )
        out.append(
            {"id": _sample_id(trace, point), "trace": trace, "point": point, "facts": facts, "summaries": summaries,
             "synthetic": first.get("synthetic"), "history_tokens": first.get("history_tokens"),
             "recalls": [(p, by_prompt[p]["recall"]) for p in shown],
             "critical_lost_best": len(by_prompt[shown[0]].get("critical_lost", [])) if shown and shown[0] == prompts[0] else 0}
        )
    return out


def _comparison_view(gate: Any, categories: list[str]) -> dict[str, Any]:
    """The gate's decision (`gate.rules.GateResult`) and its paired comparison, for the templates."""
    cmp: Comparison = gate.comparison
    rows = []
    for pc in cmp.prompts:
        rows.append(
            {
                "pc": pc,
                "regressed": any(prompt == pc.prompt for prompt, _ in gate.failing),
                "cats": [
                    (c, pc.by_category.get(c), plots.delta_colour(pc.by_category[c].delta) if c in pc.by_category else "#f1f3f5")
                    for c in categories
                ],
            }
        )
    return {"cmp": cmp, "gate": gate, "rows": rows, "diffs": []}


def _prompt_sources(results: dict[str, Any], bases: list[Path]) -> dict[str, tuple[str, str]]:
    """Each prompt of a run -> (file, template text), from the prompt paths it recorded
    (found as given or under `bases`); prompts whose files are gone are absent."""
    from compaction_eval.contracts.prompts import load_candidates

    config = results.get("config") or {}
    given = results.get("inputs_as_given") or {}
    paths = _resolve([*(config.get("prompts") or []), *(given.get("prompts") or [])], bases)
    out: dict[str, tuple[str, str]] = {}
    for path in paths:
        try:
            found = load_candidates([path])
        except (ContractError, OSError):
            continue
        for cand in found:
            if cand.name not in out and cand.path is not None:
                out[cand.name] = (str(cand.path), Path(cand.path).read_text(encoding="utf-8"))
    return out


def template_diffs(baseline: dict[str, Any], results: dict[str, Any], cmp: Comparison, *,
                   bases: list[Path] | None = None) -> list[dict[str, Any]]:
    """The unified diff of each compared prompt's template against its baseline partner's
    (what changed between the two runs' prompts); identical templates are left out, and a
    template whose file is gone says so."""
    import difflib

    bases = bases or [Path.cwd()]
    mine, theirs = _prompt_sources(results, bases), _prompt_sources(baseline, bases)
    out = []
    for pc in cmp.prompts:
        new, old = mine.get(pc.prompt), theirs.get(pc.partner)
        if new is None or old is None:
            out.append({"prompt": pc.prompt, "partner": pc.partner, "diff": None,
                        "missing": "candidate" if new is None else "baseline"})
            continue
        if new[1] == old[1]:
            continue
        diff = "".join(difflib.unified_diff(old[1].splitlines(keepends=True), new[1].splitlines(keepends=True),
                                            fromfile=f"baseline {pc.partner}: {old[0]}", tofile=f"candidate {pc.prompt}: {new[0]}"))
        out.append({"prompt": pc.prompt, "partner": pc.partner, "diff": diff, "missing": None})
    return out


def fixes_view(results: dict[str, Any]) -> dict[str, Any] | None:
    """What `compaction-eval suggest` computes for each prompt of the run ("what to fix");
    None when none of the run's prompt files is found (the section then says how to get it)."""
    from compaction_eval.tune.suggest import suggest_run

    try:
        suggestions = suggest_run(results)
    except ContractError as exc:
        return {"prompts": [], "error": str(exc.problems[0]) if exc.problems else str(exc)}
    return {"prompts": suggestions, "error": None} if suggestions else None


# cost classes of a configuration, in stacking order, with their colours
COST_PARTS = [
    ("uncached", "uncached input", "#9aa5b1"),
    ("cache_write", "cache write", "#e0a458"),
    ("cache_read", "cache read", "#8fc9b0"),
    ("output", "output", "#2f6fb0"),
    ("compaction", "compaction calls", "#c2561a"),
]
# keys of a horizon configuration the section draws itself; other numbers go to the main table
HORIZON_DRAWN = {
    "config", "n", "completion_rate", "completion_ci", "input_tokens", "samples", "steps", "model_calls", "output_tokens",
    "uncached_tokens", "cache_read_tokens", "cache_write_tokens", "cache_hit_rate", "compaction_calls", "compaction_tokens",
    "compaction_share", "peak_tokens", "peak_occupancy", "overflow_failures", "redundant_calls", "wall_p50", "wall_p95",
    "cost_usd", "pre_compaction", "cost_breakdown", "inspect_log",
}


def _cost_parts(c: dict[str, Any], cost_model: dict[str, Any]) -> dict[str, float] | None:
    """USD per cost class of a configuration: as horizon.json gives it (`cost_breakdown`), or
    recomputed from its token counts and the run's prices for files written before that key."""
    given = c.get("cost_breakdown")
    if isinstance(given, dict) and all(_num(given.get(k)) is not None for k, _, _ in COST_PARTS):
        return {k: float(given[k]) for k, _, _ in COST_PARTS}
    p_in, p_out = _num(cost_model.get("input_per_mtok")), _num(cost_model.get("output_per_mtok"))
    samples = c.get("samples") or []
    need = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    if p_in is None or p_out is None or any(_num(c.get(k)) is None for k in need):
        return None
    if not all(_num(s.get("compaction_input_tokens")) is not None for s in samples):
        return None
    read, write = float(c["cache_read_tokens"]), float(c["cache_write_tokens"])
    comp_in = sum(float(s["compaction_input_tokens"]) for s in samples)
    comp_out = sum(float(s.get("compaction_output_tokens") or 0) for s in samples)
    return {
        "uncached": (float(c["input_tokens"]) - read - write) * p_in / 1e6,
        "cache_write": write * p_in * float(cost_model.get("cache_write_multiplier", 1.25)) / 1e6,
        "cache_read": read * p_in * float(cost_model.get("cache_read_multiplier", 0.1)) / 1e6,
        "output": float(c["output_tokens"]) * p_out / 1e6,
        "compaction": (comp_in * p_in + comp_out * p_out) / 1e6,
    }


def _step_curves(configs: list[dict[str, Any]]) -> tuple[list[tuple[str, list[float]]], list[tuple[str, list[float]]]]:
    """Per configuration: mean resident tokens at each step over the worlds still running, and
    the cumulative input tokens sent up to each step, summed over worlds."""
    resident, cumulative = [], []
    for c in configs:
        steps = [s["step_tokens"] for s in c.get("samples") or [] if isinstance(s.get("step_tokens"), list) and s["step_tokens"]]
        if not steps:
            continue
        longest = max(len(t) for t in steps)
        at = [[t[i] for t in steps if i < len(t)] for i in range(longest)]
        resident.append((str(c.get("config")), [sum(v) / len(v) for v in at]))
        running, cum = 0.0, []
        for v in at:
            running += sum(v)
            cum.append(running)
        cumulative.append((str(c.get("config")), cum))
    return resident, cumulative


def _horizon_view(horizon: dict[str, Any]) -> dict[str, Any]:
    """The long-horizon section: completion, growth per step, cost by class, runtime and the
    cache-vs-compaction ablation, each drawn only from the keys the file has."""
    configs = horizon.get("configs", [])
    cost_model = horizon.get("cost_model") or {}
    rows = []
    worlds: list[str] = []
    for c in configs:
        for s in c.get("samples", []):
            if s.get("world") not in worlds:
                worlds.append(s.get("world"))
    for c in configs:
        done: dict[Any, list[bool]] = {}  # world (as recorded) -> completed per sample
        for s in c.get("samples", []):
            done.setdefault(s.get("world"), []).append(bool(s.get("completed")))
        extra = {k: v for k, v in c.items() if k not in HORIZON_DRAWN and isinstance(v, (int, float)) and not isinstance(v, bool)}
        ci = c.get("completion_ci")
        parts = _cost_parts(c, cost_model)
        rows.append(
            {
                "config": str(c.get("config", "?")),
                "completion_rate": _num(c.get("completion_rate")),
                "completion_ci": ci if isinstance(ci, (list, tuple)) and len(ci) == 2 else None,
                "input_tokens": _num(c.get("input_tokens")),
                "n_samples": len(c.get("samples", [])),
                "extra": extra,
                "by_world": [done.get(w) for w in worlds],
                "c": c,
                "cost": parts,
                "cost_total": sum(parts.values()) if parts else None,
                "has_runtime": any(_num(c.get(k)) is not None for k in ("wall_p50", "compaction_calls", "cache_hit_rate")),
            }
        )
    chart_rows = [
        (r["config"], r["completion_rate"], tuple(r["completion_ci"] or (r["completion_rate"],) * 2))
        for r in rows
        if r["completion_rate"] is not None
    ]
    chart = (
        plots.interval_svg(chart_rows, xlabel="completion rate (95% interval)", salt="horizon",
                           title="Completion rate by context configuration")
        if chart_rows
        else ""
    )
    resident, cumulative = _step_curves(configs)
    windows = {s.get("window") for c in configs for s in c.get("samples") or [] if s.get("window")}
    window = windows.pop() if len(windows) == 1 else None
    steps_chart = (
        plots.lines_svg(resident, xlabel="agent step (request)", ylabel="resident tokens (mean over worlds still running)",
                        salt="horizon-steps", title="Tokens in the context window at each step, per configuration",
                        ceiling=window, ceiling_label=f"context window {window:,} tokens" if window else "")
        if resident else ""
    )
    cum_chart = (
        plots.lines_svg(cumulative, xlabel="agent step (request)", ylabel="input tokens sent so far (all worlds)",
                        salt="horizon-cumulative", title="Cumulative input tokens sent, per configuration")
        if cumulative else ""
    )
    costed = [r for r in rows if r["cost"] is not None]
    cost_chart = (
        plots.stacked_bars_svg([(r["config"], [r["cost"][k] for k, _, _ in COST_PARTS]) for r in costed],
                               [(label, colour) for _, label, colour in COST_PARTS], xlabel="cost (USD)",
                               salt="horizon-cost", title="Cost per configuration by token class")
        if costed else ""
    )
    extra_keys = sorted({k for r in rows for k in r["extra"]})
    best = max(rows, key=lambda r: (r["completion_rate"] or 0.0, -(r["input_tokens"] or 0)), default=None)
    head = {
        "agent": horizon.get("agent"),
        "offline_stand_in": bool(horizon.get("offline_stand_in")),
        "agent_note": horizon.get("agent_note"),
        "compactor": horizon.get("compactor"),
        "compactor_stand_in": is_stand_in(horizon.get("compactor") or ""),
        "n_worlds": horizon.get("n_worlds"),
        "size": horizon.get("size"),
    }
    ablation = horizon.get("ablation") if isinstance(horizon.get("ablation"), dict) else None
    return {
        "h": head, "rows": rows, "worlds": worlds, "chart": chart, "extra_keys": extra_keys, "best": best,
        "steps_chart": steps_chart, "cum_chart": cum_chart, "cost_chart": cost_chart, "costed": costed,
        "cost_parts": COST_PARTS, "cost_model": cost_model, "ablation": ablation,
        "runtime": [r for r in rows if r["has_runtime"]],
    }


def _matchers_view(matchers: dict[str, Any]) -> dict[str, Any] | None:
    """Agreement of the default matcher with the hand-judged gold set (validate-matchers JSON):
    the headline (the test part, out of sample, beside key presence alone), by category, style
    and source, and the tune part cross-validated by trace; or, before any test part exists,
    the in-sample table."""
    table = (matchers.get("facts") or {}).get("default")
    if not isinstance(table, dict):
        return None
    found = matchers.get("headline")
    headline: dict[str, Any] = found if isinstance(found, dict) else {}
    test = headline.get("test") if isinstance(headline.get("test"), dict) else None
    last = headline.get("last_blind_round")
    blind_round = None
    if test is None and isinstance(last, dict) and isinstance(last.get("test"), dict):
        # no test part now: the last blind round's figure, as measured at its freeze
        test = last["test"]
        blind_round = {k: last.get(k) for k in ("round", "frozen_at", "split", "stale", "gold_n", "n")}
    tune = headline.get("tune_cross_validated")
    groups = []
    if test:
        for key, title in (("by_category", "category"), ("by_style", "summary style"), ("by_source", "source")):
            rows = [{"label": CATEGORY_LABELS.get(name, name) if key == "by_category" else name, **a}
                    for name, a in (test.get(key) or {}).items() if isinstance(a, dict)]
            if rows:
                groups.append({"key": key, "title": title, "rows": rows})
    others = {m: t.get("overall") for m, t in (matchers.get("facts") or {}).items() if m != "default" and isinstance(t, dict)}
    judge_rounds = [r for r in matchers.get("judge_rounds") or [] if isinstance(r, dict) and isinstance(r.get("judge"), dict)]
    return {
        # the judge per blind round beside the matcher, keys only and the second reader
        "judge_rounds": judge_rounds,
        "judge_model": matchers.get("judge_model"),
        "test": test,
        "blind_round": blind_round,
        "rounds": [r for r in headline.get("blind_rounds") or [] if isinstance(r, dict)],
        "groups": groups,
        "status": headline.get("status"),
        "tune": tune if isinstance(tune, dict) else None,
        "rows": [{"label": CATEGORY_LABELS.get(cat, cat), "all": a} for cat, a in (table.get("by_category") or {}).items()],
        "overall": table.get("overall") or {},
        "others": others,
        "gold": matchers.get("gold") or {},
        "model": matchers.get("model"),
        "avoid": (matchers.get("avoid") or {}).get("overall"),
    }


def build_context(
    results: dict[str, Any] | None,
    *,
    horizon: dict[str, Any] | None = None,
    matchers: dict[str, Any] | None = None,
    baseline: dict[str, Any] | None = None,
    baseline_name: str | None = None,
    corpus: SourceCorpus | None = None,
    pairs: dict[str, str] | None = None,
    allow_new: bool = True,
    bases: list[Path] | None = None,
) -> dict[str, Any]:
    """Everything the templates need, computed from the run's documents.

    With a `baseline`, the gate's comparison (prompts paired by name or by `pairs`; a new
    prompt fails only when `allow_new` is False, as in the gate) and both runs side by side.
    `bases` are where the runs' prompt files are looked for (template diffs)."""
    ctx: dict[str, Any] = {
        "results": results,
        "horizon": _horizon_view(horizon) if horizon else None,
        "matchers": _matchers_view(matchers) if matchers else None,
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "category_labels": CATEGORY_LABELS,
        "category_short": CATEGORY_SHORT,
        "recall_colour": plots.recall_colour,
        "tune": None,
        "trends": None,
    }
    if results is None:
        return ctx
    from compaction_eval.report.tables import tier_line

    ctx["tier_line"] = tier_line(results) if results.get("prompts") is not None else None
    corpus = corpus or SourceCorpus()
    present = {c for s in results.get("samples", []) for c in s.get("recall_by_category", {})}
    categories = [c for c in CATEGORIES if c in present]
    board = _leaderboard(results, categories)
    prompts = [r["prompt"] for r in board]
    gate = None
    if baseline is not None:
        from compaction_eval.gate.rules import GateInputError, gate_runs

        try:
            # the gate's own verdict, with its default rules and tolerances; runs made with other
            # settings (budget, model) are compared, as `gate --allow-setting-changes` does, and
            # the gate's warning names the difference
            gate = gate_runs(baseline, results, allow_setting_changes=True, baseline_path=baseline_name or "baseline",
                             candidate_path=str(results.get("run") or "this run"), pairs=pairs, allow_new=allow_new)
            ctx["comparison"] = _comparison_view(gate, categories)
            ctx["comparison"]["diffs"] = template_diffs(baseline, results, gate.comparison, bases=bases)
        except (GateInputError, CorpusMismatch) as exc:
            ctx["comparison_error"] = [str(p) for p in exc.problems]
        ctx["baseline_name"] = baseline_name or baseline.get("run")
    # the baseline's partners of the compared prompts join the frontier, the heat map and the
    # drill-down (as `handoff (baseline)`), so the page shows both runs, not only this one
    partners = {pc.partner: pc.partner + BASELINE_SUFFIX for pc in gate.comparison.prompts} if gate is not None else {}
    base_board = [r | {"prompt": partners[r["prompt"]], "baseline": True}
                  for r in _leaderboard(baseline or {}, categories) if r["prompt"] in partners]
    both = sorted(board + base_board, key=lambda r: -(_num(r.get("recall")) or 0.0)) if base_board else board
    frontier, front = _frontier(both)
    extra = _baseline_samples(baseline or {}, partners)
    order = [n for p in prompts for n in (p, partners.get(_partner_of(gate, p), "")) if n]
    ctx.update(
        categories=categories,
        board=board,
        verdict=_verdict(results, board),
        frontier=frontier,
        front=front,
        heat=_heat(both, categories),
        samples=_drilldown(results, list(dict.fromkeys(order + list(partners.values()))), corpus, extra),
        corpus_note=corpus.missing,
        prompts=prompts,
    )
    return ctx


def _partner_of(gate: Any, prompt: str) -> str:
    """The baseline prompt a prompt of this run was compared with ("" when not compared)."""
    if gate is None:
        return ""
    return next((pc.partner for pc in gate.comparison.prompts if pc.prompt == prompt), "")


# ----------------------------------------------------------------------------- rendering


def _fmt(x: Any, digits: int = 2) -> str:
    x = _num(x)
    return "–" if x is None else f"{x:.{digits}f}"


def _signed(x: Any, digits: int = 3) -> str:
    """A signed difference with enough digits to see its sign: -0.004 at 2 digits is
    `-0.004`, never `+0.00` (a regression must not read as no change); float noise (below
    1e-9) is zero.

    >>> _signed(-0.004, 2), _signed(0.05, 2), _signed(1e-15), _signed(0.0)
    ('-0.004', '+0.05', '+0.000', '+0.000')
    """
    x = _num(x)
    if x is None:
        return "–"
    if abs(x) < 1e-9:
        return f"{0.0:+.{digits}f}"
    while round(x, digits) == 0 and digits < 9:
        digits += 1
    return f"{x:+.{digits}f}"


def _compact(x: Any) -> str:
    """Token counts for narrow cells: 760, 20.4k, 1.2M."""
    x = _num(x)
    if x is None:
        return "–"
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            v = x / div
            return f"{v:.1f}{unit}" if v < 100 else f"{v:.0f}{unit}"
    return f"{x:.0f}"


def _ratio(x: Any) -> str:
    x = _num(x)
    return "–" if x is None else (f"{x:.0f}×" if x >= 10 else f"{x:.1f}×")


def _when(iso: Any) -> str:
    """An ISO timestamp as `2026-11-29 22:39 UTC` (as given when it does not parse)."""
    if not iso:
        return "–"
    try:
        t = _dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc)
        return t.strftime("%Y-%m-%d %H:%M UTC")
    return t.strftime("%Y-%m-%d %H:%M")


def _capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _pct(x: Any, digits: int = 1) -> str:
    x = _num(x)
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def _usd(x: Any) -> str:
    x = _num(x)
    return "–" if x is None else f"${x:,.3f}"


def _thousands(x: Any) -> str:
    x = _num(x)
    return "–" if x is None else f"{x:,.0f}"


def environment() -> jinja2.Environment:
    """The jinja2 environment of the report: autoescaping on for every template."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,  # every template, whatever its name: .html.j2 is not in select_autoescape's list
        # optional keys of results written by older or other tools render as absent, not as errors
        undefined=jinja2.ChainableUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=_pct, usd=_usd, fmt=_fmt, signed=_signed, thousands=_thousands, when=_when, compact=_compact, ratio=_ratio, capitalize_first=_capitalize_first)
    env.globals.update(sample_id=_sample_id)
    return env


def _assets() -> dict[str, Any]:
    """The inline stylesheet and script, and the script's CSP hash (so that no other script,
    should one ever be injected, could run)."""
    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    script = (TEMPLATES / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return {"css": Markup(css), "script": Markup(script), "script_hash": f"sha256-{digest}"}


def render_html(context: dict[str, Any]) -> str:
    """The page for a context from `build_context`."""
    results = context.get("results")
    run = (results or {}).get("run") or ""
    title = f"compaction-eval · {run}" if run else "compaction-eval report"
    return environment().get_template("report.html.j2").render(**_assets(), title=title, **context)


def render_report(
    run_dir: Path,
    *,
    baseline: Path | None = None,
    out: Path | None = None,
    traces: list[str] | None = None,
    labels: list[str] | None = None,
    allow_setting_changes: bool = False,
    history: Path | None = None,
    pairs: dict[str, str] | None = None,
    allow_new: bool = True,
) -> Path:
    """Write the HTML report of a run directory and return its path.

    Args:
        run_dir: a run directory with results.json and/or horizon.json.
        baseline: another run directory (or results.json) to compare with: adds the
            paired comparison and the gate verdict. Runs on different corpora are not
            compared; the page says why.
        out: where to write (default run_dir/report.html).
        traces, labels: where the run's traces and labels are, for fact text and source
            excerpts (default: the paths in the run's config).
        allow_setting_changes: compare with a baseline made with another model, budget,
            shape or focus (refused otherwise, as by the gate).
        history: a run history database (`compaction-eval history`): adds the "over time"
            section.
        pairs, allow_new: as the gate's (`--pair mine=handoff`, `--allow-new`); a report
            shows a new prompt's numbers whatever `allow_new` says, the verdict follows it.

    Raises ContractError when the directory holds no results.
    """
    run_dir = Path(run_dir)
    has_results = (run_dir / RESULTS_FILE).exists() or run_dir.is_file()
    horizon = read_horizon(run_dir) if run_dir.is_dir() else None
    if not has_results and horizon is None:
        raise ContractError([Problem(str(run_dir), "", f"no {RESULTS_FILE} or {HORIZON_FILE}: not a run directory")])
    results = read_results(run_dir) if has_results else None
    base = read_results(baseline) if baseline is not None else None
    if base is not None and results is not None:
        from compaction_eval.gate.rules import check_comparable

        # the gate's own rule: a report does not show "gate: pass" for runs the gate refuses
        check_comparable(base, results, str(run_dir), allow_setting_changes=allow_setting_changes)
    from compaction_eval.tune.ablation import (
        read_tune,  # tune.json, written by `compaction-eval tune --results RUN_DIR`
    )

    tune = read_tune(run_dir) if run_dir.is_dir() else None
    from compaction_eval.tune.optimize import read_optimize  # optimize.json, from `tune --optimize --results RUN_DIR`

    optimize = read_optimize(run_dir) if run_dir.is_dir() else None
    corpus = load_source_corpus(results, run_dir, traces, labels) if results else None
    matchers = read_matchers(run_dir) if run_dir.is_dir() else None
    context = build_context(
        results, horizon=horizon, matchers=matchers, baseline=base, baseline_name=str(baseline) if baseline else None, corpus=corpus,
        pairs=pairs, allow_new=allow_new, bases=[Path.cwd(), *run_dir.resolve().parents],
    )
    target = Path(out) if out is not None else (run_dir if run_dir.is_dir() else run_dir.parent) / REPORT_FILE
    if tune is not None:
        from compaction_eval.report.tune_view import tune_view

        context["tune"] = tune_view(tune)
    if run_dir.is_dir():  # replay.json, decay.json, probes.json (compaction-eval replay/decay/probes)
        from compaction_eval.report.replay_view import replay_sections

        context["replay_html"] = replay_sections(run_dir)
    context["optimize"] = optimize
    if history is not None:
        from compaction_eval.report.trends_view import trends_view

        context["trends"] = trends_view(history)
    if results is not None:
        context["fixes"] = fixes_view(results)
    write_text_atomic(target, render_html(context))
    return target
