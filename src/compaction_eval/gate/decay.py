"""Compare decay (survival after K compactions) between two runs, as the gate compares recall.

Chains are paired by (trace, prompt): the same trace's early facts, compacted K times by the
same prompt. The paired difference of per-trace survival at K has a paired-bootstrap
interval (`compare.paired_delta`); a prompt regresses when survival drops by more than
`tolerance` and the interval of the drop excludes zero, and warns when the drop is larger
than `tolerance` but the interval includes zero (the same rule as recall).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import parse_json_text
from compaction_eval.gate.compare import PASS, REGRESSION, Delta, paired_delta

DECAY_SCHEMA = "compaction-eval/decay@1"
WARNING = "warning"


@dataclass(frozen=True)
class DecayVerdict:
    prompt: str
    k: int
    delta: Delta
    verdict: str  # pass | warning | regression


def read_decay(path: Path | str) -> dict[str, Any]:
    """A run's decay.json (a run directory or the file), schema checked."""
    path = Path(path)
    path = path / "decay.json" if path.is_dir() else path
    try:
        data = parse_json_text(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "decay file not found (run `compaction-eval decay`)")]) from None
    except json.JSONDecodeError as exc:
        raise ContractError([Problem(str(path), f"line {exc.lineno}", f"malformed JSON: {exc.msg}")]) from None
    if not isinstance(data, dict) or data.get("schema") != DECAY_SCHEMA:
        raise ContractError([Problem(str(path), "schema", f"not a {DECAY_SCHEMA} file")])
    return data


def _survival_at(chain: dict[str, Any], k: int) -> float | None:
    facts = chain.get("facts") or []
    total = sum(f["weight"] for f in facts)
    if not total or chain.get("k", 0) < k:
        return None
    return sum(f["weight"] for f in facts if f["survived"][k - 1]) / total


def compare_decay(baseline: dict[str, Any], candidate: dict[str, Any], *, k: int | None = None,
                  tolerance: float = 0.05) -> list[DecayVerdict]:
    """Per prompt in both runs: survival after `k` compactions (default: the largest k both
    runs reached for that prompt), paired by trace."""
    def chains(data: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
        return {p["prompt"]: {c["trace"]: c for c in p.get("samples") or []} for p in data.get("prompts") or []}

    base, cand = chains(baseline), chains(candidate)
    out = []
    for prompt in sorted(set(base) & set(cand)):
        traces = sorted(set(base[prompt]) & set(cand[prompt]))
        at = k or min((min(base[prompt][t]["k"], cand[prompt][t]["k"]) for t in traces), default=0)
        survival = [(_survival_at(base[prompt][t], at), _survival_at(cand[prompt][t], at)) for t in traces] if at else []
        pairs = [(b, c) for b, c in survival if b is not None and c is not None]
        if not pairs:
            continue
        delta = paired_delta([b for b, _ in pairs], [c for _, c in pairs])
        verdict = PASS
        if delta.delta < -tolerance:
            verdict = REGRESSION if delta.ci[1] < 0 else WARNING
        out.append(DecayVerdict(prompt, at, delta, verdict))
    return out


def decay_regressed(verdicts: list[DecayVerdict]) -> bool:
    return any(v.verdict == REGRESSION for v in verdicts)


def format_decay_verdicts(verdicts: list[DecayVerdict]) -> str:
    lines = ["decay (survival after k compactions, paired by trace):"]
    for v in verdicts:
        d = v.delta
        lines.append(f"  {v.prompt}: k={v.k} {100 * d.baseline:.1f}% -> {100 * d.candidate:.1f}% "
                     f"({100 * d.delta:+.1f} pts, 95% CI [{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}], n={d.n}): {v.verdict}")
    return "\n".join(lines)
