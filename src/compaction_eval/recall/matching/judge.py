"""LLM judge: a model decides every fact of a sample, quoting its evidence (the judge tier).

One generate call per sample lists every fact; the model answers a JSON list
`[{"id", "kept", "quote", "reason"}]`. The judge's answer is the verdict. Two offline checks
run on it and are recorded beside it, not applied: whether the quote occurs in the summary
(whitespace-folded, case-insensitive) and whether the quote contradicts the fact (negates it,
or reports the opposite outcome). Applied as overrides they lowered κ on held-out data (0.874
to 0.844 on 742 verdicts; 12 of the 13 verdicts they overruled were kept in the gold): a rule
may overrule the judge only where it raises out-of-sample κ, and none is known. The overridden
verdict stays measurable (`JudgeVerdict.checked_kept`, `validate-matchers`).
Runs through inspect (`inspect_ai.model.Model`), so real runs use `anthropic/<model>` and
tests use `mockllm/model`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model

from compaction_eval.compaction.cache import generate_cached
from compaction_eval.contracts.labels import EXACT_CATEGORIES, Fact
from compaction_eval.recall.matching.normalize import normalize
from compaction_eval.recall.matching.semantic import (
    OUTCOME_CATEGORIES,
    _outcome_sign,
    negation_conflict,
    outcome,
)


@dataclass
class JudgeVerdict:
    """The judge's verdict on one fact.

    Args:
        kept: the judge's verdict, as it gave it (nothing overrules it).
        quote: the words of the summary the judge cites.
        reason: the judge's one-line reason (or why there is no verdict).
        quote_found: the quote occurs in the summary (False for a kept verdict without one).
        contradiction: the quote contradicts the fact (`contradicts`).
        answered: the judge gave a readable verdict for this fact; False when it skipped the
            fact or its whole answer was unreadable (then `kept` is False).
    """

    kept: bool
    quote: str
    reason: str
    quote_found: bool = True
    contradiction: bool = False
    answered: bool = True

    @property
    def checked_kept(self) -> bool:
        """The verdict with the quote and contradiction checks applied as overrides (the
        judge@2 scorer's old verdict): kept only on a quote found in the summary that does
        not contradict the fact. Measured beside the judge's own verdict, never used as it."""
        return self.kept and self.quote_found and not self.contradiction


class JudgeOutputError(ValueError):
    """The judge's answer is not the JSON list of verdicts it was asked for."""


# The rubric is frozen: its text is part of every recorded answer's key, and its agreement
# with people is measured only on rounds judged after the freeze (labels/gold/README.md).
# Version 2 (frozen before any judge figure was measured in this project) spells out the
# gold rule per category: v1 missed paraphrased intents and decisions whose reason was
# reworded, and kept bug facts whose error text was paraphrased.
RUBRIC_VERSION = "judge@2"

SYSTEM = """You check which facts of an agent's conversation survived in a compacted summary.
A fact is kept when an agent that reads only the summary could act on it without re-deriving it.
Judge each fact by its category:
- intent, constraint, next_step: the same goal, rule or next action, in any words. It is kept
  when the summary states it, even briefly or inside a longer sentence. It is not kept when it
  is missing, negated ("modify tests" for "must not modify tests"), or so vague that the agent
  could not act on it.
- decision, attempt: the choice or the attempt with its outcome and, when the fact gives one,
  its reason. A paraphrase counts, and so does a reason put in other words. It is not kept when
  the outcome or the reason is missing or changed, or when the outcome is inverted (a failed
  attempt reported as a success, or the reverse).
- artifact, number: the path, symbol, command, ID or number appears as in the fact. A path may
  be shortened if it still names the same file without ambiguity; another file, folder or
  symbol, or a rounded or changed number, does not count.
- bug: the distinctive error appears: its exception or error name and the key words of its
  message as in the fact. Describing the error in other words does not count.
A fact is not kept when the summary says something the fact contradicts, even in the same words.
The words that keep a fact may be spread over several sentences.
Answer with a JSON array only, one object per fact, in the order given:
[{"id": "<fact id>", "kept": true or false, "quote": "<the exact words copied from the summary that carry the fact, or empty>", "reason": "<one short sentence>"}]"""


def build_prompt(summary: str, facts: Sequence[Fact]) -> str:
    """The user message: the summary, then the facts to check."""
    lines = [f"<summary>\n{summary}\n</summary>", "", "<facts>"]
    for fact in facts:
        lines.append(json.dumps({"id": fact.id, "category": fact.category, "fact": fact.text}, ensure_ascii=False))
    lines.append("</facts>")
    return "\n".join(lines)


async def judge_facts(model: Model, summary: str, facts: list[Fact]) -> dict[str, JudgeVerdict]:
    """Ask `model` which of `facts` survived in `summary`: one generate call.

    Args:
        model: an inspect model (`get_model("anthropic/...")`, or `mockllm/model` in tests).
        summary: the compacted text.
        facts: the facts to judge (every expected fact of the sample, in the judge tier).

    Returns a verdict for every fact id: a fact the judge skipped is not kept. Raises
    JudgeOutputError when the answer cannot be read as a list of verdicts.
    """
    if not facts:
        return {}
    # Cached and journaled like a compaction: a rerun or a run resumed after a kill does not
    # pay for a verdict twice.
    output = await generate_cached(
        model,
        [ChatMessageSystem(content=SYSTEM), ChatMessageUser(content=build_prompt(summary, facts))],
        config=GenerateConfig(temperature=0.0),
    )
    return verdicts_from_text(output.completion, summary, facts)


def verdicts_from_text(text: str, summary: str, facts: Sequence[Fact]) -> dict[str, JudgeVerdict]:
    """Parse and check a judge answer (see `judge_facts`)."""
    items = parse_judge_output(text)
    wanted = {f.id for f in facts}
    by_id = {f.id: f for f in facts}
    folded_summary = normalize(summary)
    out: dict[str, JudgeVerdict] = {}
    for item in items:
        fid = str(item.get("id", "")).strip()
        if fid not in wanted or fid in out:
            continue
        kept = _as_bool(item.get("kept"))
        quote = _clean_quote(item.get("quote"))
        reason = str(item.get("reason") or "").strip()
        # recorded, not applied (module doc): a lost verdict needs no evidence
        found = bool(quote) and normalize(quote) in folded_summary if kept else True
        contradiction = kept and bool(quote) and contradicts(by_id[fid], quote)
        out[fid] = JudgeVerdict(kept=kept, quote=quote, reason=reason, quote_found=found, contradiction=contradiction)
    for fid in wanted - out.keys():
        out[fid] = unanswered("the judge gave no verdict for this fact")
    return out


def unanswered(reason: str) -> JudgeVerdict:
    """The verdict on a fact the judge did not answer (skipped, or an unreadable answer):
    not kept, and marked so it is counted rather than taken for a judgment."""
    return JudgeVerdict(kept=False, quote="", reason=reason, quote_found=False, answered=False)


def unreadable(facts: Sequence[Fact], error: Exception) -> dict[str, JudgeVerdict]:
    """Verdicts for every fact of a sample whose judge answer could not be read: none kept,
    each marked (a run goes on; the sample says why)."""
    note = f"unreadable judge answer: {str(error)[:160]}"
    return {f.id: unanswered(note) for f in facts}


def contradicts(fact: Fact, quote: str) -> bool:
    """The judge's own evidence says the opposite of the fact: it negates what the fact
    asserts, or reports the opposite outcome of an attempt or decision (the offline checks
    of `semantic`, applied to the quote). A judge that keeps "the revert worked" for "the
    revert broke 6 tests" is overruled by its quote."""
    if fact.category in EXACT_CATEGORIES:
        return False
    if negation_conflict(fact.text, quote):
        return True
    if fact.category in OUTCOME_CATEGORIES:
        want, got = _outcome_sign(outcome(fact.text)), _outcome_sign(outcome(quote))
        return want != 0 and got == -want
    return False


def parse_judge_output(text: str) -> list[dict[str, Any]]:
    """The list of verdict objects in a judge answer.

    Tolerates a markdown code fence, prose around the array, a `{"verdicts": [...]}` wrapper
    and trailing commas. Raises JudgeOutputError otherwise.
    """
    if not text or not text.strip():
        raise JudgeOutputError("the judge returned an empty answer (expected a JSON array of verdicts)")
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", body, re.S)
    candidates = [fence.group(1)] if fence else []
    start, end = body.find("["), body.rfind("]")
    if start != -1 and end > start:
        candidates.append(body[start : end + 1])
    start, end = body.find("{"), body.rfind("}")
    if start != -1 and end > start:
        candidates.append(body[start : end + 1])
    for cand in candidates:
        for attempt in (cand, re.sub(r",\s*([\]}])", r"\1", cand)):
            try:
                data = json.loads(attempt)
            except json.JSONDecodeError:
                continue
            items = _verdict_list(data)
            if items is not None:
                return items
    snippet = body[:200].replace("\n", " ")
    raise JudgeOutputError(f"the judge's answer is not a JSON array of verdicts: {snippet!r}")


def _verdict_list(data: Any) -> list[dict[str, Any]] | None:
    if isinstance(data, dict):
        for key in ("verdicts", "facts", "results"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            data = [data] if "id" in data else None
    if isinstance(data, list) and all(isinstance(d, dict) and "id" in d for d in data):
        return data
    return None


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"true", "yes", "1", "kept"}


def _clean_quote(value: Any) -> str:
    quote = str(value or "").strip()
    # judges wrap quotes in quotation marks or ellipses; the words inside are what counts
    quote = re.sub(r"^(?:\.\.\.|\u2026|[\"'`\u201c\u2018])+|(?:\.\.\.|\u2026|[\"'`\u201d\u2019])+$", "", quote)
    return quote.strip()


__all__ = ["RUBRIC_VERSION", "JudgeOutputError", "JudgeVerdict", "build_prompt", "contradicts", "judge_facts", "parse_judge_output",
           "unanswered", "unreadable", "verdicts_from_text"]
