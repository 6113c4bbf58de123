"""The recall-first tuning frontier (tune.json) in the report: a table and a plot."""

from __future__ import annotations

from typing import Any

from compaction_eval.report import plots


def tune_svg(frontier: list[dict[str, Any]], recommended: int) -> str:
    """Recall (and completion, when measured) against the number of fields left, from all
    fields on the left to one on the right; the recommended stop is ringed."""
    import matplotlib.pyplot as plt

    xs = [len(p["fields"]) for p in frontier]
    with plt.rc_context(plots._STYLE):
        fig, ax = plt.subplots(figsize=(11.8, 3.6))
        for key, label, colour, marker in (("recall", "recall", plots.ACCENT, "o"), ("completion", "completion", plots.INK, "s")):
            ys = [p.get(key) for p in frontier]
            if all(y is None for y in ys):
                continue
            pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker=marker, color=colour, lw=1.8, label=label)
            ci_key = f"{key}_ci"
            for p, x in zip(frontier, xs, strict=True):
                if p.get(ci_key):
                    ax.plot([x, x], p[ci_key], color=colour, alpha=0.35, lw=5, solid_capstyle="round")
            rec = frontier[recommended].get(key)
            if rec is not None:
                ax.plot([xs[recommended]], [rec], "o", ms=16, mfc="none", mec="#c0392b", mew=2)
        for p, x in zip(frontier, xs, strict=True):
            if p.get("removed"):
                ax.annotate(f"-{p['removed']}", (x, 0.02), ha="center", fontsize=8, color=plots.MUTED)
        ax.set_xlim(max(xs) + 0.5, min(xs) - 0.5)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("fields left in the prompt (backward elimination, left to right)")
        ax.set_ylabel("share")
        ax.legend(loc="upper right", frameon=False)
        fig.tight_layout()
        return plots._to_svg(fig, "tune", "Recall-first tuning frontier")


def tune_view(tune: dict[str, Any]) -> dict[str, Any]:
    """What the _tune template needs."""
    frontier = tune.get("frontier", [])
    return {
        "t": tune,
        "rows": [{**p, "step": i, "n_fields": len(p["fields"]), "recommended": i == tune.get("recommended")} for i, p in enumerate(frontier)],
        "chart": tune_svg(frontier, tune.get("recommended", 0)) if frontier else None,
        "recommended_fields": frontier[tune.get("recommended", 0)]["fields"] if frontier else [],
    }
