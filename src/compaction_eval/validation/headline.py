"""The headline agreement of `validate-matchers`: out of sample first.

The headline κ is the **test part**'s (gold summaries with `split: test`, written after the
matcher was frozen), with a bootstrap interval that resamples traces (a trace's judgments are
not independent). Beside it: the tune part's κ, cross-validated by trace exactly as
`validation.refit` computes it (each trace scored by a calibration fitted without it), and on
both parts the key-presence-only reference (all keys of some key set present = kept) on the
same items, with the difference. Each part is broken down by category, style and source kind.
Every κ is scikit-learn's `cohen_kappa_score` (`matchers.kappa`).

Where gold summaries carry a second reader's judgments, every cell adds reader-vs-reader κ
(`second_kappa`, with an interval on a part) and the rated verdicts' κ on those same facts
(`kappa_on_second`): the ceiling any matcher or judge can be held to.

With a judge model, `judge_rounds` measures the judge on every blind round (each out of sample
for a judge tuned on nothing) beside the current matcher (in sample there: every round has
joined its tune part), the matcher as measured at that round's freeze, keys only and the
second reader, and the judge's answers with the quote checks applied as overrides.

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

# one judged fact: (trace, category, style, source, gold, predicted, keys-only predicted,
# the second reader's verdict or None; a row of 7 has no second reader)
Row = tuple[Any, ...]


def _second_of(r: Row) -> bool | None:
    return r[7] if len(r) > 7 else None


def _k(rows: Sequence[Row], col: int) -> float | None:
    return kappa([r[4] for r in rows], [bool(r[col]) for r in rows])  # col: one of the bool columns


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _second(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if _second_of(r) is not None]


def _ceiling(rows: Sequence[Row]) -> list[float | None]:
    """(second reader's κ against the gold, the rated verdicts' κ) on the facts read twice."""
    sec = _second(rows)
    return [_k(sec, 7), _k(sec, 5)] if sec else [None, None]


def _cell(rows: Sequence[Row]) -> dict[str, Any]:
    k, ref = _k(rows, 5), _k(rows, 6)
    out = {
        "n": len(rows),
        "accuracy": _r(sum(r[4] == r[5] for r in rows) / len(rows)) if rows else None,
        "kappa": _r(k),
        "keys_kappa": _r(ref),
        "difference": _r(k - ref) if k is not None and ref is not None else None,
        "false_keeps": sum(1 for r in rows if r[5] and not r[4]),
        "false_misses": sum(1 for r in rows if r[4] and not r[5]),
    }
    if _second(rows):
        second, on_second = _ceiling(rows)
        out.update(second_n=len(_second(rows)), second_kappa=_r(second), kappa_on_second=_r(on_second))
    return out


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

    read_twice = bool(_second(rows))
    names = ("kappa_ci", "keys_kappa_ci", "difference_ci") + (("second_kappa_ci", "kappa_on_second_ci") if read_twice else ())

    def stats(pool: list[Row]) -> list[float | None]:
        k, ref = _k(pool, 5), _k(pool, 6)
        return [k, ref, (k - ref) if k is not None and ref is not None else None] + (_ceiling(pool) if read_twice else [])

    cis = bootstrap_groups_ci(list(by_trace.values()), stats, resamples=resamples) if rows else [None] * len(names)
    out = _cell(rows)
    out["traces"] = len(by_trace)
    for name, ci in zip(names, cis, strict=True):
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
    return [(i.trace, i.category, i.style, i.source, i.gold, i.predicted[matcher], i.predicted["keys"], i.predicted.get("second"))
            for i in items if i.kind == "fact" and matcher in i.predicted and (not test_part or part_of(i.split) == "test")]


def tune_rows(gold: Sequence[GoldFile], items: Sequence[Item]) -> list[Row]:
    """The tune part's facts with out-of-fold verdicts (`refit.cross_validated`: folds grouped
    by trace) beside the key-presence reference."""
    from compaction_eval.validation.refit import cross_validated, rows

    keys = {(i.trace, i.summary, i.id): i.predicted["keys"] for i in items if i.kind == "fact"}
    second = {(i.trace, i.summary, i.id): i.predicted.get("second") for i in items if i.kind == "fact"}
    source = {g.trace: g.source for g in gold}
    tune_gold = [g for g in gold if any(part_of(s.split) == "tune" for s in g.summaries)]
    if len({g.trace for g in tune_gold}) < 2:
        raise ValueError("fewer than 2 tune traces: nothing to cross-validate by trace")
    return [(r.trace, r.category, r.style, source.get(r.trace, "unknown"), r.gold, kept, keys[(r.trace, r.summary, r.fact)],
             second[(r.trace, r.summary, r.fact)])
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
    ]
    if "second_n" in t:
        lines.append(f"  second reader (the ceiling) on the {t['second_n']} facts read twice: kappa {_f(t['second_kappa'])}"
                     f"{_ci(t.get('second_kappa_ci'))}; {matcher} on the same facts {_f(t['kappa_on_second'])}{_ci(t.get('kappa_on_second_ci'))}")
    lines.append(f"  {'kappa by':<24} {'n':>4} {'acc':>6} {matcher:>8} {'keys':>7} {'diff':>7} {'f.keep':>6} {'f.miss':>6}"
                 + (f" {'second':>7}" if "second_n" in t else ""))
    for group in ("by_category", "by_style", "by_source"):
        for name, c in t[group].items():
            label = f"{group[3:]}:{name}"
            lines.append(f"  {label:<24} {c['n']:>4} {_f(c['accuracy']):>6} {_f(c['kappa']):>8} {_f(c['keys_kappa']):>7} "
                         f"{_f(c['difference']):>7} {c['false_keeps']:>6} {c['false_misses']:>6}"
                         + (f" {_f(c.get('second_kappa')):>7}" if "second_n" in t else ""))
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
        lines += _part_lines(f"{h.get('judge_on') or 'test part'} (LLM judge tier: its verdicts, nothing overruled)", h["judge_test"], "judge")
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
    """`matchers.validate` plus the `headline` key (test part first); with `judge_model`, the
    judge is run on every blind round's summaries and on the test part (one request per gold
    summary), measured on each (`judge_rounds`), and its κ on the test part, else on the last
    blind round, is the headline's `judge_test`. The judge was tuned on nothing, so every round
    is out of sample for it; the recorded figure of the matcher frozen for each round is the
    comparison."""
    from compaction_eval.validation.matchers import collect_items, judge_gold, validate
    from compaction_eval.validation.rounds import load_rounds

    got: dict[str, Any] = {}
    result = validate(gold_dir, model=model, out=got)
    gold, items = got["gold"], got["items"]
    rounds = load_rounds(gold_dir)
    result["headline"] = headline(gold, items, resamples, rounds)
    if judge_model is None:
        return result
    # A gold set with no blind round and no test part (a user's own) is judged whole: the
    # judge was tuned on none of it. Before, it judged nothing and the command said nothing.
    parts = blind_parts(gold, rounds) or [(ALL_GOLD, lambda split, trace: True)]
    judged_gold = [g for g in (_only(g, lambda split, trace: any(keep(split, trace) for _n, keep in parts)) for g in gold) if g.summaries]
    judged = judge_gold(judged_gold, judge_model) if judged_gold else {}
    if judged:
        by_key = {(i.trace, i.summary, i.id, i.kind): i for i in collect_items(judged_gold, judged)}
        for i in items:
            j = by_key.get((i.trace, i.summary, i.id, i.kind))
            if j is not None and "judge" in j.predicted:
                for name in ("judge", "judge_checked"):
                    i.predicted[name] = j.predicted[name]
                    i.evidence[name] = j.evidence.get(name)
    result["judge_model"] = _name(judge_model)
    result["judge_requests"] = len(judged)
    result["judge_unanswered"] = sum(1 for verdicts in judged.values() for v in verdicts.values() if not v.answered)
    result["judge_rounds"] = judge_rounds(items, parts, rounds, resamples)
    judged_on, keep = _judged_part(gold, rounds)
    chosen = [i for i in items if "judge" in i.predicted and keep(i.split)]
    result["headline"]["judge_test"] = part_table(fact_rows(chosen, "judge", test_part=False), resamples) if chosen else None
    result["headline"]["judge_on"] = judged_on
    return result


# rated verdicts of each blind round's table: (key in the table, Item.predicted name)
ROUND_RATERS = (("judge", "judge"), ("judge_checked", "judge_checked"), ("matcher", "default"))


ALL_GOLD = "all gold summaries"


def blind_parts(gold: Sequence[GoldFile], rounds: Sequence[dict[str, Any]]) -> list[tuple[str, Callable[[str, str], bool]]]:
    """The out-of-sample parts for a judge, by name: every recorded blind round whose summaries
    can be found (`rounds.round_members`), then the test part when there is one."""
    from compaction_eval.validation.rounds import round_members

    parts: list[tuple[str, Callable[[str, str], bool]]] = []
    for r in rounds:
        keep = round_members(r)
        if keep is not None:
            parts.append((f"round {r['round']}", keep))
    if any(part_of(s.split) == "test" for g in gold for s in g.summaries):
        parts.append(("test part", lambda split, trace: part_of(split) == "test"))
    return parts


def judge_rounds(items: Sequence[Item], parts: Sequence[tuple[str, Callable[[str, str], bool]]],
                 rounds: Sequence[dict[str, Any]], resamples: int = RESAMPLES) -> list[dict[str, Any]]:
    """Per blind part, then pooled over all of them: the judge tier's verdicts, the judge's
    answers with the quote checks applied (`judge_checked`) and the current matcher, each a
    `part_table` on the same facts (keys only and the second reader inside every cell), with
    the matcher's figure recorded at that round's freeze."""
    recorded = {f"round {r['round']}": r for r in rounds}
    facts = [i for i in items if i.kind == "fact" and "judge" in i.predicted]
    out = []
    chosen = [(name, [i for i in facts if keep(i.split, i.trace)]) for name, keep in parts]
    if len(chosen) > 1:
        chosen.append(("all blind parts", [i for _n, sel in chosen for i in sel]))
    for name, sel in chosen:
        if not sel:
            continue
        row: dict[str, Any] = {"part": name, "summaries": len({(i.trace, i.summary) for i in sel}), "n": len(sel)}
        for key, rater in ROUND_RATERS:
            row[key] = part_table(fact_rows(sel, rater, test_part=False), resamples)
        row["matcher_in_sample"] = name != "test part"  # every round has joined the matcher's tune part
        r = recorded.get(name)
        if r is not None:
            row["matcher_at_freeze"] = {k: r.get(k) for k in ("frozen_at", "n", "kappa", "kappa_ci", "keys_kappa")}
        row["judge_overruled_by_checks"] = sum(1 for i in sel if i.predicted["judge"] and not i.predicted["judge_checked"])
        row["overruled_kept_in_gold"] = sum(1 for i in sel if i.predicted["judge"] and not i.predicted["judge_checked"] and i.gold)
        out.append(row)
    return out


def format_judge_rounds(result: dict[str, Any]) -> str:
    """The judge per blind round: κ [95% CI] of the judge, the judge with its quote checks as
    overrides, the current matcher (in sample), the matcher at the round's freeze, keys only
    and the second reader (on the facts read twice), then each part by category, style and
    source."""
    rows = result.get("judge_rounds") or []
    lines = [f"JUDGE PER BLIND ROUND (judge tier: {result.get('judge_model')}, tuned on nothing: every round is out of sample for it;"
             " the current matcher is in sample on every round, its figure at the freeze is not)"]
    if not rows:
        return "\n".join([*lines, "  nothing judged: no recorded blind round and no test part"])
    lines.append(f"  {'part':<16} {'n':>5}  {'judge':<22} {'judge+checks':<13} {'matcher now':<12} {'at freeze':<10} "
                 f"{'keys':<6} {'second reader':<22} {'overruled (kept in gold)'}")
    for r in rows:
        j, c, m = r["judge"], r["judge_checked"], r["matcher"]
        freeze = (r.get("matcher_at_freeze") or {}).get("kappa")
        second = f"{_f(j.get('second_kappa'))}{_ci(j.get('second_kappa_ci'))} n={j['second_n']}" if "second_n" in j else "-"
        lines.append(f"  {r['part']:<16} {r['n']:>5}  {_f(j['kappa']) + _ci(j['kappa_ci']):<22} {_f(c['kappa']):<13} "
                     f"{_f(m['kappa']):<12} {_f(freeze):<10} {_f(j['keys_kappa']):<6} {second:<22} "
                     f"{r['judge_overruled_by_checks']} ({r['overruled_kept_in_gold']})")
    for r in rows:
        j, c, m = r["judge"], r["judge_checked"], r["matcher"]
        lines += ["", f"  {r['part']}: {r['summaries']} summaries, {r['n']} facts over {j['traces']} traces",
                  f"    {'kappa by':<24} {'n':>4} {'judge':>7} {'+checks':>7} {'matcher':>7} {'keys':>7} {'second':>7} {'judge on 2nd':>12}"]
        for group in ("by_category", "by_style", "by_source"):
            for name, cell in j[group].items():
                lines.append(f"    {group[3:] + ':' + name:<24} {cell['n']:>4} {_f(cell['kappa']):>7} {_f(c[group][name]['kappa']):>7} "
                             f"{_f(m[group][name]['kappa']):>7} {_f(cell['keys_kappa']):>7} {_f(cell.get('second_kappa')):>7} "
                             f"{_f(cell.get('kappa_on_second')):>12}")
    return "\n".join(lines)


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
        return ALL_GOLD + " (no test part, no recorded blind round)", lambda split: True
    return f"round {last['round']} test part (split: {last['split']})", lambda split: split == last["split"]


def _only(g: GoldFile, keep: Callable[[str, str], bool]) -> GoldFile:
    from dataclasses import replace

    return replace(g, summaries=[s for s in g.summaries if keep(s.split, g.trace)])
