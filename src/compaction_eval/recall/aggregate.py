"""Per-sample records -> per-prompt statistics with bootstrap confidence intervals."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.stats.bootstrap import bootstrap_mean_ci, mean


def _with_ci(values: Sequence[float]) -> dict[str, Any]:
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


class PromptTotals:
    """One prompt's figures, gathered one sample at a time: running counts, and the per-sample
    values the means and intervals need as compact arrays (8 bytes a value), so a run keeps
    no sample records while it aggregates. Values keep the order samples were added in; the
    figures do not depend on it (exact sums, sorted bootstrap)."""

    def __init__(self) -> None:
        self.recall = array("d")
        self.precision = array("d")
        self.context_recall = array("d")
        self.by_category: dict[str, array] = {}
        self.by_origin: dict[str, array] = {"synthetic": array("d"), "real": array("d")}
        self.compression = array("d")
        self.summary_tokens = array("d")
        self.counts = dict.fromkeys(("critical_lost", "uncertain", "verdicts", "distortions", "avoid_present",
                                     "budget_truncated", "input_tokens", "output_tokens"), 0)
        self.tiers: set[str] = set()
        self.matcher_disagreements = 0
        self.judge_unreadable = 0

    def add(self, s: dict[str, Any]) -> None:
        """Count one sample record (a results@1 `samples[]` entry)."""
        self.recall.append(s["recall"])
        self.precision.append(s["precision"])
        self.context_recall.append(s["context_recall"])
        for cat, value in s["recall_by_category"].items():
            self.by_category.setdefault(cat, array("d")).append(value)
        self.by_origin["synthetic" if s.get("synthetic") else "real"].append(s["recall"])
        self.compression.append(s["compression"])
        self.summary_tokens.append(s["summary_tokens"])
        counts = self.counts
        counts["critical_lost"] += len(s["critical_lost"])
        counts["uncertain"] += uncertain_count(s)
        counts["verdicts"] += len(s.get("facts", []))
        counts["distortions"] += len(s["distortions"])
        counts["avoid_present"] += sum(1 for a in s["avoid"] if a["present"])
        counts["budget_truncated"] += 1 if s["budget_truncated"] else 0
        counts["input_tokens"] += s["input_tokens"]
        counts["output_tokens"] += s["output_tokens"]
        self.tiers.add(sample_tier(s))
        self.matcher_disagreements += int(s.get("matcher_disagreements", 0))
        self.judge_unreadable += 1 if s.get("judge_error") else 0

    def _tier_row(self) -> dict[str, Any]:
        """The tier of the prompt's samples and, in the judge tier, the matcher cross-check's
        disagreements and the samples whose judge answer was unreadable."""
        tiers = sorted(self.tiers)
        row: dict[str, Any] = {"tier": tiers[0] if len(tiers) == 1 else "mixed"}
        row["figure_tiers"] = figure_tiers(row["tier"])
        if "judge" in tiers:
            row["matcher_disagreements"] = self.matcher_disagreements
            row["judge_unreadable"] = self.judge_unreadable
        return row

    def row(self, prompt: str, description: str = "") -> dict[str, Any]:
        """The prompt's leaderboard row: means over samples with 95% intervals."""
        recall = _with_ci(self.recall)
        precision = _with_ci(self.precision)
        context = _with_ci(self.context_recall)
        # in the label order of categories, as every reader expects
        by_category = {cat: _with_ci(self.by_category[cat]) for cat in CATEGORIES if self.by_category.get(cat)}
        counts = self.counts
        return {
            "prompt": prompt,
            # real and synthetic traces are told apart: a stand-in can do well on one only
            "recall_by_origin": {k: _with_ci(v) for k, v in self.by_origin.items() if v},
            "description": description,
            "samples": len(self.recall),
            "recall": recall["mean"],
            "recall_ci": recall["ci"],
            "precision": precision["mean"],
            "precision_ci": precision["ci"],
            "context_recall": context["mean"],
            "context_recall_ci": context["ci"],
            "recall_by_category": by_category,
            "critical_lost": counts["critical_lost"],
            # verdicts near the calibrated boundary: how far to trust the recall figure
            "uncertain": counts["uncertain"],
            "verdicts": counts["verdicts"],
            "distortions": counts["distortions"],
            "avoid_present": counts["avoid_present"],
            "compression": mean(self.compression),
            "summary_tokens": mean(self.summary_tokens),
            "budget_truncated": counts["budget_truncated"],
            "input_tokens": counts["input_tokens"],
            "output_tokens": counts["output_tokens"],
            # which tier produced these figures (and the judge tier's cross-check)
            **self._tier_row(),
        }


class RunTotals:
    """Every prompt's `PromptTotals` of a run, fed one sample record at a time."""

    def __init__(self) -> None:
        self.prompts: dict[str, PromptTotals] = {}

    def add(self, sample: dict[str, Any]) -> None:
        self.prompts.setdefault(sample["prompt"], PromptTotals()).add(sample)

    def rows(self, descriptions: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """One row per prompt, recall first (see `summarise_prompts`)."""
        rows = [totals.row(prompt, (descriptions or {}).get(prompt, "")) for prompt, totals in self.prompts.items()]
        # Recall first: the leaderboard order users read.
        rows.sort(key=lambda r: (-r["recall"], -r["precision"], r["prompt"]))
        return rows


def summarise_prompts(samples: Iterable[dict[str, Any]], descriptions: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per prompt: means over samples with 95% intervals (samples are resampled)."""
    totals = RunTotals()
    for s in samples:
        totals.add(s)
    return totals.rows(descriptions)
