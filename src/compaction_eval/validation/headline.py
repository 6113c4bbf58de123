"""The headline agreement of `validate-matchers`: out of sample first.

The headline κ is the **test part**'s (gold summaries with `split: test`, written after the
matcher was frozen), with a bootstrap interval that resamples traces (a trace's judgments are
not independent). Beside it: the tune part's κ, cross-validated by trace exactly as
`validation.refit` computes it (each trace scored by a calibration fitted without it), and on
both parts the key-presence-only reference (all keys of some key set present = kept) on the
same items, with the difference. Each part is broken down by category, style and source kind.
Every κ is scikit-learn's `cohen_kappa_score` (`matchers.kappa`).

Until a test part exists the headline says so ("no test part yet") rather than showing the
tune part's figures in its place, and shows the last blind round as it was measured at its
freeze (`validation.rounds`: `last_blind_round`, and every round in `blind_rounds`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES, EXACT_CATEGORIES
from compaction_eval.stats.bootstrap import bootstrap_groups_ci
from compaction_eval.validation.matchers import (
    STYLES,
    GoldFile,
    Item,
    kappa,
    part_of,
)

NO_TEST_PART = "no test part yet"
RESAMPLES = 1000

# one judged fact: (trace, category, style, source, gold, predicted, keys-only predicted)
Row = tuple[str, str, str, str, bool, bool, bool]


def _k(rows: Sequence[Row], col: int) -> float | None:
    return kappa([r[4] for r in rows], [bool(r[col]) for r in rows])  # col: one of the bool columns


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _cell(rows: Sequence[Row]) -> dict[str, Any]:
    k, ref = _k(rows, 5), _k(rows, 6)
    return {
        "n": len(rows),
        "accuracy": _r(sum(r[4] == r[5] for r in rows) / len(rows)) if rows else None,
        "kappa": _r(k),
        "keys_kappa": _r(ref),
        "difference": _r(k - ref) if k is not None and ref is not None else None,
        "false_keeps": sum(1 for r in rows if r[5] and not r[4]),
        "false_misses": sum(1 for r in rows if r[4] and not r[5]),
    }


def _by(rows: Sequence[Row], col: int, order: Sequence[str] = ()) -> dict[str, Any]:
    names = [x for x in order if any(r[col] == x for r in rows)]
    names += sorted({str(r[col]) for r in rows} - set(names))  # col: one of the str columns
    return {x: _cell([r for r in rows if r[col] == x]) for x in names}


def part_table(rows: Sequence[Row], resamples: int = RESAMPLES) -> dict[str, Any]:
    """κ of the matcher and of the key-presence reference on `rows`, the difference, a
    bootstrap interval of each (traces resampled), and the breakdowns."""
    by_trace: dict[str, list[Row]] = {}
    for r in rows:
        by_trace.setdefault(r[0], []).append(r)

    def stats(pool: list[Row]) -> list[float | None]:
        k, ref = _k(pool, 5), _k(pool, 6)
        return [k, ref, (k - ref) if k is not None and ref is not None else None]

    cis = bootstrap_groups_ci(list(by_trace.values()), stats, resamples=resamples) if rows else [None, None, None]
    out = _cell(rows)
    out["traces"] = len(by_trace)
    for name, ci in zip(("kappa_ci", "keys_kappa_ci", "difference_ci"), cis, strict=True):
        out[name] = [round(ci[0], 4), round(ci[1], 4)] if ci else None
    exact = [r for r in rows if r[1] in EXACT_CATEGORIES]
    meaning = [r for r in rows if r[1] not in EXACT_CATEGORIES]
    out["exact"], out["meaning"] = _cell(exact), _cell(meaning)
    out["by_category"] = _by(rows, 1, CATEGORIES)
    out["by_style"] = _by(rows, 2, STYLES)
    out["by_source"] = _by(rows, 3)
    return out


def fact_rows(items: Sequence[Item], matcher: str = "default", *, test_part: bool = True) -> list[Row]:
    """Fact items as rows for `matcher` (the shipped scorer by default): the test part's, or
    with `test_part=False` every item `matcher` judged (the judge runs on a chosen part only)."""
    return [(i.trace, i.category, i.style, i.source, i.gold, i.predicted[matcher], i.predicted["keys"])
            for i in items if i.kind == "fact" and matcher in i.predicted and (not test_part or part_of(i.split) == "test")]


def tune_rows(gold: Sequence[GoldFile], items: Sequence[Item]) -> list[Row]:
    """The tune part's facts with out-of-fold verdicts (`refit.cross_validated`: folds grouped
    by trace) beside the key-presence reference."""
    from compaction_eval.validation.refit import cross_validated, rows

    keys = {(i.trace, i.summary, i.id): i.predicted["keys"] for i in items if i.kind == "fact"}
    source = {g.trace: g.source for g in gold}
    tune_gold = [g for g in gold if any(part_of(s.split) == "tune" for s in g.summaries)]
    if len({g.trace for g in tune_gold}) < 2:
        raise ValueError("fewer than 2 tune traces: nothing to cross-validate by trace")
    return [(r.trace, r.category, r.style, source.get(r.trace, "unknown"), r.gold, kept, keys[(r.trace, r.summary, r.fact)])
            for r, kept, _p in cross_validated(rows(tune_gold))]


def headline(gold: Sequence[GoldFile], items: Sequence[Item], resamples: int = RESAMPLES,
             rounds: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The `headline` key of the validation result (see the module doc). `rounds`: the
    recorded blind rounds (`validation.rounds.load_rounds`)."""
    from compaction_eval.validation.matchers import judgments_by_split
    from compaction_eval.validation.rounds import last_measured, with_gold_check

    test = fact_rows(items)
    out: dict[str, Any] = {
        "matcher": "default",
        "reference": "keys: all keys of some key set present = kept",
        "test": part_table(test, resamples) if test else None,
        "status": "test part" if test else NO_TEST_PART,
    }
    if rounds:
        checked = with_gold_check(rounds, judgments_by_split(gold))
        out["blind_rounds"] = [{k: v for k, v in r.items() if k != "test"} for r in checked]
        last = last_measured(checked)
        if not test and last:
            out["last_blind_round"] = last
    try:
        out["tune_cross_validated"] = part_table(tune_rows(gold, items), resamples)
    except ValueError as exc:  # too few traces, or one class only in a training fold
        out["tune_cross_validated"] = None
        out["tune_note"] = f"tune part not cross-validated: {exc}"
    judged = fact_rows(items, "judge", test_part=False)  # the part `validate_all` chose for the judge
    if judged:
        out["judge_test"] = part_table(judged, resamples)
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(x: list[float] | None) -> str:
    return "" if not x else f" [{x[0]:.3f}, {x[1]:.3f}]"


def _part_lines(title: str, t: dict[str, Any], matcher: str = "matcher") -> list[str]:
    lines = [
        f"{title}: {t['n']} facts over {t['traces']} traces",
        f"  kappa {_f(t['kappa'])}{_ci(t['kappa_ci'])}; key-presence only {_f(t['keys_kappa'])}"
        f"{_ci(t['keys_kappa_ci'])}; difference {_f(t['difference'])}{_ci(t['difference_ci'])}",
        f"  false keeps {t['false_keeps']}, false misses {t['false_misses']}; "
        f"exact categories {_f(t['exact']['kappa'])} (n={t['exact']['n']}), "
        f"meaning categories {_f(t['meaning']['kappa'])} (n={t['meaning']['n']})",
        f"  {'kappa by':<24} {'n':>4} {'acc':>6} {matcher:>8} {'keys':>7} {'diff':>7} {'f.keep':>6} {'f.miss':>6}",
    ]
    for group in ("by_category", "by_style", "by_source"):
        for name, c in t[group].items():
            label = f"{group[3:]}:{name}"
            lines.append(f"  {label:<24} {c['n']:>4} {_f(c['accuracy']):>6} {_f(c['kappa']):>8} {_f(c['keys_kappa']):>7} "
                         f"{_f(c['difference']):>7} {c['false_keeps']:>6} {c['false_misses']:>6}")
    return lines


def format_headline(h: dict[str, Any]) -> str:
    """The headline block printed above the per-matcher tables."""
    lines = ["HEADLINE (out of sample: the test part, written after the matcher was frozen)"]
    if h["test"] is None:
        lines.append(f"  {NO_TEST_PART}: no gold summary has split: test, so the shipped matcher has no out-of-sample figure;"
                     " the tune part below is cross-validated by trace, not a headline")
        last = h.get("last_blind_round")
        if last:
            stale = (f" STALE: the record has n={last['n']}, the gold set now has {last['gold_n']} judgments"
                     f" with split {last['split']}") if last.get("stale") else ""
            lines += ["", f"  last blind round: round {last['round']}, matcher frozen at {last['frozen_at']}, test part now"
                          f" split: {last['split']} (tune); the matcher has changed since.{stale}"]
            lines += _part_lines(f"round {last['round']} test part, as measured at the freeze", last["test"])
    else:
        lines += _part_lines("test part (default scorer)", h["test"])
    if h.get("blind_rounds"):
        lines.append("  every blind round, kappa (keys only): " + "; ".join(
            f"{r['round']}: {r['kappa']:.3f} ({r['keys_kappa']:.3f}), n={r['n']}" for r in h["blind_rounds"]))
    if h.get("judge_test") is not None:
        lines.append("")
        lines += _part_lines(f"{h.get('judge_on') or 'test part'} (LLM judge alone, quote-checked)", h["judge_test"], "judge")
    elif "judge_test" in h:
        lines.append(f"  judge: {NO_TEST_PART}, nothing judged")
    t = h["tune_cross_validated"]
    if t is None:
        lines.append(f"  {h.get('tune_note', 'tune part not cross-validated')}")
    elif t["n"]:
        lines.append("")
        lines += _part_lines("tune part, cross-validated by trace (calibration refitted without each trace)", t)
    return "\n".join(lines)


def validate_all(gold_dir: Any, model: Any = None, judge_model: Any = None,
                 resamples: int = RESAMPLES) -> dict[str, Any]:
    """`matchers.validate` plus the `headline` key (test part first); with `judge_model`,
    the judge is run on the test part's summaries only and its κ reported there. Without a
    test part, the judge runs on the last blind round's summaries instead: the judge was tuned
    on nothing, so they are out of sample for it, and the recorded figure of the matcher frozen
    for that round is the comparison."""
    from compaction_eval.validation.matchers import collect_items, judge_gold, validate
    from compaction_eval.validation.rounds import load_rounds

    got: dict[str, Any] = {}
    result = validate(gold_dir, model=model, out=got)
    gold, items = got["gold"], got["items"]
    rounds = load_rounds(gold_dir)
    judged_on = None
    if judge_model is not None:
        judged_on, keep = _judged_part(gold, rounds)
        test_gold = [g for g in (_only(g, keep) for g in gold) if g.summaries]
        judged = judge_gold(test_gold, judge_model) if test_gold else {}
        if judged:
            by_key = {(i.trace, i.summary, i.id, i.kind): i for i in collect_items(test_gold, judged)}
            for i in items:
                j = by_key.get((i.trace, i.summary, i.id, i.kind))
                if j is not None and "judge" in j.predicted:
                    i.predicted["judge"] = j.predicted["judge"]
                    i.evidence["judge"] = j.evidence.get("judge")
        result["judge_model"] = _name(judge_model)
    result["headline"] = headline(gold, items, resamples, rounds)
    if judge_model is not None:
        result["headline"].setdefault("judge_test", None)
        result["headline"]["judge_on"] = judged_on
    return result


def _name(model: Any) -> str:
    return str(model if isinstance(model, str) else getattr(model, "name", model))


def _judged_part(gold: Sequence[GoldFile], rounds: Sequence[dict[str, Any]]) -> tuple[str, Callable[[str], bool]]:
    """Which summaries an LLM judge is measured on, by split: the test part, else the last
    blind round's test part; with its name."""
    if any(part_of(s.split) == "test" for g in gold for s in g.summaries):
        return "test part", lambda split: part_of(split) == "test"
    from compaction_eval.validation.rounds import last_measured

    last = last_measured(rounds)
    if last is None:
        return "nothing (no test part, no recorded blind round)", lambda split: False
    return f"round {last['round']} test part (split: {last['split']})", lambda split: split == last["split"]


def _only(g: GoldFile, keep: Callable[[str], bool]) -> GoldFile:
    from dataclasses import replace

    return replace(g, summaries=[s for s in g.summaries if keep(s.split)])
