"""Per-fact stability over repeats (`--epochs N`): a fact kept in k of N runs.

A real model does not summarise the same history the same way twice, so one fact of one
sample can flip between runs without anything having changed. The gate must not fail on
such a flip alone: it looks at which facts were unstable in the baseline (kept in some but
not all of its epochs) and decides the verdict on the stable facts (see `gate`).

Keys are (trace, point, prompt, fact id): stability is a property of a fact in a history
compacted by one prompt.
"""

from __future__ import annotations

import copy
import sys
from collections import defaultdict
from typing import Any

FactKey = tuple[str, int, str, str]


class FactTally:
    """(kept, runs) per fact, counted one sample record at a time (a run adds each sample
    as it is read, holding no sample records). Keys share their trace and prompt strings."""

    def __init__(self) -> None:
        self.counts: dict[FactKey, list[int]] = {}

    def add(self, sample: dict[str, Any]) -> None:
        trace, point, prompt = sys.intern(sample["trace"]), int(sample["point"]), sys.intern(sample["prompt"])
        counts = self.counts
        for f in sample["facts"]:
            cell = counts.get(key := (trace, point, prompt, f["id"]))
            if cell is None:
                cell = counts[key] = [0, 0]
            cell[0] += bool(f["kept"])
            cell[1] += 1

    def stability(self) -> dict[FactKey, tuple[int, int]]:
        return {k: (v[0], v[1]) for k, v in self.counts.items()}

    def summary(self, *, max_listed: int = 500) -> dict[str, Any]:
        """See `stability_summary`."""
        stab = self.stability()
        unstable = sorted((k, v) for k, v in stab.items() if 0 < v[0] < v[1])
        runs = sorted({n for _, n in stab.values()})
        return {
            "epochs": max(runs) if runs else 0,
            "facts": len(stab),
            "unstable": len(unstable),
            "stable_share": (1 - len(unstable) / len(stab)) if stab else 1.0,
            "unstable_facts": [
                {"trace": t, "point": p, "prompt": pr, "fact": f, "kept": k, "runs": n}
                for (t, p, pr, f), (k, n) in unstable[:max_listed]
            ],
        }


def _tally(results: dict[str, Any]) -> FactTally:
    tally = FactTally()
    for s in results.get("samples", []):
        tally.add(s)
    return tally


def fact_stability(results: dict[str, Any]) -> dict[FactKey, tuple[int, int]]:
    """(kept, runs) for every fact of every (trace, point, prompt) of a results@1 document.

    Args:
        results: a results@1 document; samples of several epochs of the same
            (trace, point, prompt) are counted together.
    """
    return _tally(results).stability()


def unstable_facts(results: dict[str, Any]) -> dict[FactKey, tuple[int, int]]:
    """The facts kept in some but not all runs (0 < kept < runs)."""
    return {k: v for k, v in fact_stability(results).items() if 0 < v[0] < v[1]}


def stability_summary(results: dict[str, Any], *, max_listed: int = 500) -> dict[str, Any]:
    """What a results file records about noise: epochs, share of stable facts, the unstable ones.

    Args:
        results: a results@1 document.
        max_listed: at most this many unstable facts are listed (the counts cover all).
    """
    return _tally(results).summary(max_listed=max_listed)


def _recall(facts: list[dict[str, Any]]) -> float:
    # the rule of scoring._recall: kept weight over expected weight, 1.0 when nothing is expected
    total = sum(float(f.get("weight", 1.0)) for f in facts)
    return sum(float(f.get("weight", 1.0)) for f in facts if f["kept"]) / total if total else 1.0


def without_facts(results: dict[str, Any], drop: set[FactKey] | dict[FactKey, Any]) -> dict[str, Any]:
    """A copy of `results` whose samples no longer contain the facts in `drop`, with each
    touched sample's recall and recall by category recomputed from the remaining facts."""
    out = copy.copy(results)
    samples = []
    for s in results.get("samples", []):
        key = (s["trace"], int(s["point"]), s["prompt"])
        facts = [f for f in s["facts"] if (*key, f["id"]) not in drop]
        if len(facts) == len(s["facts"]):
            samples.append(s)
            continue
        t = dict(s)
        t["facts"] = facts
        t["recall"] = _recall(facts)
        by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in facts:
            by_cat[f.get("category", "")].append(f)
        t["recall_by_category"] = {c: _recall(v) for c, v in by_cat.items()}
        samples.append(t)
    out["samples"] = samples
    return out
