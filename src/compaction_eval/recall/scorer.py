"""Scorer: which expected facts survived, in the summary and in the whole context."""

from __future__ import annotations

from dataclasses import replace

from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Scorer, grouped, mean, scorer, stderr
from inspect_ai.solver import TaskState

from compaction_eval.compaction.cache import off_the_loop
from compaction_eval.contracts.labels import Labels
from compaction_eval.contracts.settings import is_stand_in
from compaction_eval.contracts.traces import Trace
from compaction_eval.recall.aggregate import tier_fields
from compaction_eval.recall.loading import labels_at, trace_at
from compaction_eval.recall.matching.judge import JudgeOutputError, judge_facts, unreadable
from compaction_eval.recall.scoring import FactScore, SummaryScore, score_facts, score_summary
from compaction_eval.recall.solver import STORE_KEY

METRICS = ("recall", "precision", "context_recall", "compression", "critical_lost", "distortions")
# Pooled over prompts, a mean says nothing about any one prompt (0.58 for prompts at 0.90
# and 0.27): the per-prompt metrics are what `inspect view` shows as the leaderboard.
BY_PROMPT = ("recall", "context_recall", "precision")
VERDICTS_KEY = "verdicts"
EXPLANATION_KEY = "explanation"


def _metrics() -> dict[str, list]:
    return {
        name: [grouped(mean(), "prompt", all=False)] if name in BY_PROMPT else [mean(), stderr()]
        for name in METRICS
    }


def headline(score: SummaryScore) -> str:
    """How many expected facts the summary kept, one line (Score.explanation)."""
    lost = sum(1 for v in score.facts if not v.kept)
    return f"kept {len(score.facts) - lost} of {len(score.facts)} expected facts (recall {score.recall:.2f})"


def explain(score: SummaryScore, labels: Labels) -> str:
    """What the summary lost, one line per fact after the headline (the sample's store,
    `explanation`, shown by `inspect view`)."""
    text = {f.id: f.text for f in labels.facts}
    lost = [v for v in score.facts if not v.kept]
    lines = [headline(score)]
    for v in lost:
        why = f" ({v.note})" if v.note else ""
        lines.append(f"- lost{' CRITICAL' if v.critical else ''} {v.category} `{v.id}`: {text.get(v.id, '')}{why}")
    for d in score.distortions:
        against = f" for `{d.expected}` (fact `{d.fact}`)" if d.expected else ""
        lines.append(f"- {d.kind.replace('_', ' ')}: `{d.found}`{against}")
    return "\n".join(lines)


def summary_scope(labels: Labels, at: int, tail_start: int) -> Labels:
    """`labels` without the facts whose every source lies in the verbatim tail."""
    facts = tuple(f for f in labels.facts if not f.expected_at(at) or any(s < tail_start for s in f.source))
    return replace(labels, facts=facts)


def _inputs(trace_path: str, labels_path: str) -> tuple[Trace, Labels]:
    return trace_at(trace_path), labels_at(labels_path)


def _score_both(summary: str, in_scope: Labels, context: str, labels: Labels, trace: Trace, at: int,
                judged: dict | None) -> tuple[SummaryScore, FactScore]:
    """The summary scored against the facts in its scope, and the whole context against all
    (for its facts only: precision and distortions are the summary's)."""
    return score_summary(summary, in_scope, trace, at, judged=judged), score_facts(context, labels, at)


@scorer(metrics=_metrics())
def fact_recall(judge_model: str | None = None) -> Scorer:
    """Score the compacted sample by the kept rule (DESIGN.md 4).

    Args:
        judge_model: optional model that judges every expected fact in the summary's scope
            (the judge tier: one request per sample); the matcher's verdicts stay beside its
            own as a cross-check. Without it the matcher tier decides.
    """

    async def score(state: TaskState, target) -> Score:
        meta = state.metadata
        compacted = state.store.get(STORE_KEY)
        # CPU-bound work (reading inputs, scoring) runs off the event loop with a paid model,
        # so answers arriving for other samples are received and journaled at once instead of
        # waiting behind it (compaction.cache.off_the_loop).
        paid = not is_stand_in(compacted["model"]) or (judge_model is not None and not is_stand_in(judge_model))
        trace, labels = await off_the_loop(_inputs, meta["trace_path"], meta["labels_path"], paid=paid)
        at = meta["point"]
        summary = compacted["summary"]
        # The summary answers for the facts it could read: a fact established only in the
        # verbatim tail is not its job (the context score counts it).
        in_scope = summary_scope(labels, at, compacted["split"]["tail_start"])
        judged = None
        judge_error = None
        if judge_model:
            facts = in_scope.expected(at)
            try:
                judged = await judge_facts(get_model(judge_model), summary, facts)
            except JudgeOutputError as exc:
                # the sample keeps none of its facts and says why; the run goes on
                judged, judge_error = unreadable(facts, exc), str(exc)[:300]
        on_summary, on_context = await off_the_loop(_score_both, summary, in_scope, compacted["context"], labels, trace, at, judged, paid=paid)
        detail = on_summary.to_json()
        detail.update(tier_fields(detail["facts"], judge_model=judge_model, judge_error=judge_error))
        detail["tail_only_facts"] = sorted({f.id for f in labels.expected(at)} - {f.id for f in in_scope.expected(at)})
        compression = compacted["span_tokens"] / max(compacted["summary_tokens"], 1)
        # The verdicts, and the lost facts spelled out, go to the sample's store (written to
        # the log with the sample, then dropped), not the Score: inspect keeps every sample's
        # Score, and a summary of it, until the run ends (and deep-copies every Score once per
        # metric when it aggregates). A Score of numbers and a headline is what grows with
        # the run; the summary itself is the sample's output.
        state.store.set(EXPLANATION_KEY, explain(on_summary, in_scope))
        state.store.set(VERDICTS_KEY, {
            "summary_score": detail,
            "context_score": {
                "tier": "matcher",  # the whole context is scored offline, in either tier
                "recall": on_context.recall,
                "recall_by_category": on_context.recall_by_category,
                "facts": [{"id": f.id, "kept": f.kept} for f in on_context.facts],
            },
        })
        return Score(
            value={
                "recall": on_summary.recall,
                "precision": on_summary.precision,
                "context_recall": on_context.recall,
                "compression": compression,
                "critical_lost": float(len(on_summary.critical_lost)),
                "distortions": float(len(on_summary.distortions)),
            },
            explanation=headline(on_summary),
        )

    return score
