"""One set of defaults and flags (issue 23, item 7): the same default corpus for every command
that reads one, `--model` is the compaction model everywhere and `--agent-model` the agent,
`--format json` on every command that prints a result."""

from __future__ import annotations

import json

import pytest

from compaction_eval.cli.main import build_parser, main
from compaction_eval.contracts.paths import DEFAULTS
from compaction_eval.contracts.settings import DEFAULT_AGENT, DEFAULT_MODEL
from conftest import ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"


def _args(*argv: str):
    return build_parser().parse_args(list(argv))


def test_every_command_defaults_to_the_same_corpus():
    from compaction_eval.cli.tune import corpus_of
    from compaction_eval.recall.run import RecallConfig
    from compaction_eval.replay.run import ReplayRunConfig
    from compaction_eval.tune.ablation import TuneConfig
    from compaction_eval.tune.optimize import OptimizeConfig

    corpus = (list(DEFAULTS["traces"]), list(DEFAULTS["labels"]))
    assert "labels/real#2" in corpus[1]  # the real traces are in it
    for mode in ("replay", "decay", "probes"):
        args = _args(mode)
        assert (args.traces, args.labels) == corpus, mode
    assert corpus_of(_args("tune", "prompts/handoff.j2")) == corpus
    for config in (RecallConfig(), ReplayRunConfig(), TuneConfig(prompt="p.j2"), OptimizeConfig(prompt="p.j2")):
        assert (list(config.traces), list(config.labels)) == corpus, type(config).__name__


def test_the_repository_inspect_task_reads_the_default_corpus():
    import importlib.util

    spec = importlib.util.spec_from_file_location("evals_fact_recall", ROOT / "evals" / "fact_recall.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    traces = {s.metadata["trace"] for s in module.fact_recall().dataset}
    from compaction_eval.corpus.load import load_corpus

    assert traces == set(load_corpus([ROOT / t for t in DEFAULTS["traces"]], [f"{ROOT}/{n}" for n in DEFAULTS["labels"]]).labels)
    assert any(not t.startswith("synth-") for t in traces)  # real traces too, as `run` and `recall`


def test_model_is_the_compactor_and_agent_model_the_agent_everywhere(capsys):
    h = _args("horizon", "--model", "anthropic/claude-haiku-4-5", "--agent-model", "anthropic/claude-sonnet-4-5")
    assert (h.model, h.agent) == ("anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-5")
    assert (_args("horizon").model, _args("horizon").agent) == (DEFAULT_MODEL, DEFAULT_AGENT)
    for command in (["run"], ["tune", "p.j2"]):
        a = _args(*command, "--model", "x/compactor", "--agent-model", "y/agent")
        assert (a.model, a.agent) == ("x/compactor", "y/agent"), command
    for command in (["recall"], ["replay"], ["decay"], ["probes"]):
        assert _args(*command, "--model", "x/compactor").model == "x/compactor"
    capsys.readouterr()
    # the old spellings still work, and say which to use
    assert _args("horizon", "--compactor", "x/c").model == "x/c"
    assert _args("run", "--agent", "y/a").agent == "y/a"
    err = capsys.readouterr().err
    assert "--compactor is deprecated: use --model" in err and "--agent is deprecated: use --agent-model" in err


def test_format_json_on_lint_baseline_list_and_review(tmp_path, capsys):
    assert main(["lint", str(TRACE), str(LABELS), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "lint" and doc["ok"] and (doc["traces"], doc["labels"]) == (1, 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(LABELS.read_text().replace("schema: compaction-eval/labels@1", "schema: nope"))
    assert main(["lint", str(bad), "--traces", str(TRACE.parent), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not doc["ok"] and doc["problems"][0]["file"] == str(bad)
    prompt = tmp_path / "bad.j2"  # a prompt's problems are in the document, not printed before it
    prompt.write_text("{{ undefined_variable }}\n")
    assert main(["lint", str(prompt), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not doc["ok"] and doc["prompts"] == 1 and doc["problems"][0]["file"] == str(prompt)

    assert main(["baseline", "list", "--root", str(ROOT / "results" / "baselines"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"name": "main", "path": str(ROOT / "results" / "baselines" / "main")} in doc["baselines"]

    assert main(["review", str(ROOT / "results" / "baselines" / "main"), "--write", str(tmp_path / "review.yaml"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "review" and doc["files"] == [str(tmp_path / "review.yaml")]


@pytest.mark.parametrize("command", [["suggest", "RUN"], ["tune", "p.j2"], ["review", "RUN"], ["lint"], ["baseline", "list"],
                                     ["gate", "--candidate", "RUN"], ["report", "RUN"]])
def test_format_json_is_accepted(command):
    if command[0] == "report":
        assert _args(*command, "--baseline", "main").baseline == "main"  # a baseline name, as for the gate
        return
    assert _args(*command, "--format", "json").format == "json"
