"""Terminal tables and HTML sections for replay.json, decay.json and probes.json.

Numbers come from the files as computed upstream; labels, ids and names are escaped.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.contracts.traces import parse_json_text
from compaction_eval.report.horizon_table import cost_line, usd

SHORT = {"intent": "int", "constraint": "con", "decision": "dec", "bug": "bug", "artifact": "art", "number": "num",
         "attempt": "att", "next_step": "nxt"}


def _pct(x: float | None) -> str:
    return "  -" if x is None else f"{100 * x:3.0f}"


def _stand_in(data: dict[str, Any]) -> str:
    recorded = f" ({data['recorded_answers']['note']})" if isinstance(data.get("recorded_answers"), dict) else ""
    return (f" (OFFLINE STAND-IN: {data.get('stand_in_note')})" if data.get("offline_stand_in") else "") + recorded


def format_replay(data: dict[str, Any]) -> str:
    lines = [f"Replay of recorded traces under context policies, compaction model {data['model']}{_stand_in(data)}",
             f"{len(data['traces'])} traces; visible recall = expected facts visible in the agent's context at each labelled point",
             f"{'policy':<16}{'window':>7}  {'visible (95% CI)':>19}  {'request':>7}  "
             + " ".join(f"{SHORT[c]:>3}" for c in CATEGORIES) + f"  {'compact':>7} {'overflow':>8} {'cost $':>8}"]
    for p in data["policies"]:
        ci = p["visible_recall_ci"] or [None, None]
        cell = f"{_pct(p['visible_recall'])} [{_pct(ci[0])},{_pct(ci[1])}]"
        lines.append(f"{escape_term(p['policy']):<16}{p['window']:>7}  {cell:>19}  {_pct(p['request_visible']):>7}  "
                     + " ".join(f"{_pct(p['by_category'].get(c)):>3}" for c in CATEGORIES)
                     + f"  {p['compactions'] or 0:>7.1f} {p['overflow_samples']:>8} {usd(p['cost_usd']):>8}")
    if data.get("cost_model"):
        lines.append(cost_line({**data["cost_model"], "source": "simulated from the replayed requests"}))
    return "\n".join(lines)


def format_decay(data: dict[str, Any]) -> str:
    lines = [f"Decay through repeated compaction, model {data['model']}{_stand_in(data)}",
             ("survival of facts established before the first compaction, after k compactions "
              "(re-derived facts, back from later messages, are counted apart: +n)")]
    for p in data["prompts"]:
        curve = "  ".join(f"k{s['k']} {_pct(s['survival'])}" + (f" +{s['rederived']}" if s["rederived"] else "") for s in p["survival"])
        half = ", ".join(f"{SHORT.get(c, c)} {v if v is not None else '-'}" for c, v in p["half_life"].items())
        lines.append(f"{escape_term(p['prompt']):<16} {curve}")
        lines.append(f"{'':<16} half-life (compactions): {half}")
    return "\n".join(lines)


def format_probes(data: dict[str, Any]) -> str:
    lines = [f"Probes with only the compacted context: compaction {data['model']}, reader {data.get('reader')}{_stand_in(data)}",
             f"{'prompt':<16} {'accuracy (95% CI)':>19}  {'recall':>6} {'artif':>6} {'contin':>6} {'decis':>6}  {'in summary':>10} {'in context':>10}"]
    for p in data["prompts"]:
        ci = p["accuracy_ci"] or [None, None]
        cell = f"{_pct(p['accuracy'])} [{_pct(ci[0])},{_pct(ci[1])}]"
        t = p["by_type"]
        lines.append(f"{escape_term(p['prompt']):<16} {cell:>19}  {_pct(t.get('recall')):>6} {_pct(t.get('artifact')):>6} "
                     f"{_pct(t.get('continuation')):>6} {_pct(t.get('decision')):>6}  {_pct(p['summary_recall']):>10} {_pct(p['context_recall']):>10}")
    return "\n".join(lines)


def format_mode(mode: str, data: dict[str, Any]) -> str:
    return {"replay": format_replay, "decay": format_decay, "probes": format_probes}[mode](data)


def escape_term(text: Any) -> str:
    """Names from untrusted files, without control characters (terminal escapes)."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(text))


# ------------------------------------------------------------------------------ HTML


def _svg_curves(prompts: list[dict[str, Any]], width: int = 420, height: int = 200) -> str:
    """Survival (y, 0-1) against compactions k (x), one polyline per prompt."""
    k_max = max((p["k_max"] for p in prompts), default=1) or 1
    colours = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
    pad = 30

    def xy(k: int, v: float) -> str:
        x = pad + (k - 1) * (width - 2 * pad) / max(k_max - 1, 1)
        y = height - pad - v * (height - 2 * pad)
        return f"{x:.1f},{y:.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="decay curves">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>',
             f'<text x="{pad - 4}" y="{pad + 4}" font-size="10" text-anchor="end">1</text>',
             f'<text x="{pad - 4}" y="{height - pad}" font-size="10" text-anchor="end">0</text>']
    for k in range(1, k_max + 1):
        x = xy(k, 0).split(",")[0]
        parts.append(f'<text x="{x}" y="{height - pad + 14}" font-size="10" text-anchor="middle">{k}</text>')
    for i, p in enumerate(prompts):
        pts = " ".join(xy(s["k"], s["survival"]) for s in p["survival"] if s["survival"] is not None)
        colour = colours[i % len(colours)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"><title>{escape(str(p["prompt"]))}</title></polyline>')
        parts.append(f'<text x="{width - pad + 2}" y="{pad + 12 * i}" font-size="10" fill="{colour}">{escape(str(p["prompt"]))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _note(data: dict[str, Any]) -> str:
    return f'<p class="standin"><b>Offline stand-in:</b> {escape(str(data.get("stand_in_note")))}</p>' if data.get("offline_stand_in") else ""


def _td(x: Any) -> str:
    return f"<td>{escape(str(x))}</td>"


def replay_sections(run_dir: Path | str) -> str:
    """The HTML sections for whichever of the three files `run_dir` holds ('' if none)."""
    run_dir = Path(run_dir)
    out = []
    replay = _read(run_dir / "replay.json")
    if replay:
        rows = "".join(
            "<tr>" + _td(p["policy"]) + _td(p["window"]) + _td(f"{_pct(p['visible_recall'])} [{_pct((p['visible_recall_ci'] or [None])[0])}, {_pct((p['visible_recall_ci'] or [None, None])[1])}]")
            + _td(_pct(p["request_visible"])) + "".join(_td(_pct(p["by_category"].get(c))) for c in CATEGORIES)
            + _td(p["compactions"]) + _td(p["overflow_samples"]) + _td(usd(p["cost_usd"])) + "</tr>"
            for p in replay["policies"])
        head = "".join(f"<th>{escape(h)}</th>" for h in ["policy", "window", "visible recall (95% CI)", "request kept",
                                                           *[SHORT[c] for c in CATEGORIES], "compactions", "overflow", "cost $"])
        out.append(f'<section id="replay"><h2>Replay of recorded traces: what each context policy keeps visible</h2>{_note(replay)}'
                   f"<p>{len(replay['traces'])} traces ({len(replay.get('synthetic_traces') or [])} synthetic), compaction model {escape(str(replay['model']))}.</p>"
                   f"<table><tr>{head}</tr>{rows}</table></section>")
    decay = _read(run_dir / "decay.json")
    if decay:
        rows = "".join(
            "<tr>" + _td(p["prompt"]) + "".join(_td(f"{_pct(s['survival'])}" + (f" (+{s['rederived']} re-derived)" if s["rederived"] else "")) for s in p["survival"])
            + _td(", ".join(f"{c}: {v if v is not None else '-'}" for c, v in p["half_life"].items())) + "</tr>"
            for p in decay["prompts"])
        k_max = max((p["k_max"] for p in decay["prompts"]), default=0)
        head = "<th>prompt</th>" + "".join(f"<th>k={k}</th>" for k in range(1, k_max + 1)) + "<th>half-life by category</th>"
        out.append(f'<section id="decay"><h2>Decay through repeated compaction</h2>{_note(decay)}'
                   "<p>Survival of the facts established before the first compaction, after k compactions "
                   "(each summary written from the previous one). Re-derived facts are counted apart.</p>"
                   f"{_svg_curves(decay['prompts'])}<table><tr>{head}</tr>{rows}</table></section>")
    probes = _read(run_dir / "probes.json")
    if probes:
        rows = "".join(
            "<tr>" + _td(p["prompt"]) + _td(_pct(p["accuracy"])) + "".join(_td(_pct(p["by_type"].get(t))) for t in ("recall", "artifact", "continuation", "decision"))
            + _td(_pct(p["summary_recall"])) + _td(_pct(p["context_recall"])) + "</tr>" for p in probes["prompts"])
        head = "".join(f"<th>{h}</th>" for h in ["prompt", "probe accuracy", "recall", "artifact", "continuation", "decision", "summary recall", "context recall"])
        out.append(f'<section id="probes"><h2>Probes: usable from the compacted context, against recall</h2>{_note(probes)}'
                   f"<p>Reader: {escape(str(probes.get('reader')))}.</p><table><tr>{head}</tr>{rows}</table></section>")
    return "\n".join(out)


def _read(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    from compaction_eval.contracts.problems import ContractError, Problem

    try:
        return parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except json.JSONDecodeError as exc:
        raise ContractError([Problem(str(path), f"line {exc.lineno}", f"malformed JSON: {exc.msg}")]) from None
