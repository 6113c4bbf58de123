"""Probes: questions asked after compaction, generated from the labels, graded by the matchers.

A sample (trace, point, prompt) is compacted as in the recall suite (`compaction.compact`);
then every expected fact becomes one probe, asked with only the compacted context:

| probe type     | fact categories            | the question shows                          |
|----------------|----------------------------|---------------------------------------------|
| `recall`       | bug, number, intent, constraint | bug/number: the fact with its exact anchors blanked; intent/constraint: its anchors as the topic |
| `artifact`     | artifact                   | the fact with its paths/symbols blanked      |
| `continuation` | next_step                  | its anchors as the topic                     |
| `decision`     | decision, attempt          | its anchors as the topic (the reason is asked) |

Exact categories (artifact, number, bug) blank their anchors, so an answer can only hold
them by reading them from the context; meaning categories show only their anchors, never the
fact's text, so repeating the question is not an answer. The answer is graded against the
fact with the recall suite's matchers (`recall.scoring.score_summary` on the answer alone):
exact categories exactly (a near-miss path or number fails), meaning categories by the
semantic matcher. Probe accuracy sits beside summary recall: the gap between a fact being
in the summary and being usable from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from inspect_ai.model import ChatMessageUser, GenerateConfig, Model

from compaction_eval.compaction.cache import generate_cached, use_generate_cache
from compaction_eval.compaction.compact import compact_sample
from compaction_eval.contracts.labels import EXACT_CATEGORIES, Fact, Labels
from compaction_eval.contracts.prompts import Candidate
from compaction_eval.contracts.settings import CompactionSettings
from compaction_eval.contracts.traces import Trace
from compaction_eval.recall.scoring import score_facts, score_summary
from compaction_eval.standins.reader import probe_request

PROBE_TYPES = ("recall", "artifact", "continuation", "decision")
TYPE_OF = {"bug": "recall", "number": "recall", "intent": "recall", "constraint": "recall", "artifact": "artifact",
           "next_step": "continuation", "decision": "decision", "attempt": "decision"}
QUESTIONS = {
    "bug": "What was the exact error (its type and message, quoted exactly)?",
    "number": "What is the exact number (or value) here?",
    "artifact": "Which files, paths, symbols or identifiers are involved, exactly as written?",
    "intent": "What did the user ask for?",
    "constraint": "What constraint must the work respect?",
    "next_step": "What is the next step?",
    "decision": "What was decided, and why was it chosen over the alternative?",
    "attempt": "What was tried, what happened, and why?",
}
BLANK = "____"
ANSWER_TOKENS = 300


@dataclass(frozen=True)
class Probe:
    fact: Fact
    type: str
    question: str


@dataclass(frozen=True)
class ProbeSettings:
    """Args: compaction: how each sample is compacted (as in the recall suite);
    answer_tokens: `max_tokens` of an answer."""

    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    answer_tokens: int = ANSWER_TOKENS


def _blank_keys(text: str, fact: Fact) -> str:
    for key in sorted({k for ks in fact.key_sets for k in ks}, key=len, reverse=True):
        text = re.sub(re.escape(key), BLANK, text, flags=re.IGNORECASE)
    return text


def make_probe(fact: Fact) -> Probe:
    """The probe of one fact (see the module docstring for what the question shows)."""
    ask = QUESTIONS[fact.category]
    if fact.category in EXACT_CATEGORIES:
        question = f"{ask}\nIt is about: {_blank_keys(' '.join(fact.text.split()), fact)}"
    else:
        topic = ", ".join(dict.fromkeys(k for ks in fact.key_sets[:1] for k in ks))
        question = f"{ask}" + (f"\nTopic: {topic}" if topic else "")
    return Probe(fact=fact, type=TYPE_OF[fact.category], question=question)


def grade(probe: Probe, answer: str, labels: Labels, trace: Trace, at: int) -> dict[str, Any]:
    """Is `answer` right? The recall suite's verdict on the answer alone, for this fact."""
    only = replace(labels, facts=(probe.fact,), avoid=())
    verdict = score_summary(answer, only, trace, at).facts[0]
    return {"correct": verdict.kept, "matcher": verdict.matcher, "distortion": verdict.distortion, "note": verdict.note}


async def probe_sample(trace: Trace, labels: Labels, at: int, candidate: Candidate, compactor: Model, reader: Model,
                       settings: ProbeSettings) -> dict[str, Any]:
    """Compact one sample, ask every probe with only the compacted context, grade the answers."""
    c = settings.compaction
    compacted = await compact_sample(compactor, trace, at, candidate, budget=c.budget, keep_last=c.keep_last, shape=c.shape, focus=c.focus,
                                     cache=use_generate_cache(compactor))
    summary_score = score_summary(compacted.summary, labels, trace, at)
    context_score = score_facts(compacted.context, labels, at)  # the same verdicts, without precision and distortions
    in_summary = {v.id: v.kept for v in summary_score.facts}
    in_context = {v.id: v.kept for v in context_score.facts}
    probes = []
    for fact in labels.expected(at):
        probe = make_probe(fact)
        output = await generate_cached(reader, [ChatMessageUser(content=probe_request(compacted.context, probe.question))],
                                       config=GenerateConfig(max_tokens=settings.answer_tokens))
        if output.error:
            raise RuntimeError(f"reader model error on {trace.id}@{at}: {output.error}")
        answer = output.completion.strip()
        probes.append({"fact": fact.id, "category": fact.category, "type": probe.type, "question": probe.question,
                       "answer": answer, **grade(probe, answer, labels, trace, at),
                       "in_summary": in_summary.get(fact.id, False), "in_context": in_context.get(fact.id, False)})
    correct = [p["correct"] for p in probes]
    return {
        "trace": trace.id, "point": at, "prompt": candidate.name, "synthetic": labels.labelled_by == "generator",
        "accuracy": sum(correct) / len(correct) if correct else None,
        "summary_recall": round(summary_score.recall, 4), "context_recall": round(context_score.recall, 4),
        "summary_tokens": compacted.summary_tokens, "context_tokens": compacted.context_tokens,
        "probes": probes,
    }
