"""`compaction-eval tune PROMPT --optimize` (compaction_eval.tune.optimize): the acceptance
rule on synthetic runs (a proposal that fails the held-out gate is never accepted), one small
offline run end to end, and the real-model path over HTTP against the loopback server."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from compaction_eval.tune import optimize as opt
from compaction_eval.tune.optimize import OptimizeConfig, optimize, split_traces
from conftest import ROOT
from test_compare import fact, sample

TRACES = [f"trace-{i}" for i in range(6)]


def _doc(kept) -> dict:
    """A stand-in run of `terse` over TRACES; kept(trace, fact id) decides each verdict."""
    samples = []
    for t in TRACES:
        facts = [fact(fid, cat, kept(t, fid)) for fid, cat in (("c1", "constraint"), ("c2", "constraint"), ("n1", "number"), ("n2", "number"))]
        samples.append(dict(sample(t, 40, "terse", facts), budget=800, summary_tokens=100, kept_span={"head_end": 1, "tail_start": 36}))
    return {"schema": "compaction-eval/results@1", "suite": "fact_recall", "run": "r", "model": "extractive/default",
            "offline_stand_in": True, "config": {"model": "extractive/default", "budget": 800}, "samples": samples,
            "prompts": [{"prompt": "terse"}]}


def test_split_is_by_trace_deterministic_and_order_free():
    tune, held = split_traces(TRACES)
    assert sorted(tune + held) == TRACES and not set(tune) & set(held) and len(held) == 3
    assert split_traces(list(reversed(TRACES))) == (tune, held)


def test_a_proposal_that_fails_the_held_out_gate_is_never_accepted(tmp_path, monkeypatch):
    tune, held = split_traces(TRACES)
    start = _doc(lambda t, f: f.startswith("n"))  # numbers kept, constraints lost (not asked by terse)
    # the proposal keeps the constraints everywhere (tune recall up) but loses a number on every held-out trace
    worse = _doc(lambda t, f: f.startswith("c") or (f == "n1") or (f == "n2" and t in tune))
    calls = []

    def measure(config, prompts, run_dir):
        calls.append(prompts)
        return start if len(calls) == 1 else worse

    monkeypatch.setattr(opt, "_measure", measure)
    result = optimize(OptimizeConfig(prompt=str(ROOT / "prompts" / "terse.j2"), rounds=1, work_dir=str(tmp_path / "w")),
                      out_prompt=tmp_path / "out.j2")
    step = result.history[1]
    assert step.tune_recall > result.history[0].tune_recall  # it does improve on the tune split
    assert step.gate == "regression" and not step.accepted and "held-out gate fails" in step.why
    assert any("number" in r for r in step.gate_reasons)
    assert step.edits == ["add_field:constraints"] and "+fields: [intent, progress, next_step, constraints]" in step.diff
    assert result.out_prompt is None and not (tmp_path / "out.j2").exists()

    # the same proposal without the held-out loss is accepted and written
    calls.clear()
    better = _doc(lambda t, f: True)
    monkeypatch.setattr(opt, "_measure", lambda c, p, d: start if not calls.append(p) and len(calls) == 1 else better)
    result = optimize(OptimizeConfig(prompt=str(ROOT / "prompts" / "terse.j2"), rounds=1, work_dir=str(tmp_path / "w2")),
                      out_prompt=tmp_path / "out.j2")
    assert result.history[1].accepted and result.out_prompt == str(tmp_path / "out.j2")
    assert "constraints" in (tmp_path / "out.j2").read_text()


def _tune_cli(argv):
    from compaction_eval.cli import tune as cli

    ap = argparse.ArgumentParser()
    cli.register(ap.add_subparsers())
    args = ap.parse_args(argv)
    return args.func(args)


SMALL = ["synth-ci-broken-001", "synth-refactor-001"]
SMALL_ARGS = ["--traces", *[str(ROOT / "fixtures" / "traces" / f"{t}.json.gz") for t in SMALL],
              "--labels", *[str(ROOT / "labels" / f"{t}.yaml") for t in SMALL]]


def test_offline_optimisation_runs_end_to_end_and_lands_in_the_report(tmp_path, capsys):
    run = tmp_path / "run"
    code = _tune_cli(["tune", str(ROOT / "prompts" / "terse.j2"), "--optimize", *SMALL_ARGS, "--rounds", "1",
                      "--results", str(run), "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "terse-opt.j2")])
    assert code == 0
    out = capsys.readouterr().out
    assert "offline stand-in, not an LLM" in out
    doc = json.loads((run / "optimize.json").read_text())
    assert doc["schema"] == "compaction-eval/optimize@1" and doc["offline_stand_in"]
    first = doc["history"][1]
    assert first["edits"] == ["add_field:constraints"] and first["gate"] in ("pass", "regression")
    assert first["accepted"] == (first["gate"] == "pass" and first["tune_recall"] > doc["history"][0]["tune_recall"])
    # the report renders the history next to the run's results
    from compaction_eval.report.render import render_report

    results = json.loads((tmp_path / "w" / "round-00" / "run" / "results.json").read_text())
    (run / "results.json").write_text(json.dumps(results))
    html = render_report(run).read_text()
    assert 'id="optimize"' in html and "add_field:constraints" in html and "offline stand-in" in html


def test_the_real_model_path_goes_over_http_to_the_loopback_server(tmp_path):
    from compaction_eval.loopback import LoopbackServer

    srv = LoopbackServer().start()
    try:
        home = tmp_path / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_", "ANTHROPIC_"))}
        env.update(HOME=str(home), INSPECT_DISPLAY="none", ANTHROPIC_BASE_URL=srv.url, ANTHROPIC_API_KEY="sk-ant-DUMMY-0123",
                   PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
        script = ("import argparse, sys\nfrom compaction_eval.cli import tune as t\nap = argparse.ArgumentParser()\n"
                  "t.register(ap.add_subparsers())\na = ap.parse_args(sys.argv[1:])\nsys.exit(a.func(a))\n")
        cmd = [sys.executable, "-c", script, "tune", str(ROOT / "prompts" / "terse.j2"), "--optimize",
               "--model", "anthropic/claude-test", "--shape", "messages", *SMALL_ARGS, "--rounds", "1",
               "--results", str(tmp_path / "run"), "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "t.j2"),
               "--max-retries", "1", "--timeout", "60"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        served = srv.served()
    finally:
        srv.stop()
    doc = json.loads((tmp_path / "run" / "optimize.json").read_text())
    assert doc["optimiser"] == "anthropic/claude-test" and not doc["offline_stand_in"]
    step = doc["history"][1]
    assert step["edits"] == ["model revision (+fields: constraints)"]
    assert step["accepted"] == (step["gate"] == "pass" and step["tune_recall"] > doc["history"][0]["tune_recall"])
    # the optimiser's call went through inspect, over HTTP, with the failures in its request
    from inspect_ai.log import read_eval_log

    logs = list((tmp_path / "w" / "round-01" / "optimiser-logs").glob("*.eval"))
    assert len(logs) == 1
    log = read_eval_log(str(logs[0]))
    assert log.status == "success" and log.eval.model == "anthropic/claude-test"
    assert "compaction-eval optimiser request" in log.samples[0].input and "constraint: not_asked" in log.samples[0].input
    assert len(served) >= 2 * 3 + 1  # round 0 (2 traces x 3 points at most), the optimiser, round 1
    assert "sk-ant-DUMMY-0123" not in (tmp_path / "run" / "optimize.json").read_text()


@pytest.mark.parametrize("answer,ok", [("```jinja\n{#-\nname: x\n-#}\nbody\n```", True), ("no template here", False)])
def test_parse_revision(answer, ok):
    assert (opt.parse_revision(answer) is not None) == ok


def test_one_trace_is_unusable_input_before_anything_runs(tmp_path, monkeypatch):
    from compaction_eval.contracts.problems import ContractError

    monkeypatch.setattr(opt, "_measure", lambda *a: pytest.fail("nothing may run"))
    with pytest.raises(ContractError, match="at least two traces"):
        optimize(OptimizeConfig(prompt=str(ROOT / "prompts" / "terse.j2"), traces=[SMALL_ARGS[1]], labels=[SMALL_ARGS[4]],
                                work_dir=str(tmp_path)))


def test_a_model_answer_without_a_template_is_recorded_and_rejected(tmp_path, monkeypatch):
    monkeypatch.setattr(opt, "_measure", lambda *a: _doc(lambda t, f: f.startswith("n")))
    monkeypatch.setattr(opt, "_ask_model", lambda config, request, log_dir: "I would add constraints.")
    result = optimize(OptimizeConfig(prompt=str(ROOT / "prompts" / "terse.j2"), optimiser="anthropic/x", rounds=2,
                                     traces=SMALL_ARGS[1:3], labels=SMALL_ARGS[4:6], work_dir=str(tmp_path)))
    assert [s.accepted for s in result.history[1:]] == [False, False]
    assert "holds no ```jinja template" in result.history[1].why and result.out_prompt is None


def test_optimize_runs_on_the_runs_corpus_and_never_overwrites_without_force(tmp_path, capsys):
    """Issue 23, item 8: `--results RUN` without --traces/--labels optimises on that run's
    corpus (its numbers are the ones being improved); a second run refuses to replace
    optimize.json or the written prompt unless --force."""
    from compaction_eval.cli.main import main
    from compaction_eval.contracts.problems import ContractError

    run = tmp_path / "runs" / "mine"
    assert main(["recall", *SMALL_ARGS, "--prompts", str(ROOT / "prompts" / "terse.j2"), "--out", str(tmp_path / "runs"),
                 "--run", "mine", "--quiet"]) == 0
    ran_on = sorted({s["trace"] for s in json.loads((run / "results.json").read_text())["samples"]})
    capsys.readouterr()
    argv = ["tune", str(ROOT / "prompts" / "terse.j2"), "--optimize", "--rounds", "1", "--results", str(run),
            "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "terse-opt.j2"), "--format", "json"]
    assert _tune_cli(argv) == 0
    doc = json.loads(capsys.readouterr().out)  # --format json: one document on stdout
    assert doc["command"] == "tune --optimize" and str(run / "optimize.json") in doc["files"]
    assert sorted(doc["split"]["tune"] + doc["split"]["held_out"]) == ran_on == sorted(SMALL)
    before = (run / "optimize.json").read_bytes()
    with pytest.raises(ContractError, match="already exists: pass --force"):
        _tune_cli(argv)
    assert (run / "optimize.json").read_bytes() == before
    argv[argv.index("--work-dir") + 1] = str(tmp_path / "w2")
    assert _tune_cli([*argv, "--force"]) == 0


def test_a_round_that_proposes_nothing_says_why():
    from compaction_eval.tune.suggest import Edit, PromptSuggestions

    config = OptimizeConfig(prompt="p.j2")
    none_lost = PromptSuggestions("p", None, 1.0, 0, 12, {}, [], "", [])
    assert opt.why_nothing(none_lost, config, 1).startswith("nothing to fix: the prompt lost none of the 12 facts")
    budget = PromptSuggestions("p", None, 0.5, 6, 12, {"number": {"budget": 4}, "bug": {"dropped": 2}},
                               [Edit("discard_noise", None, None, "raise --budget or shorten the other sections", "", [], applied=False)],
                               "", [])
    why = opt.why_nothing(budget, config, 1)
    assert "6 facts lost on the tune split (budget 4, dropped 2)" in why
    assert "offline optimiser stand-in applies only suggest's template edits" in why and "raise --budget" in why


def test_others_names_packaged_prompts_outside_a_project(tmp_path, monkeypatch):
    from compaction_eval.contracts.problems import ContractError

    monkeypatch.chdir(tmp_path)  # an empty directory: no prompts/ of its own
    found = opt.other_prompts(["handoff", "recall_max"])
    assert [c.name for c in found] == ["handoff", "recall_max"] and all(c.path.exists() for c in found)
    assert {c.name for c in opt.other_prompts(["prompts"])} >= {"handoff", "terse"}
    with pytest.raises(ContractError, match="no prompt file or prompt named 'nope'"):
        opt.other_prompts(["nope"])


def test_an_optimisers_proposal_over_the_template_budget_is_rejected_not_run(tmp_path, monkeypatch):
    # Issue 24 item 5: the proposal renders in the same budgeted sandbox as any prompt.
    monkeypatch.setattr(opt, "_measure", lambda *a: _doc(lambda t, f: f.startswith("n")))
    terse = (ROOT / "prompts" / "terse.j2").read_text()
    hostile = terse + "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n"
    monkeypatch.setattr(opt, "_ask_model", lambda config, request, log_dir: f"```jinja\n{hostile}```\n")
    result = optimize(OptimizeConfig(prompt=str(ROOT / "prompts" / "terse.j2"), optimiser="anthropic/x", rounds=1,
                                     traces=SMALL_ARGS[1:3], labels=SMALL_ARGS[4:6], work_dir=str(tmp_path)))
    step = result.history[1]
    assert not step.accepted and "the proposal does not load" in step.why and "loops ran more than 1000000 times" in step.why
