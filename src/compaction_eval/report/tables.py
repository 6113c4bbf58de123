"""Plain-text tables for the terminal."""

from __future__ import annotations

from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.contracts.settings import recorded_settings
from compaction_eval.recall.aggregate import run_tier

SHORT = {
    "intent": "int",
    "constraint": "con",
    "decision": "dec",
    "bug": "bug",
    "artifact": "art",
    "number": "num",
    "attempt": "att",
    "next_step": "nxt",
}


def _pct(x: float | None) -> str:
    return "  -" if x is None else f"{100 * x:3.0f}"


def _grid(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def tier_line(results: dict[str, Any]) -> str:
    """Which tier produced the run's verdicts, in words (tables and the report say it)."""
    if run_tier(results) == "judge":
        judge = results.get("judge_model") or (results.get("config") or {}).get("judge_model")
        unreadable = sum(int(p.get("judge_unreadable", 0)) for p in results["prompts"])
        note = f"; {unreadable} sample(s) with an unreadable judge answer keep nothing" if unreadable else ""
        return (f"verdicts: judge tier (LLM judge {judge} decides every fact: recall and recall by category; the offline matcher "
                f"is the cross-check, and produces ctx, prec, distortions and uncert){note}")
    return "verdicts: matcher tier (the offline matcher; no LLM judge)"


def format_leaderboard(results: dict[str, Any]) -> str:
    """Prompts x (recall with 95% CI, recall by category, precision, compression)."""
    cats = [c for c in CATEGORIES if any(c in p["recall_by_category"] for p in results["prompts"])]
    mixed = any(len(p.get("recall_by_origin", {})) > 1 for p in results["prompts"])
    origin_cols = ["synth", "real"] if mixed else []
    judged = any("matcher_disagreements" in p for p in results["prompts"])
    header = ["prompt", "tier", "recall (95% CI)", *(["m.disagree"] if judged else []), "uncert", *origin_cols,
              *[SHORT[c] for c in cats], "ctx", "prec", "crit.lost", "distort", "compr"]
    rows = []
    for p in results["prompts"]:
        lo, hi = p["recall_ci"]
        rows.append(
            [
                p["prompt"],
                p.get("tier") or run_tier(results),
                f"{100 * p['recall']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]",
                *([str(p.get("matcher_disagreements", "-"))] if judged else []),
                str(p["uncertain"]) if "uncertain" in p else "-",
                *[_pct(p["recall_by_origin"][o]["mean"]) if o in p["recall_by_origin"] else "  -" for o in (("synthetic", "real") if mixed else ())],
                *[_pct(p["recall_by_category"][c]["mean"]) if c in p["recall_by_category"] else "  -" for c in cats],
                _pct(p["context_recall"]),
                _pct(p["precision"]),
                str(p["critical_lost"]),
                str(p["distortions"]),
                f"{p['compression']:.1f}x",
            ]
        )
    corpus = results["corpus"]
    lines = [
        f"Fact recall, model {results['model']}"
        + (" (OFFLINE STAND-IN: extractive summariser, not an LLM)" if results["offline_stand_in"] else ""),
        *([f"({results['recorded_answers']['note']})"] if results.get("recorded_answers") else []),
        f"{corpus['traces']} traces ({corpus['synthetic_traces']} synthetic, {corpus['real_traces']} real), "
        f"{corpus['points']} points, {corpus['facts']} facts; budget {recorded_settings(results)['budget']} tokens",
        tier_line(results),
        "",
        _grid(header, rows),
        "",
        ("m.disagree = verdicts where the offline matcher (the cross-check) disagrees with the judge; " if judged else "")
        + "recall/by category/ctx/prec in %; uncert = fact verdicts near the calibrated boundary (n uncertain); "
        "ctx = recall on the whole compacted context; "
        + ("synth/real = recall on synthetic / real traces; " if mixed else "")
        + "; ".join(f"{SHORT[c]}={c}" for c in cats),
    ]
    return "\n".join(lines)


def format_score(score: Any) -> str:
    """One summary's verdicts, fact by fact."""
    lines = [f"recall {100 * score.recall:.1f}%  precision {100 * score.precision:.1f}%", ""]
    for f in score.facts:
        mark = "kept" if f.kept else "LOST"
        extra = f"  ({f.distortion})" if f.distortion else ""
        lines.append(f"  {mark:4}  {f.category:9}  {f.id}{' [critical]' if f.critical else ''}{extra}")
    for a in score.avoid:
        lines.append(f"  {'PRESENT' if a.present else 'absent':7}  avoid/{a.reason}  {a.id}")
    for d in score.distortions:
        lines.append(f"  distortion {d.kind}: {d.found!r}" + (f" (expected {d.expected!r})" if d.expected else ""))
    return "\n".join(lines)
