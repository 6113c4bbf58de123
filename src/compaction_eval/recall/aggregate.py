"""Per-sample records -> per-prompt statistics with bootstrap confidence intervals."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.stats.bootstrap import bootstrap_mean_ci, mean


def _with_ci(values: list[float]) -> dict[str, Any]:
    lo, hi = bootstrap_mean_ci(values)
    return {"mean": mean(values), "ci": [lo, hi], "n": len(values)}


def uncertain_count(sample: dict[str, Any]) -> int:
    """A sample's uncertain fact verdicts (probability near 0.5): its `uncertain` field, or
    counted from its facts for records written before the field existed."""
    if "uncertain" in sample:
        return int(sample["uncertain"])
    return sum(1 for f in sample.get("facts", []) if f.get("uncertain"))


def summarise_prompts(samples: list[dict[str, Any]], descriptions: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per prompt: means over samples with 95% intervals (samples are resampled)."""
    by_prompt: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        by_prompt[s["prompt"]].append(s)
    rows = []
    for prompt, group in by_prompt.items():
        recall = _with_ci([s["recall"] for s in group])
        precision = _with_ci([s["precision"] for s in group])
        context = _with_ci([s["context_recall"] for s in group])
        by_category = {}
        for cat in CATEGORIES:
            vals = [s["recall_by_category"][cat] for s in group if cat in s["recall_by_category"]]
            if vals:
                by_category[cat] = _with_ci(vals)
        origins = {"synthetic": [s for s in group if s.get("synthetic")], "real": [s for s in group if not s.get("synthetic")]}
        by_origin = {k: _with_ci([s["recall"] for s in v]) for k, v in origins.items() if v}
        rows.append(
            {
                "prompt": prompt,
                # real and synthetic traces are told apart: a stand-in can do well on one only
                "recall_by_origin": by_origin,
                "description": (descriptions or {}).get(prompt, ""),
                "samples": len(group),
                "recall": recall["mean"],
                "recall_ci": recall["ci"],
                "precision": precision["mean"],
                "precision_ci": precision["ci"],
                "context_recall": context["mean"],
                "context_recall_ci": context["ci"],
                "recall_by_category": by_category,
                "critical_lost": sum(len(s["critical_lost"]) for s in group),
                # verdicts near the calibrated boundary: how far to trust the recall figure
                "uncertain": sum(uncertain_count(s) for s in group),
                "verdicts": sum(len(s.get("facts", [])) for s in group),
                "distortions": sum(len(s["distortions"]) for s in group),
                "avoid_present": sum(sum(1 for a in s["avoid"] if a["present"]) for s in group),
                "compression": mean([s["compression"] for s in group]),
                "summary_tokens": mean([s["summary_tokens"] for s in group]),
                "budget_truncated": sum(1 for s in group if s["budget_truncated"]),
                "input_tokens": sum(s["input_tokens"] for s in group),
                "output_tokens": sum(s["output_tokens"] for s in group),
            }
        )
    # Recall first: the leaderboard order users read.
    rows.sort(key=lambda r: (-r["recall"], -r["precision"], r["prompt"]))
    return rows
