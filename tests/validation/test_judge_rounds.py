"""The judge measured per blind round and a second reader in the gold contract.

A small gold set on two real label files: round 1 (found by its `trace_ids`, its files in the
general tune split) and round 2 (`split: round2`), some facts read a second time. The judge
answers over real HTTP from the loopback server's judge script, and through `mockllm` with
custom outputs; the per-round table, the second reader's κ beside every figure, the judge's
raw against its checked verdicts, the text table, and the report's matchers section in
Chromium are checked against figures computed here from the same verdicts."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from compaction_eval.contracts.labels import load_labels
from compaction_eval.contracts.problems import ContractError
from compaction_eval.loopback import LoopbackServer
from compaction_eval.validation.headline import format_judge_rounds, validate_all
from compaction_eval.validation.matchers import kappa, load_gold_file, scripted_model
from conftest import ROOT

DUMMY_KEY = "sk-ant-DUMMY-KEY-0123456789"
TRACES = {"synth-ci-broken-001": "round2", "synth-dep-upgrade-001": "tune"}  # trace -> split of its gold file
STYLES = ("terse", "prose")


def _expected(trace: str) -> tuple[int, list, list]:
    labels = load_labels(ROOT / "labels" / f"{trace}.yaml")
    at = labels.points[0]
    return at, labels.expected(at), [a for a in labels.avoid if any(s < at for s in a.source)]


def _kept(trace: str, style: str) -> set[str]:
    """The first reader's kept facts: the first three (their text is the summary)."""
    _at, facts, _avoid = _expected(trace)
    return {f.id for f in facts[:3]} if style == "terse" else {f.id for f in facts[:2]}


def _second(trace: str, style: str) -> dict[str, bool]:
    """The second reader, on the terse summaries only: agrees except on the first fact."""
    if style != "terse":
        return {}
    _at, facts, _avoid = _expected(trace)
    kept = _kept(trace, style)
    return {f.id: (f.id in kept) != (i == 0) for i, f in enumerate(facts[:5])}


def _gold(tmp_path: Path) -> Path:
    d = tmp_path / "gold"
    d.mkdir()
    for trace, split in TRACES.items():
        at, facts, avoid = _expected(trace)
        body = ""
        for style in STYLES:
            kept = _kept(trace, style)
            text = "\n".join(f"      - {f.text}" for f in facts if f.id in kept)
            judged = ", ".join(f"{f.id}: [{'kept' if f.id in kept else 'lost'}, x]" for f in facts)
            avoided = ", ".join(f"{a.id}: [absent, x]" for a in avoid)
            second = _second(trace, style)
            extra = ""
            if second:
                extra = ("    second:\n      judged_by: reader-b\n      facts: {"
                         + ", ".join(f"{k}: [{'kept' if v else 'lost'}, y]" for k, v in second.items()) + "}\n")
            body += (f"  - id: {style}-{at}\n    point: {at}\n    style: {style}\n    text: |\n{text}\n"
                     f"    facts: {{{judged}}}\n    avoid: {{{avoided}}}\n{extra}")
        (d / f"{trace}.yaml").write_text(
            f"schema: compaction-eval/gold@1\ntrace: {trace}\nlabels: {ROOT / 'labels' / (trace + '.yaml')}\n"
            f"judged_by: reader-a\nsplit: {split}\nsummaries:\n{body}", encoding="utf-8")
    rounds = {"schema": "compaction-eval/blind-rounds@1", "rounds": [
        {"round": 1, "split": None, "frozen_at": "aaa1111", "n": 1, "traces": 1, "trace_ids": ["synth-dep-upgrade-001"],
         "kappa": 0.5, "kappa_ci": [0.4, 0.6], "keys_kappa": 0.45},
        {"round": 2, "split": "round2", "frozen_at": "bbb2222", "n": 1, "traces": 1, "kappa": 0.61, "kappa_ci": [0.5, 0.7],
         "keys_kappa": 0.55}]}
    (d / "blind-rounds.json").write_text(json.dumps(rounds), encoding="utf-8")
    return d


class Judge:
    """Round 2 (synth-ci-broken): the first reader's verdicts with real quotes. Round 1
    (synth-dep-upgrade): every fact kept, without a quote (wrong on the lost ones; the quote
    check, applied as an override, would lose the right keeps too)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[list[str]] = []

    def __call__(self, summary: str, facts: list[dict]) -> str:
        with self.lock:
            self.requests.append([f["id"] for f in facts])
        trace = "synth-ci-broken-001" if any(f["id"] == "fail-count" for f in facts) else "synth-dep-upgrade-001"
        lines = [line[2:] for line in summary.splitlines() if line.startswith("- ")]
        texts = {f["id"]: f["fact"] for f in facts}
        out = []
        for f in facts:
            if trace == "synth-ci-broken-001":
                kept = texts[f["id"]] in lines
                out.append({"id": f["id"], "kept": kept, "quote": texts[f["id"]] if kept else "", "reason": "r"})
            else:
                out.append({"id": f["id"], "kept": True, "quote": "", "reason": "r"})
        return json.dumps(out)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    from inspect_ai.model import get_model

    gold = _gold(tmp_path_factory.mktemp("judge-rounds"))
    judge = Judge()
    with LoopbackServer(judge_script=judge) as server:
        model = get_model("anthropic/claude-test", base_url=server.url, api_key=DUMMY_KEY)
        result = validate_all(gold, judge_model=model, resamples=60)
    return gold, judge, result


def _truth(trace: str) -> tuple[list[bool], list[bool], list[bool], list[bool]]:
    """(gold, judge, judge with checks, second reader on the facts read twice) for one trace."""
    _at, facts, _avoid = _expected(trace)
    gold, judge, checked = [], [], []
    for style in STYLES:
        kept = _kept(trace, style)
        for f in facts:
            gold.append(f.id in kept)
            judge.append(f.id in kept if trace == "synth-ci-broken-001" else True)
            checked.append(f.id in kept if trace == "synth-ci-broken-001" else False)
    return gold, judge, checked, []


def test_second_reader_is_read_and_checked_with_located_errors(tmp_path):
    gold = _gold(tmp_path)
    g = load_gold_file(gold / "synth-ci-broken-001.yaml")
    terse = next(s for s in g.summaries if s.style == "terse")
    assert terse.second_by == "reader-b" and set(terse.second) == set(_second("synth-ci-broken-001", "terse"))
    assert next(s for s in g.summaries if s.style == "prose").second is None
    path = gold / "synth-ci-broken-001.yaml"
    original = path.read_text()
    for old, new, message in [
        ("      judged_by: reader-b", "      judged_by: reader-a", "also the first reader"),
        ("      judged_by: reader-b", "      judged_by: ''", "name the second reader"),
        ("      facts: {", "      facts: {no-such-fact: [kept, z], ", "not expected at this point"),
    ]:
        text = original.replace(old, new, 1)
        assert text != original
        path.write_text(text)
        with pytest.raises(ContractError) as exc:
            load_gold_file(path)
        assert message in str(exc.value) and "summaries[0].second" in str(exc.value)
    path.write_text(original.replace("[kept, y]", "[maybe, y]", 1))
    with pytest.raises(ContractError, match=r"summaries\[0\]\.second\.facts\..*expected \[kept \| lost, reason\]"):
        load_gold_file(path)


def test_one_request_per_gold_summary_listing_the_facts_it_judged(measured):
    gold, judge, result = measured
    assert result["judge_requests"] == len(judge.requests) == len(TRACES) * len(STYLES)
    for trace in TRACES:
        _at, facts, _avoid = _expected(trace)
        assert sum(r == [f.id for f in facts] for r in judge.requests) == len(STYLES)


def test_every_blind_round_is_measured_beside_matcher_keys_and_second_reader(measured):
    _gold_dir, _judge, result = measured
    parts = {r["part"]: r for r in result["judge_rounds"]}
    assert list(parts) == ["round 1", "round 2", "all blind parts"]
    for name, trace in (("round 1", "synth-dep-upgrade-001"), ("round 2", "synth-ci-broken-001")):
        gold, judge, checked, _ = _truth(trace)
        row = parts[name]
        assert row["n"] == len(gold) and row["summaries"] == len(STYLES)
        assert row["judge"]["kappa"] == pytest.approx(kappa(gold, judge), abs=1e-4) if kappa(gold, judge) is not None else row["judge"]["kappa"] is None
        assert row["judge_checked"]["kappa"] == pytest.approx(kappa(gold, checked), abs=1e-4)
        assert row["matcher"]["n"] == len(gold) and "keys_kappa" in row["judge"]  # the matcher and keys only, same facts
        assert row["matcher_in_sample"] is True and row["matcher_at_freeze"]["frozen_at"] in ("aaa1111", "bbb2222")
        # the second reader: kappa against the gold on the facts read twice, and the judge on the same
        second = _second(trace, "terse")
        ids = [f.id for f in _expected(trace)[1]]
        g2 = [ids[i] in _kept(trace, "terse") for i in range(len(second))]
        s2 = [second[ids[i]] for i in range(len(second))]
        j2 = [judge[i] for i in range(len(second))]
        cell = row["judge"]
        assert cell["second_n"] == len(second)
        assert cell["second_kappa"] == pytest.approx(kappa(g2, s2), abs=1e-4)
        assert cell["kappa_on_second"] == (None if kappa(g2, j2) is None else pytest.approx(kappa(g2, j2), abs=1e-4))
        assert "second_kappa_ci" in cell
        for group in ("by_category", "by_style", "by_source"):
            assert set(cell[group]) == set(row["matcher"][group]) == set(row["judge_checked"][group])
    # round 1: every fact kept without a quote; the quote check overrules them all, the right
    # keeps with the wrong ones (what the outside data saw: 12 of 13 overrules were wrong)
    gold1 = _truth("synth-dep-upgrade-001")[0]
    assert parts["round 1"]["judge_overruled_by_checks"] == len(gold1) and parts["round 1"]["overruled_kept_in_gold"] == sum(gold1)
    assert parts["all blind parts"]["n"] == parts["round 1"]["n"] + parts["round 2"]["n"]
    text = format_judge_rounds(result)
    assert "JUDGE PER BLIND ROUND" in text and "round 1" in text and "second reader" in text and "category:intent" in text
    assert result["facts"]["second"]["overall"]["n"] == sum(len(_second(t, "terse")) for t in TRACES)
    assert result["gold"]["second_reader_judgments"] == result["facts"]["second"]["overall"]["n"]


def test_with_mockllm_custom_outputs_unreadable_answers_are_counted_not_crashed(tmp_path):
    gold = _gold(tmp_path)
    answers = ["not json at all"] * (len(TRACES) * len(STYLES))
    result = validate_all(gold, judge_model=scripted_model(answers), resamples=30)
    facts = sum(len(_expected(t)[1]) for t in TRACES) * len(STYLES)
    assert result["judge_requests"] == len(TRACES) * len(STYLES) and result["judge_unanswered"] == facts
    assert all(r["judge"]["false_keeps"] == 0 for r in result["judge_rounds"])
    assert result["judge_rounds"][-1]["judge"]["false_misses"] == sum(sum(_truth(t)[0]) for t in TRACES)


def _report_tests():
    """tests/report/test_report.py as a module (its Chromium driver and matchers builder)."""
    import importlib.util
    import sys

    name = "_report_tests_for_judge_rounds"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "report" / "test_report.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def chromium():
    report = _report_tests()
    binary = report.find_chromium()
    if binary is None:
        pytest.fail("headless Chromium not found: install Debian's `chromium` or set CHROMIUM to its path")
    b = report.Chromium(binary)
    yield b
    b.close()


def test_the_report_shows_the_per_round_judge_table_with_the_same_numbers(measured, tmp_path, chromium):
    """The validate-matchers result beside a run renders the per-round table with the same
    numbers (real Chromium)."""
    _matchers_json = _report_tests()._matchers_json
    browser = chromium

    from compaction_eval.recall.run import RecallConfig, run_recall
    from compaction_eval.report.render import render_report

    _gold_dir, _judge, result = measured
    run = tmp_path / "run"
    run_recall(RecallConfig(traces=[str(ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz")],
                            labels=[str(ROOT / "labels" / "synth-ci-broken-001.yaml")],
                            prompts=[str(ROOT / "prompts" / "handoff.j2")]), run)
    matchers = {**_matchers_json(), "judge_model": "<i>judge</i>", "judge_rounds": result["judge_rounds"]}
    # a headline part with facts read twice: the second reader's ceiling beside the matcher
    test = result["judge_rounds"][1]["matcher"]
    matchers["headline"]["test"] = test
    (run / "matchers.json").write_text(json.dumps(matchers), encoding="utf-8")
    page = browser.open(render_report(run).as_uri())
    assert page.console_errors() == []
    rows = page.js("[...document.querySelectorAll('#matchers-judge-rounds tbody tr')].map(r => [r.cells[0].textContent.trim(),"
                   " r.querySelector('td[data-k=judge-kappa]').textContent.trim(), r.querySelector('td[data-k=second-kappa]').textContent.trim()])")
    assert [r[0] for r in rows] == [r["part"] for r in result["judge_rounds"]]
    for (_part, judge_cell, second_cell), r in zip(rows, result["judge_rounds"], strict=True):
        k = r["judge"]["kappa"]
        assert judge_cell.startswith("–" if k is None else f"{k:.2f}")
        assert second_cell.startswith(f"{r['judge']['second_kappa']:.2f}") and f"(n={r['judge']['second_n']})" in second_cell
    assert page.js("document.querySelectorAll('details.judge-round').length") == len(rows)
    second = " ".join(page.js("document.getElementById('matchers-second').textContent").split())
    assert f"κ {test['second_kappa']:.2f}" in second and f"on the {test['second_n']} facts read twice" in second
    assert page.js("document.querySelectorAll('#matchers i').length") == 0  # the judge's name stays text


def test_cli_prints_the_per_round_table_and_writes_json(tmp_path, capsys, monkeypatch):
    from compaction_eval.cli.main import main

    gold = _gold(tmp_path)
    judge = Judge()
    with LoopbackServer(judge_script=judge) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", DUMMY_KEY)
        out = tmp_path / "m.json"
        code = main(["validate-matchers", "--gold", str(gold), "--judge-model", "anthropic/claude-test", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "JUDGE PER BLIND ROUND" in text and "all blind parts" in text
    written = json.loads(out.read_text())
    assert [r["part"] for r in written["judge_rounds"]] == ["round 1", "round 2", "all blind parts"]
    assert DUMMY_KEY not in out.read_text() and DUMMY_KEY not in text
    shutil.rmtree(gold)


def test_every_shipped_blind_round_is_found_with_the_judgments_it_recorded():
    """The judge is measured on every round: each round's summaries are found in the shipped
    gold set (round 1 by its trace_ids, the others by split), as many judgments as recorded."""
    from compaction_eval.validation.headline import blind_parts
    from compaction_eval.validation.matchers import load_gold
    from compaction_eval.validation.rounds import load_rounds

    gold_dir = ROOT / "labels" / "gold"
    gold, rounds = load_gold(gold_dir), load_rounds(gold_dir)
    parts = dict(blind_parts(gold, rounds))
    assert list(parts) == [f"round {r['round']}" for r in rounds] and len(rounds) >= 5
    for r in rounds:
        keep = parts[f"round {r['round']}"]
        found = [s for g in gold for s in g.summaries if keep(s.split, g.trace)]
        assert sum(len(s.facts) for s in found) == r["n"], r["round"]
        assert len({g.trace for g in gold for s in g.summaries if keep(s.split, g.trace)}) == r["traces"]


def test_a_gold_set_without_blind_rounds_is_judged_whole(tmp_path):
    """A user's own gold set (no blind-rounds.json, no test split) was judged on nothing, and
    validate-matchers --judge-model exited 0 saying nothing; the judge was tuned on none of
    it, so it is judged whole."""
    from compaction_eval.validation.matchers import load_gold

    gold = _gold(tmp_path)
    (gold / "blind-rounds.json").unlink()
    for f in gold.glob("*.yaml"):
        f.write_text(f.read_text().replace("split: round2", "split: tune"))
    summaries = sum(len(g.summaries) for g in load_gold(gold))
    judge = Judge()
    with LoopbackServer(judge_script=judge) as server:
        from inspect_ai.model import get_model

        model = get_model("anthropic/claude-test", base_url=server.url, api_key=DUMMY_KEY, memoize=False)
        result = validate_all(gold, judge_model=model, resamples=20)
    assert result["judge_requests"] == len(judge.requests) == summaries > 0
    assert result["headline"]["judge_on"].startswith("all gold summaries")
    assert result["headline"]["judge_test"] is not None
