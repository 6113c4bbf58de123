"""Plots for the HTML report, rendered by matplotlib to inline SVG strings.

Deterministic output: Agg backend, text kept as text (`svg.fonttype: none`, so the page's
font is used and the text stays selectable), no metadata or dates, a fixed hash salt per
plot so that element ids are stable and differ between the plots of one page.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, no GUI toolkit
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap, to_hex  # noqa: E402
from matplotlib.typing import RcKeyType  # noqa: E402

# Restrained palette shared with the CSS (report.css.j2 uses the same hex values).
INK = "#1f2933"
MUTED = "#7b8794"
GRID = "#e4e7eb"
ACCENT = "#2f6fb0"
BEST = "#c2561a"

_STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "text.parse_math": False,  # prompt and config names are names, not TeX ($x$ stays $x$)
    "svg.image_inline": True,
    "font.family": "sans-serif",
    "font.size": 10,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "xtick.labelcolor": INK,
    "ytick.labelcolor": INK,
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
}

# Recall scale for heat cells: pale red (lost) -> pale yellow -> green-blue (kept). Light
# enough that dark text stays readable on every cell.
RECALL_CMAP = LinearSegmentedColormap.from_list("recall", ["#f4c7b8", "#fbeec1", "#cfe8d5", "#8fc9b0"])
DELTA_CMAP = LinearSegmentedColormap.from_list("delta", ["#e89a85", "#f7f7f7", "#8fc9b0"])


def recall_colour(value: float | None) -> str:
    """Background colour of a heat-map cell for a recall in [0, 1] (grey when missing)."""
    if value is None or math.isnan(value):
        return "#f1f3f5"
    return to_hex(RECALL_CMAP(min(1.0, max(0.0, value))))


def delta_colour(delta: float | None, scale: float = 0.2) -> str:
    """Background colour for a difference in recall: red for drops, green for gains."""
    if delta is None or math.isnan(delta):
        return "#f1f3f5"
    return to_hex(DELTA_CMAP(0.5 + 0.5 * max(-1.0, min(1.0, delta / scale))))


_XML_HEAD = re.compile(r"^.*?(?=<svg)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
# matplotlib's `*{stroke-linejoin...}` rule would apply to the whole HTML page once inlined
_STYLE_DEFS = re.compile(r"<defs>\s*<style[^>]*>.*?</style>\s*</defs>\s*", re.S)
_ID = re.compile(r' id="([^"]+)"')
_REF = re.compile(r'(?:href="#|url\(#)([^")]+)')
_FONT_FAMILY = re.compile(r"font-family: [^;\"]+")


def _scoped_ids(svg: str, prefix: str) -> str:
    """Keep only the ids something refers to (markers, clip paths), prefixed per plot so
    that several plots inlined in one page never share an id."""
    used = set(_REF.findall(svg))
    svg = _ID.sub(lambda m: f' id="{prefix}-{m.group(1)}"' if m.group(1) in used else "", svg)
    return _REF.sub(lambda m: m.group(0)[: -len(m.group(1))] + f"{prefix}-{m.group(1)}", svg)


def _to_svg(fig: plt.Figure, salt: str, title: str) -> str:
    """The figure as an inline `<svg>` element with an accessible title, then closed."""
    with plt.rc_context({"svg.hashsalt": salt}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None}, bbox_inches="tight")
    plt.close(fig)
    svg = _METADATA.sub("", _XML_HEAD.sub("", buf.getvalue(), count=1))
    svg = _STYLE_DEFS.sub("", svg, count=1)
    svg = _scoped_ids(svg, f"plot-{salt}")
    # the page's font, not the font list matplotlib measured with
    svg = _FONT_FAMILY.sub("font-family: inherit", svg)
    # scale down with the page, never up past the size the text was laid out for
    svg = re.sub(r'<svg([^>]*?) width="([^"]*)" height="[^"]*"', r'<svg\1 role="img" style="max-width: \2"', svg, count=1)
    return svg.replace(">", f"><title>{_xml_text(title)}</title>", 1)


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class Point:
    """One prompt on the recall/precision plane."""

    name: str
    recall: float
    recall_ci: tuple[float, float]
    precision: float
    precision_ci: tuple[float, float]


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points not beaten on both recall and precision, by recall descending."""
    front: list[Point] = []
    for p in sorted(points, key=lambda p: (-p.recall, -p.precision)):
        if not front or p.precision > front[-1].precision:
            front.append(p)
    return front


def frontier_svg(points: Sequence[Point], best: str | None = None) -> str:
    """Recall (x, the main axis) against precision (y), 95% intervals as error bars, and
    the frontier of prompts that no other prompt beats on both."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(11.8, 4.8))
        front = pareto_front(points)
        if len(front) > 1:
            xs = [p.recall for p in front]
            ys = [p.precision for p in front]
            ax.step(xs, ys, where="post", color=GRID, lw=6, zorder=1, solid_capstyle="round")
        for p in points:
            colour = BEST if p.name == best else ACCENT
            ax.errorbar(
                p.recall, p.precision,
                xerr=[[max(0.0, p.recall - p.recall_ci[0])], [max(0.0, p.recall_ci[1] - p.recall)]],
                yerr=[[max(0.0, p.precision - p.precision_ci[0])], [max(0.0, p.precision_ci[1] - p.precision)]],
                fmt="o", color=colour, ecolor=colour, elinewidth=1.2, capsize=3, ms=7, alpha=0.9, zorder=3,
            )
        lo_x = min([p.recall_ci[0] for p in points] + [p.recall for p in points])
        hi_x = max([p.recall_ci[1] for p in points] + [p.recall for p in points])
        lo_y = min([p.precision_ci[0] for p in points] + [p.precision for p in points])
        hi_y = max([p.precision_ci[1] for p in points] + [p.precision for p in points])
        pad_x, pad_y = max(0.05, (hi_x - lo_x) * 0.15), max(0.05, (hi_y - lo_y) * 0.15)
        ax.set_xlim(max(0.0, lo_x - pad_x), min(1.02, hi_x + pad_x * 2))
        ax.set_ylim(max(0.0, lo_y - pad_y), min(1.02, hi_y + pad_y))
        ax.set_xlabel("fact recall  (more facts survive →)")
        ax.set_ylabel("precision  (less filler →)")
        fig.tight_layout()
        _place_labels(fig, ax, points, best)
        return _to_svg(fig, "frontier", "Recall against precision per prompt, with 95% intervals")


# label offsets tried in turn (points): right-above, right-below, left-above, left-below, further out
_OFFSETS = [(7, 6, "left"), (7, -15, "left"), (-7, 6, "right"), (-7, -15, "right"), (7, 18, "left"), (7, -27, "left")]


def _place_labels(fig: plt.Figure, ax: plt.Axes, points: Sequence[Point], best: str | None) -> None:
    """Name each point where its label overlaps no earlier label and no marker (greedy; the
    best prompt first, so it gets the plainest place)."""
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # matplotlib.use("Agg") above
    renderer = canvas.get_renderer()
    taken = []
    for p in points:  # the markers themselves
        x, y = ax.transData.transform((p.recall, p.precision))
        taken.append((x - 5, y - 5, x + 5, y + 5))
    for p in sorted(points, key=lambda p: p.name != best):
        label = None
        for dx, dy, ha in _OFFSETS:
            if label is not None:
                label.remove()
            label = ax.annotate(
                p.name, (p.recall, p.precision), xytext=(dx, dy), textcoords="offset points", ha=ha,
                fontsize=10, color=INK, fontweight="bold" if p.name == best else "normal", zorder=4,
                bbox={"boxstyle": "round,pad=0.12", "fc": "white", "ec": "none", "alpha": 0.85},
            )
            box = label.get_window_extent(renderer)
            rect = (box.x0, box.y0, box.x1, box.y1)
            if not any(rect[0] < t[2] and t[0] < rect[2] and rect[1] < t[3] and t[1] < rect[3] for t in taken):
                break
        taken.append(rect)


def interval_svg(rows: Sequence[tuple[str, float, tuple[float, float]]], *, xlabel: str, salt: str, title: str) -> str:
    """A dot-and-interval chart: one row per (label, value, (lo, hi)), values in [0, 1]."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(11.8, 0.6 + 0.42 * max(1, len(rows))))
        for i, (_label, value, (lo, hi)) in enumerate(rows):
            y = len(rows) - 1 - i
            # not clipped at the axes: a completion of exactly 0 or 1 is a whole dot
            ax.plot([lo, hi], [y, y], color=ACCENT, lw=2.2, solid_capstyle="round", clip_on=False)
            ax.plot([value], [y], "o", color=ACCENT, ms=7, clip_on=False)
            ax.annotate(f"{value:.2f}", (value, y), xytext=(0, 7), textcoords="offset points", ha="center", fontsize=9, color=INK)
        ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
        ax.set_xlim(-0.03, 1.03)  # room for the dots and labels at 0 and 1
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(xlabel)
        fig.tight_layout()
        return _to_svg(fig, salt, title)


# one colour per series of the line plot; the no-compaction loops get the warm colours
SERIES = ["#c2561a", "#e0a458", "#2f6fb0", "#2d7a55", "#7b5ea7", "#5aa9c9", "#9aa5b1", "#b4362a", "#4f6d7a", "#8fc9b0"]


def lines_svg(series: Sequence[tuple[str, Sequence[float]]], *, xlabel: str, ylabel: str, salt: str, title: str,
              ceiling: float | None = None, ceiling_label: str = "") -> str:
    """A line per (label, y values at x = 1, 2, ...); an optional dashed horizontal ceiling."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(11.8, 4.2))
        for i, (label, ys) in enumerate(series):
            ax.plot(range(1, len(ys) + 1), ys, color=SERIES[i % len(SERIES)], lw=1.8, label=label)
        if ceiling:
            ax.axhline(ceiling, color=MUTED, lw=1, ls="--")
            ax.annotate(ceiling_label, (0, ceiling), xycoords=("axes fraction", "data"), xytext=(4, 3),
                        textcoords="offset points", fontsize=9, color=MUTED)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xlim(left=1)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9.5)
        fig.tight_layout()
        return _to_svg(fig, salt, title)


def stacked_bars_svg(rows: Sequence[tuple[str, Sequence[float]]], parts: Sequence[tuple[str, str]], *, xlabel: str,
                     salt: str, title: str) -> str:
    """Horizontal stacked bars: one bar per (label, values), segments named and coloured by
    `parts` [(name, colour)]; the total is printed at each bar's end."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(11.8, 0.9 + 0.42 * max(1, len(rows))))
        for i, (_label, values) in enumerate(rows):
            y = len(rows) - 1 - i
            left = 0.0
            for (name, colour), v in zip(parts, values, strict=True):
                ax.barh(y, v, left=left, color=colour, height=0.62, label=name if i == 0 else None)
                left += v
            ax.annotate(f"${left:,.2f}", (left, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=9, color=INK)
        ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlim(0, max((sum(v) for _, v in rows), default=1.0) * 1.1 or 1.0)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(xlabel)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(parts), frameon=False, fontsize=9.5)
        fig.tight_layout()
        return _to_svg(fig, salt, title)
