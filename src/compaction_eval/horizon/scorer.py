"""Scorer: the world's checker on the submitted answer and the tool calls made."""

from __future__ import annotations

from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from compaction_eval.horizon.ledger import STORE_KEY
from compaction_eval.horizon.worlds import get_world


@scorer(metrics={"completed": [mean(), stderr()], "format_ok": [mean()], "overflow": [mean()]})
def horizon_checker():
    """Completed = right format, every field exact, no constraint violated."""

    async def score(state: TaskState, target: Target) -> Score:
        world = get_world(state.metadata["world"], state.metadata["size"])
        ledger = state.store.get(STORE_KEY) or {}
        answer = ledger.get("answer") or ""
        calls = [(f, a) for f, a in ledger.get("tool_calls", [])]
        verdict = world.check(answer, calls)
        return Score(
            value={"completed": float(verdict["completed"]), "format_ok": float(verdict["format_ok"]),
                   "overflow": float(bool(ledger.get("overflow")))},
            answer=answer,
            explanation="; ".join(
                [f"{n}: {'ok' if ok else 'wrong'}" for n, ok in verdict["fields"].items()]
                + ([f"violations: {', '.join(verdict['violations'])}"] if verdict["violations"] else [])
                + ([] if verdict["format_ok"] else ["answer not in the requested format"])
            ),
            metadata={"verdict": verdict, "stop_reason": ledger.get("stop_reason")},
        )

    return score
