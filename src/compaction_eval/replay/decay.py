"""Decay of facts through repeated compaction.

For a trace, a chain of K compactions at successive cut points c_1 < ... < c_K: the first
summarises messages[0:c_1]; the k-th summarises the original request, the previous summary
and messages[c_{k-1}:c_k] (the way inspect's `CompactionSummary` works inside `react()`: the
second summary is written from the first). c_1 is the trace's first labelled point and the
others are spread evenly to the end of the trace. The facts established before c_1 (and not
superseded before c_K) are scored in each summary with the recall suite's matchers.

- `survived` at k: kept in every summary 1..k (monotone by construction);
- `rederived` at k: kept at k after being lost at some earlier compaction; `from_tail` when
  its anchors occur in messages[c_{k-1}:c_k] (it came back from what the agent did since,
  not from memory). Re-derivations never count as survival;
- `present` at k = survived + rederived (what the k-th summary holds).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageUser, Model

from compaction_eval.compaction.compact import SUMMARY_LABEL
from compaction_eval.contracts.labels import Fact, Labels
from compaction_eval.contracts.prompts import Candidate
from compaction_eval.contracts.settings import HORIZON_COMPACTION, CompactionSettings
from compaction_eval.contracts.traces import Trace
from compaction_eval.horizon.policies.full import FullCompaction
from compaction_eval.horizon.policies.notes import NotesBook
from compaction_eval.recall.matching.literal import SummaryText, match_key_sets
from compaction_eval.recall.scoring import score_summary
from compaction_eval.replay.common import replay_messages

DEFAULT_K = 5
MIN_SPAN_MESSAGES = 2


@dataclass(frozen=True)
class DecaySettings:
    """Args: k: compactions in the chain (fewer when the trace is too short: each span after
    the first needs `min_span` messages); compaction: each compaction's budget and focus
    (the span is rendered inline, so `shape: messages` is refused; `keep_last` does not
    apply: each compaction summarises its whole span)."""

    k: int = DEFAULT_K
    compaction: CompactionSettings = HORIZON_COMPACTION
    min_span: int = MIN_SPAN_MESSAGES

    def __post_init__(self) -> None:
        self.compaction.require_inline("decay")


def cut_points(n_messages: int, first: int, k: int, min_span: int = MIN_SPAN_MESSAGES) -> list[int]:
    """c_1 = `first`, then evenly spread to the end; as many as the trace allows, at most k."""
    first = max(1, min(first, n_messages))
    room = n_messages - first
    k = max(1, min(k, 1 + room // max(min_span, 1)))
    if k == 1:
        return [first]
    return [first + round(j * room / (k - 1)) for j in range(k)]


def early_facts(labels: Labels, cuts: list[int]) -> list[Fact]:
    """Facts established before the first cut and still valid at the last one."""
    return [f for f in labels.facts if f.expected_at(cuts[0]) and (f.valid_until is None or f.valid_until >= cuts[-1])]


def _anchors_in(fact: Fact, text: str) -> bool:
    return bool(fact.key_sets) and match_key_sets(SummaryText(text), fact.key_sets, inflect=True) is not None


async def decay_chain(trace: Trace, labels: Labels, candidate: Candidate, model: Model, settings: DecaySettings) -> dict[str, Any]:
    """Run the chain for one trace and prompt; the per-fact record of every compaction."""
    per_message, _tools, _protocol = replay_messages(trace)
    cuts = cut_points(len(trace.messages), min(labels.points), settings.k, settings.min_span)
    facts = early_facts(labels, cuts)
    scored = replace(labels, facts=tuple(facts), avoid=())
    budget = settings.compaction.budget
    compactor = FullCompaction(window=10**9, candidate=candidate, notes=NotesBook(), budget=budget, focus=settings.compaction.focus,
                               compactor=model)
    head: list[ChatMessage] = list(per_message[0])
    kept: dict[str, list[bool]] = {f.id: [] for f in facts}
    rederived: dict[str, list[dict[str, Any]]] = {f.id: [] for f in facts}
    summary = ""
    previous = 0
    for k, cut in enumerate(cuts, start=1):
        new = [m for msgs in per_message[previous:cut] for m in msgs]
        if k == 1:
            span = new
        else:
            span = [*head, ChatMessageUser(content=f"{SUMMARY_LABEL}\n{summary}", metadata={"summary": True}), *new]
        summary = await compactor._summary(span, budget)
        score = score_summary(summary, scored, trace, cut) if facts else None
        tail_text = "\n".join(trace.texts[previous:cut]) if k > 1 else ""
        for v in score.facts if score else []:
            history = kept[v.id]
            if v.kept and history and not all(history):
                fact = next(f for f in facts if f.id == v.id)
                rederived[v.id].append({"k": k, "from_tail": _anchors_in(fact, tail_text)})
            history.append(v.kept)
        previous = cut
    return {
        "trace": trace.id,
        "synthetic": labels.labelled_by == "generator",
        "prompt": candidate.name,
        "cuts": cuts,
        "k": len(cuts),
        "model_calls": len(compactor.calls),
        "input_tokens": sum(c["input_tokens"] for c in compactor.calls),
        "output_tokens": sum(c["output_tokens"] for c in compactor.calls),
        "last_summary": summary,
        "facts": [{"id": f.id, "category": f.category, "weight": f.weight, "kept": kept[f.id],
                   "survived": _survived(kept[f.id]), "rederived": rederived[f.id]} for f in facts],
    }


def _survived(kept: list[bool]) -> list[bool]:
    out, alive = [], True
    for x in kept:
        alive = alive and x
        out.append(alive)
    return out


def trace_curve(record: dict[str, Any], key: str = "survived") -> list[float]:
    """Weighted share of a chain's early facts `survived` (or `kept`) after each compaction."""
    facts = record["facts"]
    total = sum(f["weight"] for f in facts)
    if not total:
        return []
    return [sum(f["weight"] for f in facts if f[key][k]) / total for k in range(record["k"])]
