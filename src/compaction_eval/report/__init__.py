"""The HTML report: one self-contained file per run (see `render.render_report`)."""

from compaction_eval.report.render import render_report

__all__ = ["render_report"]
