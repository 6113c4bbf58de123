"""`compaction-eval suggest` (compaction_eval.tune.suggest, cli/suggest.py): causes on
synthetic runs, the patch on the committed default run, and the done-when: the edit it
proposes for `terse`, applied with `git apply`, raises terse's recall (both are run)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.prompts import load_candidate
from compaction_eval.contracts.runfiles import read_results, write_json_atomic
from compaction_eval.tune.suggest import classify, suggest_prompt, suggest_run
from conftest import ROOT

BASELINE = ROOT / "results" / "baselines" / "main"


class _Label:
    def __init__(self, source):
        self.source = source
        self.text = "t"


def _sample(**kw):
    s = {"trace": "t", "point": 40, "prompt": "p", "budget": 800, "summary_tokens": 300, "budget_truncated": False,
         "kept_span": {"head_end": 1, "tail_start": 36}}
    s.update(kw)
    return s


def test_each_cause_is_told_apart_in_order():
    fact = {"id": "f", "category": "number", "kept": False, "distortion": None}
    fields = ("intent", "numbers")
    assert classify(_sample(), fact, _Label((37,)), fields)[0] == "never_reached"
    assert classify(_sample(), dict(fact, distortion="about 300 for 347"), _Label((5,)), fields)[0] == "distorted"
    assert classify(_sample(), fact, _Label((5,)), ("intent",))[0] == "not_asked"
    assert classify(_sample(budget_truncated=True), fact, _Label((5,)), fields)[0] == "budget"
    assert classify(_sample(summary_tokens=780), fact, _Label((5,)), fields)[0] == "budget"
    cause, evidence = classify(_sample(), fact, _Label((5,)), fields)
    assert cause == "dropped" and "300 of 800" in evidence
    # a field named otherwise still asks for its category
    assert classify(_sample(), dict(fact, category="bug"), _Label((5,)), ("errors",))[0] == "dropped"


def test_suggest_on_the_default_run_groups_causes_and_writes_a_patch_git_applies(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the run's config names its prompts relative to the repository
    results = read_results(BASELINE)
    by_name = {s.prompt: s for s in suggest_run(results)}
    assert {"handoff", "recall_max", "terse"} <= set(by_name)
    terse = by_name["terse"]
    assert terse.lost == sum(n for causes in terse.by_category.values() for n in causes.values())
    assert set(terse.by_category["number"]) == {"not_asked"}
    first = terse.edits[0]
    assert first.kind == "add_field" and first.applied and 2 <= len(first.examples) <= 3
    assert any(f.kept_by for f in first.examples)  # where another prompt kept the same fact
    # handoff asks for every category: its losses are the budget's, and the advice says so
    assert set(c for causes in by_name["handoff"].by_category.values() for c in causes) == {"budget"}
    # the patch applies to a copy of the repository's prompts with git
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "prompts", work / "prompts")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "fix.diff").write_text(terse.patch)
    subprocess.run(["git", "apply", "--check", "fix.diff"], cwd=work, check=True)
    subprocess.run(["git", "apply", "fix.diff"], cwd=work, check=True)
    assert (work / "prompts" / "terse.j2").read_text() == terse.revised
    assert load_candidate(work / "prompts" / "terse.j2").fields[:3] == ("intent", "progress", "next_step")


def test_terse_patched_by_suggest_raises_its_recall(tmp_path, monkeypatch):
    """The done-when: both prompts run on a small subset of the default corpus."""
    monkeypatch.chdir(ROOT)
    from compaction_eval.recall.run import RecallConfig, run_recall

    results = read_results(BASELINE)
    terse = suggest_run(results, "terse")[0]
    d = tmp_path / "prompts"
    d.mkdir()
    shutil.copy(ROOT / "prompts" / "_span.j2", d / "_span.j2")
    shutil.copy(ROOT / "prompts" / "terse.j2", d / "terse.j2")
    (d / "terse_fixed.j2").write_text(terse.revised.replace("name: terse", "name: terse_fixed", 1))
    traces = ["synth-ci-broken-001", "synth-refactor-001"]
    run = run_recall(RecallConfig(traces=[str(ROOT / "fixtures" / "traces" / f"{t}.json.gz") for t in traces],
                                  labels=[str(ROOT / "labels" / f"{t}.yaml") for t in traces], prompts=[str(d)]), tmp_path / "run")
    recall = {p["prompt"]: p["recall"] for p in run["prompts"]}
    assert recall["terse_fixed"] > recall["terse"] + 0.2, recall


def test_suggest_limit_and_skip_apply_one_edit_at_a_time(monkeypatch):
    monkeypatch.chdir(ROOT)
    results = read_results(BASELINE)
    cand = load_candidate(ROOT / "prompts" / "terse.j2")
    one = suggest_prompt(results, cand, limit=1)
    assert sum(e.applied for e in one.edits) == 1 and one.revised.count('in fields %}') == 4
    first = next(e for e in one.edits if e.applied)
    other = suggest_prompt(results, cand, limit=1, skip={f"{first.kind}:{first.field}"})
    assert next(e for e in other.edits if e.applied).field != first.field


def _cli(argv):
    from compaction_eval.cli import suggest as cli

    ap = argparse.ArgumentParser()
    cli.register(ap.add_subparsers())
    args = ap.parse_args(argv)
    return args.func(args)


def test_cli_writes_the_patch_and_json_and_rejects_bad_input(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    patch, js = tmp_path / "o" / "fix.diff", tmp_path / "o" / "s.json"
    assert _cli(["suggest", str(BASELINE), "--prompt", "terse", "--patch", str(patch), "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "offline stand-in" in out and "add the field `constraints`" in out
    assert patch.read_text().startswith("--- a/prompts/terse.j2")
    doc = json.loads(js.read_text())
    assert doc["schema"] == "compaction-eval/suggest@1" and doc["prompts"][0]["prompt"] == "terse"
    with pytest.raises(ContractError, match="not in the run"):
        _cli(["suggest", str(BASELINE), "--prompt", "nope"])
    bad = tmp_path / "bad"
    bad.mkdir()
    write_json_atomic(bad / "results.json", {"schema": "compaction-eval/results@1", "suite": "fact_recall", "samples": []})
    with pytest.raises(ContractError, match="not a fact-recall run with samples"):
        _cli(["suggest", str(bad)])
