"""The regression gate: a candidate fact-recall run against a committed baseline.

The comparison itself (pairing by trace, point, prompt and fact; paired bootstrap
intervals; the regression rules) is `compare.compare_runs`. The gate adds what CI needs:

- input checks that end in exit code 2 with the reason (a results file that is missing or
  malformed, runs on different corpora, runs with a different model or budget);
- noise handling: with repeats (`--epochs N`) a fact kept in only some epochs of the
  baseline is unstable, and a single fact must not fail the gate on noise. A critical fact
  fails the gate only when its loss is definite: the baseline kept it in every epoch and the
  candidate lost it in every epoch, with a deterministic model or at least two epochs a side
  (one epoch of a noisy model is a warning); a recall or category regression whose lost facts are all unstable in the
  baseline is downgraded to a warning. (The verdict is not recomputed on the stable facts
  only: selecting facts by the baseline's stability biases the difference against the
  candidate, a regression to the mean that the benchmark showed as false alarms.)
- power where there is no noise: a change is *definite* when the fact was kept in every
  baseline epoch and lost in every candidate epoch (or the reverse) and each run is
  deterministic or repeated (`compare.py`). A deterministic model has no noise, so every
  change it shows comes from the edit: a category (or the overall recall) whose net
  definite losses exceed its tolerance fails even when the bootstrap interval touches zero
  (the interval measures how the effect varies over samples, not whether it is real).
- what an offline stand-in can tell: it is deterministic, but it selects sentences, so a
  wording-only edit flips a fact here and another there. A critical fact it loses while
  the prompt's and the category's intervals include zero fails only when the prompt lost at
  least `STAND_IN_CRITICAL_NET` critical facts more than it gained; fewer is a warning
  (rerun with a real model to decide). Real drops, definite losses beyond the tolerance and
  removed fields fail as before.
- pairing: `pairs` compares a candidate prompt with a baseline prompt of another name
  (`--pair mine=handoff`); a candidate prompt with no partner fails unless `allow_new`.
- the prompt contract: a candidate prompt that no longer declares a schema field its
  baseline declared (results record each prompt's `fields`) fails, naming the facts of that
  field's category it lost, or, when the summariser still kept them through other
  instructions, the facts that now rest on those. Removing a field is the edit the gate
  exists to stop; a removal made on purpose is blessed by regenerating the baseline (or
  passed with `allow_field_removal`).
- outputs: a text verdict for the log, markdown for a pull-request comment (also appended
  to `$GITHUB_STEP_SUMMARY` when set) and JUnit XML with a test case per prompt x category.

Exit codes: 0 pass, 1 regression, 2 unusable input.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from compaction_eval.contracts.labels import CATEGORIES
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.runfiles import read_results
from compaction_eval.contracts.settings import COMPARED, is_stand_in, recorded_settings
from compaction_eval.gate.compare import (
    Comparison,
    CorpusMismatch,
    Delta,
    FactChange,
    PromptComparison,
    compare_runs,
    pair_baseline,
)
from compaction_eval.recall.aggregate import run_tier
from compaction_eval.recall.stability import FactKey, unstable_facts

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_UNUSABLE = 2

NEW_CASE = "paired"  # the test case of a candidate prompt without a baseline partner
MAX_LISTED_FACTS = 150  # per list in the markdown: a PR comment is limited to 65,536 characters


class GateInputError(ContractError):
    """The gate cannot decide: an input is missing, malformed or not comparable."""


@dataclass
class GateResult:
    """The gate's decision.

    Args:
        comparison: the paired comparison (deltas, facts lost and gained, candidate regressions).
        reasons: the regressions that stand after the noise rules (empty: pass).
        failing: (prompt, case) -> failure lines, where case is "recall" or a category.
        unstable: facts unstable in the baseline -> (kept, runs).
        warnings: the comparison's warnings plus the gate's own.
        baseline_path, candidate_path: the results files compared.
        baseline_meta, candidate_meta: model, run name, commit, epochs of each run.
    """

    comparison: Comparison
    reasons: list[str]
    failing: dict[tuple[str, str], list[str]]
    unstable: dict[FactKey, tuple[int, int]]
    warnings: list[str]
    baseline_path: str
    candidate_path: str
    baseline_meta: dict[str, Any] = field(default_factory=dict)
    candidate_meta: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return "regression" if self.reasons else "pass"

    @property
    def exit_code(self) -> int:
        return EXIT_REGRESSION if self.reasons else EXIT_PASS

    def is_unstable(self, change: FactChange) -> bool:
        return (change.trace, change.point, change.prompt, change.fact) in self.unstable


# ----------------------------------------------------------------------------- inputs


def load_run(path: Path | str, role: str) -> tuple[dict[str, Any], Path]:
    """Read one side of the gate; a missing or malformed file is a GateInputError naming it.

    Args:
        path: a run directory or a results.json.
        role: "baseline" or "candidate", for the message.
    """
    p = Path(path)
    file = p / "results.json" if p.is_dir() or not p.suffix else p
    if not file.exists():
        hint = (
            "; bless a run with `compaction-eval baseline save RUN_DIR`"
            if role == "baseline"
            else "; run `compaction-eval recall --out DIR --run NAME` first"
        )
        raise GateInputError([Problem(str(file), "", f"{role} results not found{hint}")])
    try:
        data = read_results(file)
    except ContractError as exc:
        raise GateInputError([Problem(q.file, q.place, f"{role}: {q.message}") for q in exc.problems]) from None
    if data.get("suite", "fact_recall") != "fact_recall":
        raise GateInputError([Problem(str(file), "suite", f"{role} is a {data.get('suite')!r} run; the gate compares fact_recall runs")])
    if not data.get("samples"):
        raise GateInputError([Problem(str(file), "samples", f"{role} has no samples")])
    return data, file


def setting_differences(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """The settings in which two runs differ, one line each: those that change what a summary
    can contain (the models and the `CompactionSettings`, `settings.COMPARED`), as each
    results file records them (`settings.recorded_settings`, old files included). A prompt
    edit must be the only difference between a baseline and a candidate."""
    b, c = recorded_settings(baseline), recorded_settings(candidate)
    return [f"{key}: baseline {b[key]!r}, candidate {c[key]!r}" for key in COMPARED if b[key] != c[key]]


def check_comparable(
    baseline: dict[str, Any], candidate: dict[str, Any], candidate_path: str = "candidate", *, allow_setting_changes: bool = False
) -> list[str]:
    """The rule that two runs are compared only when their prompts are the only difference
    (used by the gate and by `report --baseline`). Returns the differences (allowed ones
    included); raises GateInputError when they are not allowed.

    Runs whose verdicts come from different tiers (the offline matcher, an LLM judge) are
    never compared, even with --allow-setting-changes: the difference would be the tier's."""
    tiers = run_tier(baseline), run_tier(candidate)
    if tiers[0] != tiers[1]:
        raise GateInputError([Problem(candidate_path, "tier", f"verdicts of the {tiers[1]} tier cannot be compared with a baseline "
                                      f"of the {tiers[0]} tier: rerun the candidate in the baseline's tier"
                                      f"{' (with --judge-model)' if tiers[0] == 'judge' else ' (without --judge-model)'}"
                                      " or regenerate the baseline in the candidate's")])
    diffs = setting_differences(baseline, candidate)
    if diffs and not allow_setting_changes:
        raise GateInputError(
            [Problem(candidate_path, "config", f"the runs differ in more than their prompts ({'; '.join(diffs)}): "
                     "rerun the candidate with the baseline's settings, regenerate the baseline, or pass --allow-setting-changes")]
            + [Problem(candidate_path, "config", d) for d in diffs[1:]]
        )
    return diffs


def _meta(results: dict[str, Any]) -> dict[str, Any]:
    epochs = max((int(s.get("epoch", 1)) for s in results.get("samples", [])), default=1)
    return {
        "run": results.get("run"),
        "model": results.get("model"),
        "offline_stand_in": bool(results.get("offline_stand_in")),
        "git_commit": results.get("git_commit"),
        "created": results.get("created"),
        "epochs": epochs,
        "baseline": (results.get("baseline") or {}).get("name"),
    }


# ----------------------------------------------------------------------------- decision


def gate_runs(
    baseline: dict[str, Any],
    candidate: dict[str, Any],
    *,
    tolerance: float = 0.02,
    category_tolerance: float = 0.05,
    allow_setting_changes: bool = False,
    allow_field_removal: bool = False,
    baseline_path: str = "baseline",
    candidate_path: str = "candidate",
    pairs: dict[str, str] | None = None,
    allow_new: bool = False,
) -> GateResult:
    """Decide pass or regression for two results@1 documents.

    Args:
        baseline, candidate: the documents (as read by `results.read_results`).
        tolerance, category_tolerance: see `compare.compare_runs`.
        allow_setting_changes: compare even when model, budget, keep_last, shape, focus or
            judge differ (otherwise that is unusable input: the difference would be blamed
            on the prompt).
        allow_field_removal: a prompt that stops declaring a field is a warning, not a regression.
        baseline_path, candidate_path: names for messages.
        pairs: candidate prompt -> baseline prompt (`--pair mine=handoff`): gate a prompt
            against a baseline prompt of another name.
        allow_new: a candidate prompt with no baseline partner is a warning. Without it, it
            fails: a pull request that adds a prompt must not pass ungated.

    Raises GateInputError for runs on different corpora, without a prompt in common, or
    (unless allowed) with different settings.
    """
    diffs = check_comparable(baseline, candidate, candidate_path, allow_setting_changes=allow_setting_changes)
    pairs = pairs or {}
    try:
        baseline = pair_baseline(baseline, candidate, pairs)
    except ContractError as exc:
        raise GateInputError(exc.problems) from None
    try:
        full = compare_runs(baseline, candidate, tolerance=tolerance, category_tolerance=category_tolerance, pairs=pairs)
    except CorpusMismatch as exc:
        from compaction_eval.gate.baselines import GATE_LABELS, GATE_TRACES

        first, *rest = exc.problems
        if first.place == "prompts":  # a naming problem, not a corpus change: its message says how to pair
            raise GateInputError(exc.problems) from None
        hint = "; if the labels or traces changed on purpose, regenerate the baseline (`compaction-eval recall ...` then `compaction-eval baseline save RUN_DIR`)"
        if list(baseline.get("config", {}).get("traces") or []) == list(GATE_TRACES):
            hint = (f"; the baseline is on the gate's corpus: run the candidate with `compaction-eval recall --traces {' '.join(GATE_TRACES)} "
                    f"--labels {' '.join(GATE_LABELS)}`" + hint.replace("; if", ", or if", 1))
        head = Problem(first.file, first.place, first.message + hint)
        raise GateInputError([head, *rest]) from None
    warnings = list(full.warnings)
    if diffs:
        warnings.append("settings differ (allowed): " + "; ".join(diffs))
    unstable = unstable_facts(baseline)
    stand_in = all(_meta(doc)["offline_stand_in"] or is_stand_in(_meta(doc)["model"] or "") for doc in (baseline, candidate))
    reasons, failing = _apply_noise_rules(full, unstable, _meta(candidate)["epochs"], warnings, stand_in=stand_in)
    for prompt, case, line in removed_fields(baseline, candidate, full):
        if allow_field_removal:
            warnings.append(f"{line} (allowed)")
            continue
        reasons.append(line)
        failing.setdefault((prompt, case), []).append(line)
    ranked = [str(r.get("prompt")) for r in baseline.get("prompts", [])] or [pc.partner for pc in full.prompts]
    for prompt in [] if allow_new else full.only_in_candidate:  # allowed: compare_runs already warns
        partner = next((p for p in ranked if p not in pairs), "BASELINE_PROMPT")
        line = (f"{prompt}: a new prompt with no baseline to compare with: pair it with a baseline prompt "
                f"(`--pair {prompt}={partner}`) or pass --allow-new")
        reasons.append(line)
        failing.setdefault((prompt, NEW_CASE), []).append(line)
    return GateResult(full, reasons, failing, unstable, warnings, baseline_path, candidate_path, _meta(baseline), _meta(candidate))


def declared_fields(results: dict[str, Any]) -> dict[str, list[str]]:
    """Each prompt -> the schema fields it declared in a run (prompts without the record are absent)."""
    return {p["prompt"]: list(p["fields"]) for p in results.get("prompts", []) if isinstance(p.get("fields"), list)}


def removed_fields(baseline: dict[str, Any], candidate: dict[str, Any], cmp: Comparison) -> list[tuple[str, str, str]]:
    """(prompt, case, line) for each field a candidate prompt stopped declaring (module docstring)."""
    from compaction_eval.contracts.prompts import category_of_field

    before, after = declared_fields(baseline), declared_fields(candidate)
    out = []
    for pc in cmp.prompts:
        if pc.prompt not in before or pc.prompt not in after:
            continue
        for fld in [f for f in before[pc.prompt] if f not in after[pc.prompt]]:
            cat = category_of_field(fld)
            line = f"{pc.prompt}: no longer asks for `{fld}` (the baseline's prompt declares it)"
            lost = [f for f in pc.lost if f.category == cat] if cat else []
            if lost:
                line += f"; {len(lost)} {cat} fact(s) lost: " + _names(lost)
            elif cat:
                kept = sorted({(s["trace"], int(s["point"]), f["id"]) for s in baseline.get("samples", []) if s["prompt"] == pc.prompt
                               for f in s.get("facts", []) if f.get("category") == cat and f.get("kept")})
                line += (f"; the {len(kept)} {cat} fact(s) the baseline kept now rest on other instructions"
                         f" (still kept in this run): " + ", ".join(f"{fid} ({t}@{p})" for t, p, fid in kept[:6])
                         + (f" and {len(kept) - 6} more" if len(kept) > 6 else "")) if kept else f"; no {cat} fact was kept by the baseline"
            else:
                line += "; it asks for no labelled fact category"
            out.append((pc.prompt, cat or "recall", line))
    return out


def _names(changes: list[FactChange], limit: int = 6) -> str:
    shown = ", ".join(f"{f.fact} ({f.trace}@{f.point})" for f in changes[:limit])
    return shown + (f" and {len(changes) - limit} more" if len(changes) > limit else "")


# An offline stand-in's critical losses fail on their own only from this many (net of the
# critical facts it gained) when no interval of the prompt excludes zero: see `_stand_in_churn`.
STAND_IN_CRITICAL_NET = 2


def _stand_in_churn(pc: PromptComparison, change: FactChange) -> str | None:
    """Why a critical fact lost by an offline stand-in is not a regression by itself, or None.

    The stand-in is deterministic, so every flip is "definite", but it selects sentences:
    a wording-only edit moves which sentence wins and flips a fact here and another there
    (the measured case: overall -0.4 [-1.8, +0.9], one critical fact lost, one gained). That
    says nothing about what an LLM would keep. So when the prompt's recall interval and the
    fact's category interval both include zero, fewer than `STAND_IN_CRITICAL_NET` critical
    losses net of critical gains are a warning. A real drop (an interval below zero), net
    definite losses beyond the tolerance, or a removed field still fail (their own rules).
    """
    cat = pc.by_category.get(change.category)
    if pc.recall.ci[1] < 0 or (cat is not None and cat.ci[1] < 0):
        return None
    net = len(pc.critical_lost) - sum(1 for f in pc.gained if f.critical)
    if net >= STAND_IN_CRITICAL_NET:
        return None
    return (f"{pc.prompt}: critical fact {change.fact} lost at {change.trace}@{change.point} by the offline stand-in "
            f"({len(pc.critical_lost)} critical lost, {len(pc.critical_lost) - net} gained) while recall "
            f"{_pts(pc.recall.delta)} {_ci(pc.recall)} includes zero: sentence-selection churn of a deterministic "
            "stand-in, not a regression it can show; rerun with a real --model (and --epochs 3) to decide")


def _apply_noise_rules(
    cmp: Comparison, unstable: dict[FactKey, tuple[int, int]], candidate_epochs: int, warnings: list[str], *,
    stand_in: bool = False,
) -> tuple[list[str], dict[tuple[str, str], list[str]]]:
    """The regressions of `cmp` that survive the noise rules (module docstring), and the
    failing test cases; the others are appended to `warnings`. `stand_in`: both runs are
    offline stand-ins (see `_stand_in_churn`)."""
    reasons: list[str] = []
    failing: dict[tuple[str, str], list[str]] = {}
    tol, ctol = cmp.tolerance, cmp.category_tolerance

    def key(f: FactChange) -> FactKey:
        return (f.trace, f.point, f.prompt, f.fact)

    def line_for(pc: PromptComparison, prefix: str) -> str:
        return next((r for r in pc.regression if r.startswith(prefix)), prefix.rstrip())

    for pc in cmp.prompts:
        checks: list[tuple[str, Delta, float, list[FactChange], str]] = [
            ("recall", pc.recall, tol, pc.lost, f"{pc.prompt}: recall ")
        ]
        checks += [(cat, d, ctol, [f for f in pc.lost if f.category == cat], f"{pc.prompt}: {cat} recall ")
                   for cat, d in pc.by_category.items()]
        for case, d, limit, lost, prefix in checks:
            if not (d.delta < -limit and d.ci[1] < 0):
                continue
            line = line_for(pc, prefix)
            if lost and all(key(f) in unstable for f in lost):
                warnings.append(f"{line}: every fact lost is unstable in the baseline (kept in only some epochs): not a regression")
                continue
            reasons.append(line)
            failing.setdefault((pc.prompt, case), []).append(line)
        definite_checks = [("recall", pc.definite_recall, tol, pc.definite_lost, f"{pc.prompt}: recall")]
        definite_checks += [(cat, eff, ctol, [f for f in pc.definite_lost if f.category == cat], f"{pc.prompt}: {cat} recall")
                            for cat, eff in pc.definite_by_category.items()]
        for case, eff, limit, lost, prefix in definite_checks:
            if eff is None or not eff.delta < -limit - 1e-12 or (pc.prompt, case) in failing:
                continue
            shown = _names(lost)
            line = (f"{prefix} {_pts(eff.delta)} points from {eff.lost} definite loss(es) and {eff.gained} definite gain(s) "
                    f"(kept in every baseline epoch, lost in every candidate epoch), beyond the tolerance of "
                    f"{100 * limit:.1f} points: {shown}")
            reasons.append(line)
            failing.setdefault((pc.prompt, case), []).append(line)
        for f in pc.critical_lost:
            line = line_for(pc, f"{pc.prompt}: critical fact {f.fact} ({f.category}) lost at {f.trace}@{f.point}")
            if key(f) in unstable:
                k, n = unstable[key(f)]
                warnings.append(f"{pc.prompt}: critical fact {f.fact} lost at {f.trace}@{f.point}, but the baseline kept it in only {k} of {n} epochs")
                continue
            if candidate_epochs > 1 and f.candidate_kept > 0:
                warnings.append(f"{pc.prompt}: critical fact {f.fact} lost at {f.trace}@{f.point} in most but not all candidate epochs "
                                f"(kept in {f.candidate_kept:.0%})")
                continue
            if not f.definite:
                # one epoch of a model that is not deterministic: a single flip is indistinguishable from noise
                warnings.append(f"{pc.prompt}: critical fact {f.fact} lost at {f.trace}@{f.point} in a single epoch of a "
                                "non-deterministic model: not a definite loss; rerun both sides with --epochs 3 to confirm")
                continue
            churn = _stand_in_churn(pc, f) if stand_in else None
            if churn:
                warnings.append(churn)
                continue
            reasons.append(line)
            failing.setdefault((pc.prompt, f.category), []).append(f"critical fact {f.fact} lost at {f.trace}@{f.point}")
    return reasons, failing


def gate_files(baseline: Path | str, candidate: Path | str, **kwargs: Any) -> GateResult:
    """`gate_runs` on two run directories or results files (GateInputError when unusable)."""
    b, bfile = load_run(baseline, "baseline")
    c, cfile = load_run(candidate, "candidate")
    return gate_runs(b, c, baseline_path=str(bfile), candidate_path=str(cfile), **kwargs)


# ----------------------------------------------------------------------------- per test case


@dataclass
class CaseResult:
    """One prompt x category (or the prompt's overall recall) as a test case."""

    prompt: str
    name: str  # "recall" or a category
    delta: Delta | None
    failures: list[str]
    lost: list[FactChange]


def gate_cases(result: GateResult) -> list[CaseResult]:
    """One case for each prompt's overall recall and one per category present, in order;
    a case fails when a regression of its own stands (`GateResult.failing`)."""
    cases = []
    for pc in result.comparison.prompts:
        cases.append(CaseResult(pc.prompt, "recall", pc.recall, result.failing.get((pc.prompt, "recall"), []), pc.lost))
        for cat in CATEGORIES:
            if cat not in pc.by_category:
                continue
            lost = [f for f in pc.lost if f.category == cat]
            cases.append(CaseResult(pc.prompt, cat, pc.by_category[cat], result.failing.get((pc.prompt, cat), []), lost))
    for prompt in result.comparison.only_in_candidate:
        if (prompt, NEW_CASE) in result.failing:
            cases.append(CaseResult(prompt, NEW_CASE, None, result.failing[(prompt, NEW_CASE)], []))
    return cases


# ----------------------------------------------------------------------------- outputs


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _ci(d: Delta) -> str:
    return f"[{_pts(d.ci[0])}, {_pts(d.ci[1])}]"


def _side(meta: dict[str, Any], path: str, *, markdown: bool = False) -> str:
    code = _md_code if markdown else (lambda x: f"`{x}`")
    text = _md_escape if markdown else str
    name = code(meta.get("run") or path)
    if meta.get("baseline"):
        name = f"{code(meta['baseline'])} (committed baseline; run {code(meta.get('run'))})"
    bits = [name, text(meta.get("model") or "?")]
    if meta.get("offline_stand_in"):
        bits.append("offline stand-in, not an LLM")
    if meta.get("git_commit"):
        bits.append(f"commit {text(meta['git_commit'])}")
    if meta.get("epochs", 1) > 1:
        bits.append(f"{meta['epochs']} epochs")
    return ", ".join(bits)


def format_text(result: GateResult) -> str:
    """The verdict for a terminal or CI log: verdict, reasons, deltas, facts lost and gained."""
    cmp = result.comparison
    lines = [
        f"gate: {result.verdict.upper()} (baseline {_side(result.baseline_meta, result.baseline_path)}; "
        f"candidate {_side(result.candidate_meta, result.candidate_path)}; {cmp.samples} samples; "
        f"tolerance {cmp.tolerance:.3f}, category tolerance {cmp.category_tolerance:.3f})"
    ]
    lines += [f"  paired: candidate {c} with baseline {b}" for c, b in cmp.pairs.items()]
    lines += [f"  REGRESSION {r}" for r in result.reasons]
    lines += [f"  warning: {w}" for w in result.warnings]
    lines.append("")
    lines.append(f"{'prompt':<22} {'case':<11} {'baseline':>9} {'candidate':>9} {'delta':>7}  95% interval     result")
    for case in gate_cases(result):
        d = case.delta
        if d is None:
            continue
        status = "FAIL" if case.failures else "ok"
        lines.append(
            f"{case.prompt:<22} {case.name:<11} {_pct(d.baseline):>9} {_pct(d.candidate):>9} {_pts(d.delta):>7}  "
            f"{_ci(d):<16} {status}"
        )
    for pc in cmp.prompts:
        for title, changes in (("lost", pc.lost), ("gained", pc.gained)):
            if not changes:
                continue
            lines.append("")
            lines.append(f"{pc.prompt}: {len(changes)} fact(s) {title}")
            for f in changes:
                flags = " CRITICAL" if f.critical else ""
                flags += " (unstable in baseline)" if result.is_unstable(f) else ""
                lines.append(
                    f"  {f.trace}@{f.point}  {f.category:<10} {f.fact}{flags}  "
                    f"(kept {f.baseline_kept:.0%} -> {f.candidate_kept:.0%} of epochs)"
                )
    return "\n".join(lines)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~>])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _md_escape(text: Any) -> str:
    """Untrusted text (prompt names, run names, fact text, messages) as inert markdown: one
    line (control characters and newlines become a space, so nothing can start a heading),
    HTML escaped (no raw tags), markdown punctuation escaped (no links, images, emphasis or
    table cells)."""
    one_line = _CONTROL.sub(" ", str(text))
    return _MD_SPECIAL.sub(r"\\\1", html.escape(one_line, quote=False))


def _md_code(text: Any) -> str:
    """Untrusted text shown as code: an HTML <code> element, escaped (a backtick cannot end it)."""
    return f"<code>{html.escape(_CONTROL.sub(' ', str(text)))}</code>"


_CRITICAL = re.compile(r"critical fact (\S+) \(\w+\) lost at (.+)@\d+$")


def _critical_text(reason: str, fact_text: dict[tuple[str, str], str]) -> str:
    """`: the fact's text` for a critical-fact regression line whose labels were found: a
    reviewer reads what was lost, not only its id."""
    m = _CRITICAL.search(reason)
    text = fact_text.get((m.group(2), m.group(1))) if m else None
    return f": {_md_escape(text)[:160]}" if text else ""


def format_markdown(result: GateResult, *, fact_text: dict[tuple[str, str], str] | None = None) -> str:
    """Markdown for a pull-request comment or the job summary.

    Args:
        result: the gate's decision.
        fact_text: optional (trace, fact id) -> the labelled text, shown with lost facts.
    """
    cmp = result.comparison
    fact_text = fact_text or {}
    icon = "✅" if result.exit_code == EXIT_PASS else "❌"
    out = [
        f"## {icon} compaction-eval gate: {result.verdict}",
        "",
        f"- baseline: {_side(result.baseline_meta, result.baseline_path, markdown=True)}",
        f"- candidate: {_side(result.candidate_meta, result.candidate_path, markdown=True)}",
        f"- {cmp.samples} samples (trace × compaction point), paired by trace, point, prompt and fact; "
        f"95% paired-bootstrap intervals; tolerance {100 * cmp.tolerance:.1f} points overall, "
        f"{100 * cmp.category_tolerance:.1f} per category",
    ]
    if result.baseline_meta.get("offline_stand_in") or result.candidate_meta.get("offline_stand_in"):
        out.append("- the compaction model is the offline extractive summariser, a deterministic baseline, not an LLM")
    if result.unstable:
        out.append(f"- {len(result.unstable)} fact(s) unstable in the baseline (kept in only some epochs) "
                   "cannot fail the gate on their own")
    if result.reasons:
        out += ["", "### Regressions", ""] + [f"- {_md_escape(r)}{_critical_text(r, fact_text)}" for r in result.reasons]
    if result.warnings:
        out += ["", "### Warnings", ""] + [f"- {_md_escape(w)}" for w in result.warnings]

    out += ["", "### Recall by prompt", "", "| prompt | baseline | candidate | Δ points | 95% interval | samples | result |",
            "|---|---:|---:|---:|---|---:|---|"]
    cases = gate_cases(result)
    for case in cases:
        if case.name != "recall" or case.delta is None:
            continue
        d = case.delta
        out.append(f"| {_md_escape(case.prompt)} | {_pct(d.baseline)} | {_pct(d.candidate)} | {_pts(d.delta)} | {_ci(d)} | {d.n} | "
                   f"{'❌ regression' if case.failures else '✅'} |")

    prompts = [pc.prompt for pc in cmp.prompts]
    cats = [c for c in CATEGORIES if any(cr.name == c for cr in cases)]
    if cats:
        out += ["", "### Δ recall by category (points, 95% interval)", "",
                "| prompt | " + " | ".join(map(_md_escape, cats)) + " |", "|---|" + "---|" * len(cats)]
        for prompt in prompts:
            row = []
            for cat in cats:
                found = next((c for c in cases if c.prompt == prompt and c.name == cat), None)
                if found is None or found.delta is None:
                    row.append("–")
                    continue
                mark = " ❌" if found.failures else ""
                row.append(f"{_pts(found.delta.delta)} {_ci(found.delta)}{mark}")
            out.append(f"| {_md_escape(prompt)} | " + " | ".join(row) + " |")

    for title, attr in (("Facts lost", "lost"), ("Facts gained", "gained")):
        changes = [f for pc in cmp.prompts for f in getattr(pc, attr)]
        if not changes:
            continue
        out += ["", f"### {title} ({len(changes)})", ""]
        summary = ", ".join(f"{_md_escape(pc.prompt)}: {len(getattr(pc, attr))}" for pc in cmp.prompts if getattr(pc, attr))
        out += [f"<details{' open' if attr == 'lost' and len(changes) <= 40 else ''}><summary>{summary}</summary>", "",
                "| prompt | sample | category | fact | kept (baseline → candidate) |", "|---|---|---|---|---|"]
        for f in changes[:MAX_LISTED_FACTS]:
            name = _md_code(f.fact)
            text = fact_text.get((f.trace, f.fact))
            if text:
                name += f": {_md_escape(text)[:160]}"
            if f.critical:
                name = "**critical** " + name
            if result.is_unstable(f):
                name += " _(unstable in baseline)_"
            out.append(f"| {_md_escape(f.prompt)} | {_md_escape(f.trace)}@{f.point} | {_md_escape(f.category)} | {name} | "
                       f"{f.baseline_kept:.0%} → {f.candidate_kept:.0%} |")
        if len(changes) > MAX_LISTED_FACTS:
            out.append(f"| … | | | {len(changes) - MAX_LISTED_FACTS} more (see the JUnit file or the report) | |")
        out += ["", "</details>"]
    if cmp.pairs:
        out += ["", "Paired prompts (candidate ← baseline): " + ", ".join(f"{_md_escape(c)} ← {_md_escape(b)}" for c, b in cmp.pairs.items()) + "."]
    allowed = [p for p in cmp.only_in_candidate if (p, NEW_CASE) not in result.failing]
    if allowed:
        out += ["", f"New prompts without a baseline (not gated, --allow-new): {', '.join(map(_md_escape, allowed))}."]
    return "\n".join(out) + "\n"


def format_junit(result: GateResult) -> str:
    """JUnit XML: a test suite per prompt, a test case for its recall and one per category.

    A failing case carries the rule that failed and the facts of that case that were lost.
    """
    root = ET.Element("testsuites", name="compaction-eval gate")
    by_prompt: dict[str, list[CaseResult]] = {}
    for case in gate_cases(result):
        by_prompt.setdefault(case.prompt, []).append(case)
    total = fails = 0
    for prompt, cases in by_prompt.items():
        nfail = sum(1 for c in cases if c.failures)
        suite = ET.SubElement(root, "testsuite", name=prompt, tests=str(len(cases)), failures=str(nfail), errors="0", skipped="0")
        total += len(cases)
        fails += nfail
        for case in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"compaction_eval.gate.{prompt}", name=case.name, time="0")
            d = case.delta
            detail = []
            if d is not None:
                detail.append(f"baseline {_pct(d.baseline)}, candidate {_pct(d.candidate)}, delta {_pts(d.delta)} points "
                              f"{_ci(d)} over {d.n} samples")
            lost = [f"lost {f.fact} ({f.category}) at {f.trace}@{f.point}" + (" CRITICAL" if f.critical else "") for f in case.lost]
            if case.failures:
                failure = ET.SubElement(tc, "failure", message="; ".join(case.failures), type="regression")
                failure.text = "\n".join(detail + lost)
            else:
                ET.SubElement(tc, "system-out").text = "\n".join(detail + lost)
    root.set("tests", str(total))
    root.set("failures", str(fails))
    return _xml(root)


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    r"""Text that XML 1.0 can hold: characters it forbids (control characters from a prompt
    name, say) are shown as `\xNN` instead of making the file unreadable."""
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _xml(root: ET.Element) -> str:
    for el in root.iter():
        el.attrib = {k: _xml_safe(v) for k, v in el.attrib.items()}
        if el.text:
            el.text = _xml_safe(el.text)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def unusable_markdown(error: ContractError) -> str:
    """Markdown for a gate that could not decide (exit 2): what is missing or different."""
    lines = ["## ⚠️ compaction-eval gate: unusable input", ""]
    lines += [f"- {_md_escape(str(p))}" for p in error.problems]
    return "\n".join(lines) + "\n"


def fact_texts(results: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(trace, fact id) -> labelled text, from the labels the run was made on, when found."""
    from compaction_eval.corpus.load import run_labels

    return {(lab.trace, f.id): f.text for lab in run_labels(results).values() for f in lab.facts}


def write_outputs(
    text_markdown: str, *, markdown: Path | None = None, junit_xml: str | None = None, junit: Path | None = None,
    step_summary: bool = True,
) -> list[Path]:
    """Write the markdown and JUnit files asked for; append the markdown to
    `$GITHUB_STEP_SUMMARY` when it is set. Returns the files written."""
    written = []
    if markdown is not None:
        _write(markdown, text_markdown)
        written.append(markdown)
    if junit is not None and junit_xml is not None:
        _write(junit, junit_xml)
        written.append(junit)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary and summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(text_markdown + "\n")
        written.append(Path(summary))
    return written


def _write(path: Path, text: str) -> None:
    from compaction_eval.contracts.runfiles import write_text_atomic

    write_text_atomic(path, text)


def unusable_junit(error: ContractError) -> str:
    """JUnit XML for a gate that could not decide: one test case in error, naming why."""
    root = ET.Element("testsuites", name="compaction-eval gate", tests="1", failures="0", errors="1")
    suite = ET.SubElement(root, "testsuite", name="inputs", tests="1", failures="0", errors="1", skipped="0")
    tc = ET.SubElement(suite, "testcase", classname="compaction_eval.gate", name="inputs", time="0")
    err = ET.SubElement(tc, "error", message=str(error.problems[0]) if error.problems else str(error), type="unusable-input")
    err.text = "\n".join(str(p) for p in error.problems)
    return _xml(root)
