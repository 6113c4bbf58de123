"""Paired comparison of two fact-recall runs (a baseline and a candidate).

Samples are paired by (trace, point, prompt) and facts by their id within a sample, so a
difference is always "the same fact in the same history, compacted by the same prompt".
Intervals come from a paired bootstrap: the per-sample differences are resampled (the
sample, trace x point, is the unit, as in `compaction_eval.stats.bootstrap`), with numpy and the
fixed seed of `stats`, so the same two runs always give the same verdict.

The verdict (used by the report and the regression gate):
- a prompt regresses when its recall drops by more than `tolerance` and the 95% interval of
  the drop excludes zero (a material drop that is not noise);
- a category of a prompt regresses the same way with `category_tolerance`;
- a critical fact kept by the baseline and lost by the candidate is a regression by itself
  (DESIGN.md 4: "losing it fails the gate by itself").
Drops larger than the tolerance whose interval includes zero are reported as warnings.

Runs with several epochs are averaged per (trace, point, prompt) before pairing; a fact
counts as kept in a run when it was kept in at least half of its epochs.

Per-fact consistency: a change is *definite* when the evidence for it is consistent: the
fact was kept in every baseline epoch and lost in every candidate epoch (a definite loss),
or the reverse (a definite gain), and each side is either deterministic (an offline
stand-in gives the same summary for the same input, so every change comes from the edit)
or has at least `MIN_NOISY_EPOCHS` epochs (one epoch of a noisy model cannot tell an edit
from noise). `PromptComparison.definite_by_category` is the net effect of the definite
changes on each category's recall; the gate turns it into a rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.stats.bootstrap import bootstrap_mean_ci

PASS = "pass"
REGRESSION = "regression"

SampleKey = tuple[str, int]  # (trace, point)


class CorpusMismatch(ContractError):
    """The two runs were made on different traces, points or labelled facts."""


@dataclass(frozen=True)
class Delta:
    """candidate - baseline of a mean over paired samples.

    Args:
        baseline, candidate: the two means over the paired samples.
        delta: their difference (the mean of the paired differences).
        ci: paired-bootstrap 95% interval of `delta`.
        n: number of paired samples.
    """

    baseline: float
    candidate: float
    delta: float
    ci: tuple[float, float]
    n: int

    @property
    def significant(self) -> bool:
        """The interval excludes zero."""
        return self.ci[0] > 0 or self.ci[1] < 0


@dataclass(frozen=True)
class FactChange:
    """One fact whose verdict flipped between the runs.

    Args:
        trace, point, prompt: the sample.
        fact, category, critical: the fact (from the candidate's labels).
        baseline_kept, candidate_kept: share of epochs in which it was kept (0 or 1 with one epoch).
        definite: the change is consistent (module docstring): kept in every epoch of one
            side, lost in every epoch of the other, with deterministic or repeated runs.
    """

    trace: str
    point: int
    prompt: str
    fact: str
    category: str
    critical: bool
    baseline_kept: float
    candidate_kept: float
    definite: bool = False


# Epochs each side of a noisy (not deterministic) comparison needs before a change counts as definite.
MIN_NOISY_EPOCHS = 2


def is_deterministic(results: dict[str, Any]) -> bool:
    """Whether a run's model gives the same output for the same input: the run says so
    (`deterministic`), or its model is an offline stand-in (deterministic by construction)."""
    if "deterministic" in results:
        return bool(results["deterministic"])
    from compaction_eval.contracts.settings import is_stand_in

    model = str(results.get("model") or results.get("config", {}).get("model") or "")
    return bool(results.get("offline_stand_in")) or is_stand_in(model)


@dataclass(frozen=True)
class DefiniteEffect:
    """The definite changes of one category of one prompt.

    Args:
        delta: their net effect on the category's recall, averaged over the same paired
            samples as the category's `Delta` (negative: net loss).
        lost, gained: how many definite losses and gains.
    """

    delta: float
    lost: int
    gained: int


@dataclass
class PromptComparison:
    """One prompt present in both runs.

    Args:
        recall: the paired recall delta.
        by_category: paired recall delta per category (samples where the category is expected).
        lost, gained: facts kept by one run and not by the other.
        critical_lost: the critical facts among `lost`.
        regression: why this prompt regresses (empty when it does not).
        definite_by_category: net effect of the definite changes per category (see
            `DefiniteEffect`); `definite_recall` the same on overall recall.
    """

    prompt: str
    recall: Delta
    by_category: dict[str, Delta]
    lost: list[FactChange]
    gained: list[FactChange]
    critical_lost: list[FactChange]
    regression: list[str] = field(default_factory=list)
    definite_by_category: dict[str, DefiniteEffect] = field(default_factory=dict)
    definite_recall: DefiniteEffect | None = None
    baseline_prompt: str | None = None  # the baseline's prompt, when paired under another name (`pairs`)

    @property
    def partner(self) -> str:
        """The baseline prompt this one was compared with (its own name unless paired)."""
        return self.baseline_prompt or self.prompt

    @property
    def definite_lost(self) -> list[FactChange]:
        return [f for f in self.lost if f.definite]


@dataclass
class Comparison:
    """The paired comparison of a candidate run with a baseline run.

    Args:
        verdict: "pass" or "regression".
        reasons: one line per regression (empty on pass).
        warnings: drops beyond the tolerance that are within noise, prompts only in one run.
        prompts: one comparison per prompt present in both runs, in the candidate's order.
        baseline_run, candidate_run: run names.
        tolerance, category_tolerance: the thresholds used.
        only_in_baseline, only_in_candidate: prompts evaluated by one run only (not compared).
        samples: number of (trace, point) samples paired.
        pairs: candidate prompt -> the baseline prompt it was compared with, for pairs of
            different names (`compare_runs(pairs=...)`).
    """

    verdict: str
    reasons: list[str]
    warnings: list[str]
    prompts: list[PromptComparison]
    baseline_run: str | None
    candidate_run: str | None
    tolerance: float
    category_tolerance: float
    only_in_baseline: list[str]
    only_in_candidate: list[str]
    samples: int
    pairs: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def prompt(self, name: str) -> PromptComparison:
        return next(p for p in self.prompts if p.prompt == name)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------- statistics


def paired_delta(baseline: Sequence[float], candidate: Sequence[float]) -> Delta:
    """Mean difference candidate - baseline of paired values, with a paired-bootstrap 95% CI.

    Args:
        baseline, candidate: values of the same samples, in the same order.
    """
    if len(baseline) != len(candidate):
        raise ValueError(f"paired values differ in length: {len(baseline)} vs {len(candidate)}")
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    if b.size == 0:
        nan = float("nan")
        return Delta(nan, nan, nan, (nan, nan), 0)
    lo, hi = bootstrap_mean_ci(c - b)
    return Delta(float(b.mean()), float(c.mean()), float((c - b).mean()), (lo, hi), int(b.size))


# ----------------------------------------------------------------------------- pairing


@dataclass
class _Cell:
    """The samples of one (trace, point, prompt), over epochs."""

    recall: list[float] = field(default_factory=list)
    by_category: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    kept: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def epochs(self) -> int:
        return len(self.recall)

    def add(self, sample: dict[str, Any]) -> None:
        self.recall.append(float(sample["recall"]))
        for cat, value in sample.get("recall_by_category", {}).items():
            self.by_category[cat].append(float(value))
        for f in sample["facts"]:
            self.kept[f["id"]].append(bool(f["kept"]))
            self.facts.setdefault(f["id"], f)

    def kept_share(self, fact: str) -> float:
        votes = self.kept.get(fact, [])
        return sum(votes) / len(votes) if votes else 0.0


def _cells(results: dict[str, Any]) -> dict[tuple[str, int, str], _Cell]:
    cells: dict[tuple[str, int, str], _Cell] = defaultdict(_Cell)
    for s in results.get("samples", []):
        cells[(s["trace"], int(s["point"]), s["prompt"])].add(s)
    return cells


def _expected_facts(results: dict[str, Any]) -> dict[SampleKey, set[str]]:
    """Fact ids expected at each (trace, point), over all prompts of a run."""
    out: dict[SampleKey, set[str]] = defaultdict(set)
    for s in results.get("samples", []):
        out[(s["trace"], int(s["point"]))].update(f["id"] for f in s["facts"])
    return out


def _run_name(results: dict[str, Any], default: str) -> str:
    return str(results.get("run") or default)


def parse_pairs(specs: Sequence[str] | None) -> dict[str, str]:
    """`--pair CANDIDATE=BASELINE` options as a mapping (a candidate prompt named twice is refused).

    >>> parse_pairs(["mine=handoff"])
    {'mine': 'handoff'}
    """
    out: dict[str, str] = {}
    for spec in specs or []:
        cand, sep, base = str(spec).partition("=")
        cand, base = cand.strip(), base.strip()
        if not sep or not cand or not base:
            raise ContractError([Problem("--pair", "", f"expected CANDIDATE=BASELINE (e.g. mine=handoff), got {spec!r}")])
        if cand in out and out[cand] != base:
            raise ContractError([Problem("--pair", "", f"{cand!r} is paired twice ({out[cand]!r} and {base!r})")])
        out[cand] = base
    return out


def _prompt_names(results: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(str(s["prompt"]) for s in results.get("samples", [])))


def pair_baseline(baseline: dict[str, Any], candidate: dict[str, Any], pairs: dict[str, str]) -> dict[str, Any]:
    """The baseline document with each paired baseline prompt's samples (and `prompts[]`
    row) also filed under its candidate's name, so that every rule compares "mine" with
    "handoff" exactly as it compares a prompt with itself. The baseline prompt keeps its own
    samples too (a run may gate both `mine` and `handoff` against the baseline's handoff).
    A pair naming a prompt a run does not have is a ContractError naming the flag."""
    if not pairs:
        return baseline
    have_b, have_c = _prompt_names(baseline), _prompt_names(candidate)
    problems = []
    for cand, base in pairs.items():
        if cand not in have_c:
            problems.append(Problem("--pair", f"{cand}={base}", f"the candidate has no prompt {cand!r} (it has {', '.join(have_c) or 'none'})"))
        if base not in have_b:
            problems.append(Problem("--pair", f"{cand}={base}", f"the baseline has no prompt {base!r} (it has {', '.join(have_b) or 'none'})"))
    if problems:
        raise ContractError(problems)
    samples = [s for s in baseline.get("samples", []) if s["prompt"] not in pairs]
    rows = [r for r in baseline.get("prompts", []) if r.get("prompt") not in pairs]
    for cand, base in pairs.items():
        samples += [{**s, "prompt": cand} for s in baseline.get("samples", []) if s["prompt"] == base]
        rows += [{**r, "prompt": cand} for r in baseline.get("prompts", []) if r.get("prompt") == base]
    return {**baseline, "samples": samples, "prompts": rows}


def check_same_corpus(baseline: dict[str, Any], candidate: dict[str, Any]) -> None:
    """Raise CorpusMismatch unless both runs have the same samples with the same expected facts."""
    b, c = _expected_facts(baseline), _expected_facts(candidate)
    if b == c:
        return
    bname, cname = _run_name(baseline, "baseline"), _run_name(candidate, "candidate")
    problems: list[Problem] = []
    head = (
        f"runs are on different corpora: cannot pair baseline {bname!r} ({len(b)} samples, "
        f"{len({t for t, _ in b})} traces) with candidate {cname!r} ({len(c)} samples, "
        f"{len({t for t, _ in c})} traces); compare runs made on the same traces and labels"
    )
    problems.append(Problem("compare", "", head))

    def names(keys: set[SampleKey]) -> str:
        shown = sorted(f"{t}@{p}" for t, p in keys)
        return ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")

    if b.keys() - c.keys():
        problems.append(Problem("compare", "samples", f"only in baseline: {names(set(b) - set(c))}"))
    if c.keys() - b.keys():
        problems.append(Problem("compare", "samples", f"only in candidate: {names(set(c) - set(b))}"))
    for key in sorted(b.keys() & c.keys()):
        if b[key] != c[key]:
            gone, new = sorted(b[key] - c[key]), sorted(c[key] - b[key])
            detail = "; ".join(
                part for part in (
                    f"facts only in baseline: {', '.join(gone)}" if gone else "",
                    f"facts only in candidate: {', '.join(new)}" if new else "",
                ) if part
            )
            problems.append(Problem("compare", f"{key[0]}@{key[1]}", detail))
    raise CorpusMismatch(problems)


# ----------------------------------------------------------------------------- comparison


def _fact_changes(
    keys: list[SampleKey], prompt: str, base: dict[tuple[str, int, str], _Cell], cand: dict[tuple[str, int, str], _Cell],
    deterministic: tuple[bool, bool] = (False, False),
) -> tuple[list[FactChange], list[FactChange]]:
    lost: list[FactChange] = []
    gained: list[FactChange] = []
    for trace, point in keys:
        bc, cc = base[(trace, point, prompt)], cand[(trace, point, prompt)]
        consistent = (deterministic[0] or bc.epochs >= MIN_NOISY_EPOCHS) and (deterministic[1] or cc.epochs >= MIN_NOISY_EPOCHS)
        for fid, fact in cc.facts.items():
            b_share, c_share = bc.kept_share(fid), cc.kept_share(fid)
            b_kept, c_kept = b_share >= 0.5, c_share >= 0.5
            if b_kept == c_kept:
                continue
            definite = consistent and {b_share, c_share} == {0.0, 1.0}
            change = FactChange(
                trace, point, prompt, fid, fact.get("category", ""), bool(fact.get("critical")), b_share, c_share, definite
            )
            (lost if b_kept else gained).append(change)
    return lost, gained


def _definite_effects(
    keys: list[SampleKey], prompt: str, cand: dict[tuple[str, int, str], _Cell], changes: list[FactChange],
    base: dict[tuple[str, int, str], _Cell],
) -> tuple[DefiniteEffect, dict[str, DefiniteEffect]]:
    """Net effect of the definite changes on overall recall and on each category's recall,
    averaged over the samples each `Delta` of `compare_runs` is averaged over."""
    by_sample: dict[SampleKey, list[FactChange]] = defaultdict(list)
    for f in changes:
        if f.definite:
            by_sample[(f.trace, f.point)].append(f)
    overall: list[float] = []
    per_cat: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key in keys:
        cell = cand[(key[0], key[1], prompt)]
        bcell = base[(key[0], key[1], prompt)]
        weight = {fid: float(fact.get("weight", 1.0)) for fid, fact in cell.facts.items()}
        total = sum(weight.values())
        cat_total: dict[str, float] = defaultdict(float)
        for fid, fact in cell.facts.items():
            cat_total[fact.get("category", "")] += weight[fid]
        net: dict[str, float] = defaultdict(float)
        for f in by_sample.get(key, []):
            sign = 1.0 if f.candidate_kept > f.baseline_kept else -1.0
            net[f.category] += sign * weight.get(f.fact, 1.0)
            counts[f.category][0 if sign < 0 else 1] += 1
        overall.append(sum(net.values()) / total if total else 0.0)
        for cat in CATEGORIES:
            if bcell.by_category.get(cat) and cell.by_category.get(cat) and cat_total.get(cat):
                per_cat[cat].append(net.get(cat, 0.0) / cat_total[cat])
    lost_all = sum(c[0] for c in counts.values())
    gained_all = sum(c[1] for c in counts.values())
    overall_effect = DefiniteEffect(float(np.mean(overall)) if overall else 0.0, lost_all, gained_all)
    return overall_effect, {
        cat: DefiniteEffect(float(np.mean(vals)), counts[cat][0], counts[cat][1]) for cat, vals in per_cat.items()
    }


def _fmt(x: float) -> str:
    return f"{x:+.3f}"


def compare_runs(
    baseline: dict[str, Any], candidate: dict[str, Any], *, tolerance: float = 0.02, category_tolerance: float = 0.05,
    pairs: dict[str, str] | None = None,
) -> Comparison:
    """Compare two results@1 documents (as read by `results.read_results`).

    Args:
        baseline: the reference run (e.g. the committed baseline).
        candidate: the run under test.
        tolerance: a recall drop larger than this (absolute, e.g. 0.02 = 2 points) whose
            interval excludes zero is a regression.
        category_tolerance: the same per fact category.
        pairs: candidate prompt -> baseline prompt, to compare prompts of different names
            (`--pair mine=handoff`); unpaired prompts are compared with their namesake.

    Raises CorpusMismatch (a ContractError) when the runs were made on different corpora, or
    when they have no prompt in common.
    """
    paired = {c: b for c, b in (pairs or {}).items() if c != b}
    baseline = pair_baseline(baseline, candidate, paired)
    check_same_corpus(baseline, candidate)
    base, cand = _cells(baseline), _cells(candidate)
    base_prompts = list(dict.fromkeys(k[2] for k in base))
    cand_prompts = list(dict.fromkeys(k[2] for k in cand))
    # candidate order: its leaderboard order when present
    ordered = [p["prompt"] for p in candidate.get("prompts", []) if p["prompt"] in cand_prompts]
    cand_prompts = ordered + [p for p in cand_prompts if p not in ordered]
    common = [p for p in cand_prompts if p in base_prompts]
    bname, cname = _run_name(baseline, "baseline"), _run_name(candidate, "candidate")
    if not common:
        example = f"--pair {cand_prompts[0]}={base_prompts[0]}" if cand_prompts and base_prompts else "--pair CANDIDATE=BASELINE"
        raise CorpusMismatch(
            [Problem("compare", "prompts", f"no prompt in common: baseline {bname!r} has {', '.join(base_prompts) or 'none'}; "
                     f"candidate {cname!r} has {', '.join(cand_prompts) or 'none'}; to compare a prompt with a baseline "
                     f"prompt of another name, pair them: `{example}`")]
        )
    keys = sorted(_expected_facts(candidate))
    determinism = (is_deterministic(baseline), is_deterministic(candidate))
    reasons: list[str] = []
    warnings: list[str] = []
    prompts: list[PromptComparison] = []
    for prompt in common:
        pkeys = [k for k in keys if (k[0], k[1], prompt) in base and (k[0], k[1], prompt) in cand]
        b_cells = [base[(t, p, prompt)] for t, p in pkeys]
        c_cells = [cand[(t, p, prompt)] for t, p in pkeys]
        recall = paired_delta([float(np.mean(x.recall)) for x in b_cells], [float(np.mean(x.recall)) for x in c_cells])
        by_category: dict[str, Delta] = {}
        for cat in CATEGORIES:
            values = [
                (float(np.mean(bc.by_category[cat])), float(np.mean(cc.by_category[cat])))
                for bc, cc in zip(b_cells, c_cells, strict=True)
                if bc.by_category.get(cat) and cc.by_category.get(cat)
            ]
            if values:
                by_category[cat] = paired_delta([b for b, _ in values], [c for _, c in values])
        lost, gained = _fact_changes(pkeys, prompt, base, cand, determinism)
        critical = [f for f in lost if f.critical]
        pc = PromptComparison(prompt, recall, by_category, lost, gained, critical, baseline_prompt=paired.get(prompt))
        pc.definite_recall, pc.definite_by_category = _definite_effects(pkeys, prompt, cand, lost + gained, base)

        if recall.delta < -tolerance:
            line = f"{prompt}: recall {_fmt(recall.delta)} [{_fmt(recall.ci[0])}, {_fmt(recall.ci[1])}] over {recall.n} samples"
            if recall.ci[1] < 0:
                pc.regression.append(f"{line} (tolerance {tolerance:.3f})")
            else:
                warnings.append(f"{line}: beyond the tolerance but within noise")
        for cat, d in by_category.items():
            if d.delta < -category_tolerance:
                line = f"{prompt}: {cat} recall {_fmt(d.delta)} [{_fmt(d.ci[0])}, {_fmt(d.ci[1])}] over {d.n} samples"
                if d.ci[1] < 0:
                    pc.regression.append(f"{line} (category tolerance {category_tolerance:.3f})")
                else:
                    warnings.append(f"{line}: beyond the tolerance but within noise")
        for f in critical:
            pc.regression.append(f"{prompt}: critical fact {f.fact} ({f.category}) lost at {f.trace}@{f.point}")
        reasons += pc.regression
        prompts.append(pc)

    only_b = [p for p in base_prompts if p not in cand_prompts and p not in paired.values()]
    only_c = [p for p in cand_prompts if p not in base_prompts]
    if only_b:
        warnings.append(f"prompts only in the baseline (not compared): {', '.join(only_b)}")
    if only_c:
        warnings.append(f"prompts only in the candidate (not compared): {', '.join(only_c)}")
    return Comparison(
        verdict=REGRESSION if reasons else PASS,
        reasons=reasons,
        warnings=warnings,
        prompts=prompts,
        baseline_run=bname,
        candidate_run=cname,
        tolerance=tolerance,
        category_tolerance=category_tolerance,
        only_in_baseline=only_b,
        only_in_candidate=only_c,
        samples=len(keys),
        pairs=dict(paired),
    )


def compare_dirs(baseline_dir: Path | str, candidate_dir: Path | str, **kwargs: Any) -> Comparison:
    """`compare_runs` on two run directories (or results.json files)."""
    from compaction_eval.contracts.runfiles import read_results

    return compare_runs(read_results(baseline_dir), read_results(candidate_dir), **kwargs)
