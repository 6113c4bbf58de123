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


TIERS = ("matcher", "judge")
"""Who produced a figure: the offline matcher (fast, free) or an LLM judge (`--judge-model`)."""


JUDGED_FIGURES = ("recall", "recall_by_category", "recall_by_origin", "critical_lost")
"""The figures made of the summary's fact verdicts: the judge's in the judge tier. The others
(context recall over the whole compacted context, precision, distortions, avoid items, the
calibrated `uncertain` count) are always the offline matcher's: the judge reads the summary's
facts only."""
MATCHER_FIGURES = ("context_recall", "precision", "distortions", "avoid_present", "uncertain")


def figure_tiers(tier: str) -> dict[str, str]:
    """Which tier produced each figure of a prompt row (results.json `figure_tiers`)."""
    return {name: tier for name in JUDGED_FIGURES} | {name: "matcher" for name in MATCHER_FIGURES}


def tier_fields(facts: list[dict[str, Any]], *, judge_model: str | None, judge_error: str | None = None) -> dict[str, Any]:
    """A sample's tier fields (optional in results@1): its `tier`; in the judge tier the
    judge, how many verdicts the matcher disagrees with (`matcher_disagreements`: shown, not
    hidden, and not applied), how many facts the judge left unanswered, and `judge_error`
    when its whole answer was unreadable (none of the sample's facts is kept then)."""
    if not judge_model:
        return {"tier": "matcher"}
    out: dict[str, Any] = {
        "tier": "judge",
        "judge_model": judge_model,
        "matcher_disagreements": sum(1 for f in facts if f.get("matcher_kept") is not None and f["matcher_kept"] != f["kept"]),
        "judge_unanswered": sum(1 for f in facts if f.get("judge_answered") is False),
    }
    if judge_error:
        out["judge_error"] = judge_error
    return out


def sample_tier(sample: dict[str, Any]) -> str:
    """A sample's tier: its `tier`, else "judge" when its facts say a judge decided (records
    written before the field existed)."""
    if sample.get("tier") in TIERS:
        return str(sample["tier"])
    return "judge" if any(f.get("matcher") == "judge" for f in sample.get("facts", [])) else "matcher"


def run_tier(results: dict[str, Any]) -> str:
    """The tier of a results.json: its `tier`, else "judge" when it was run with a judge
    model, else "matcher". A run mixes no tiers: every sample is scored the same way."""
    if results.get("tier") in TIERS:
        return str(results["tier"])
    return "judge" if (results.get("config") or {}).get("judge_model") else "matcher"


def _tier_row(group: list[dict[str, Any]]) -> dict[str, Any]:
    """A prompt's tier fields: the tier of its samples and, in the judge tier, the matcher
    cross-check's disagreements and the samples whose judge answer was unreadable."""
    tiers = sorted({sample_tier(s) for s in group})
    row: dict[str, Any] = {"tier": tiers[0] if len(tiers) == 1 else "mixed"}
    row["figure_tiers"] = figure_tiers(row["tier"])
    if "judge" in tiers:
        row["matcher_disagreements"] = sum(int(s.get("matcher_disagreements", 0)) for s in group)
        row["judge_unreadable"] = sum(1 for s in group if s.get("judge_error"))
    return row


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
                # which tier produced these figures (and the judge tier's cross-check)
                **_tier_row(group),
            }
        )
    # Recall first: the leaderboard order users read.
    rows.sort(key=lambda r: (-r["recall"], -r["precision"], r["prompt"]))
    return rows
