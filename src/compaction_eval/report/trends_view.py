"""The report's "over time" section: each prompt's recall per night from the run history,
with its interval, and a visible break wherever the nights stop being comparable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compaction_eval.history.trends import Series, all_series, slide
from compaction_eval.report import plots


def trends_svg(found: list[Series]) -> str:
    """Recall (%) per night, one colour per prompt, a 95% band; no line crosses a break, and
    each break is a dashed vertical line naming what changed."""
    import matplotlib.pyplot as plt

    runs = sorted({n.run.id: n.run for s in found for n in s.nights}.values(), key=lambda r: (r.created, r.id))
    x_of = {r.id: i + 1 for i, r in enumerate(runs)}
    with plt.rc_context(plots._STYLE):
        fig, ax = plt.subplots(figsize=(11.8, 4.2))
        breaks: dict[int, set[str]] = {}
        for i, s in enumerate(found):
            colour = plots.SERIES[i % len(plots.SERIES)]
            for seg in sorted({n.segment for n in s.nights}):
                part = [n for n in s.nights if n.segment == seg and n.value is not None]
                xs = [x_of[n.run.id] for n in part]
                ax.plot(xs, [100 * n.value for n in part], color=colour, lw=1.8, marker="o", ms=3,  # type: ignore[operator]
                        label=s.label if seg == s.nights[0].segment else None)
                band = [(x, n) for x, n in zip(xs, part, strict=True) if n.lo is not None and n.hi is not None]
                if band:
                    ax.fill_between([x for x, _ in band], [100 * n.lo for _, n in band], [100 * n.hi for _, n in band],  # type: ignore[operator]
                                    color=colour, alpha=0.15, lw=0)
            for n in s.nights:
                if n.breaks:
                    breaks.setdefault(x_of[n.run.id], set()).update(n.breaks)
        for x, what in sorted(breaks.items()):
            ax.axvline(x - 0.5, color=plots.MUTED, lw=1, ls="--")
            ax.annotate(f"{', '.join(sorted(what))} changed", (x - 0.5, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                        textcoords="offset points", fontsize=8.5, color=plots.MUTED)
        ax.set_xlabel("run (oldest first)")
        ax.set_ylabel("recall %")
        ax.set_ylim(0, 100)
        ax.set_xlim(0.5, max(1, len(runs)) + 0.5)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9.5)
        fig.tight_layout()
        return plots._to_svg(fig, "trends", "recall per run, with 95% intervals; dashed lines: runs not comparable across")


def trends_view(db: Path | str) -> dict[str, Any]:
    """What `_trends.html.j2` shows, read from the history database at `db`."""
    from compaction_eval.history.store import open_store
    from compaction_eval.history.trends import sparkline

    with open_store(Path(db)) as conn:
        found = all_series(conn)
        slips = [hit for s in all_series(conn, category="all") if (hit := slide(s)) is not None]
    rows = []
    for s in found:
        last = s.nights[-1]
        rows.append({"prompt": s.subject, "runs": len(s.nights), "latest": last.value, "ci": [last.lo, last.hi],
                     "spark": sparkline(s.nights), "slip": next((h for h in slips if h.subject == s.subject), None)})
    breaks = sorted({(n.run.created, n.run.name or n.run.id[:12], ", ".join(n.breaks)) for s in found for n in s.nights if n.breaks})
    slipped = [{"prompt": h.subject, "category": h.category, "since": h.first.run.created, "run": h.first.run.name,
                "latest": h.latest.value, "baseline": h.baseline} for h in slips]
    return {"chart": trends_svg(found) if found else None, "rows": rows, "breaks": breaks, "slips": slipped, "db": str(db)}
