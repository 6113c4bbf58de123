"""The CI workflows parse, trigger where the issue says, and only call commands the CLI has.

Every `compaction-eval ...` line in a `run:` step is parsed with the real argument parser
(GitHub expressions and shell variables replaced by a placeholder), so a renamed
subcommand or option breaks this test rather than the nightly job.
"""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from compaction_eval.cli.main import build_parser
from conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def _steps(doc: dict) -> list[dict]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def _commands(doc: dict) -> list[list[str]]:
    """Every compaction-eval invocation in the run steps, as argv after the program name."""
    out = []
    for step in _steps(doc):
        script = step.get("run", "")
        script = re.sub(r"\\\n\s*", " ", script)  # line continuations
        for line in script.splitlines():
            if "compaction-eval" not in line:
                continue
            line = re.sub(r"\$\{\{[^}]*\}\}", "PLACEHOLDER", line)
            line = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", "PLACEHOLDER", line)
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            words = list(lexer)
            while "compaction-eval" in words:  # one invocation per command of the line
                words = words[words.index("compaction-eval") + 1:]
                end = next((i for i, w in enumerate(words) if w in (";", "&&", "||", "|", "&")), len(words))
                out.append(words[:end])
    return out


@pytest.mark.parametrize("name", ["prompt-gate.yml", "nightly.yml"])
def test_every_compaction_eval_command_in_the_workflow_parses(name):
    commands = _commands(_load(name))
    assert commands, f"{name} runs no compaction-eval command"
    parser = build_parser()
    for argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit:  # argparse exits on an unknown subcommand or option
            pytest.fail(f"{name}: `compaction-eval {' '.join(argv)}` is not accepted by the CLI")


def test_the_parser_check_can_fail():
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["gate", "--candidate", "x", "--no-such-option"])
    with pytest.raises(SystemExit):
        parser.parse_args(["no-such-command"])


def test_prompt_gate_runs_on_pull_requests_touching_prompts_labels_fixtures_and_gates():
    doc = _load("prompt-gate.yml")
    assert set(doc["on"]["pull_request"]["paths"]) == {"prompts/**", "labels/**", "fixtures/**"}
    used = [argv[0] for argv in _commands(doc)]
    assert used.index("recall") < used.index("gate") < used.index("report")
    uses = [s.get("uses", "") for s in _steps(doc)]
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    assert any("gh pr comment" in s.get("run", "") for s in _steps(doc))
    # the gate's exit code decides the job, after the comment and the upload
    verdict = _steps(doc)[-1]
    assert "steps.gate.outputs.code" in str(verdict.get("env", {})) and "exit 1" in verdict["run"]


def test_nightly_is_scheduled_uses_the_real_model_only_with_the_secret_and_keeps_the_cache():
    doc = _load("nightly.yml")
    assert doc["on"]["schedule"][0]["cron"]
    job = next(iter(doc["jobs"].values()))
    assert "secrets.ANTHROPIC_API_KEY" in job["env"]["ANTHROPIC_API_KEY"]
    steps = _steps(doc)
    real = [s for s in steps if "compaction-eval run" in s.get("run", "") and "--batch" in s["run"]]
    offline = [s for s in steps if "compaction-eval run" in s.get("run", "") and "--batch" not in s["run"]]
    assert len(real) == 1 and real[0]["if"] == "steps.mode.outputs.real == 'true'"
    assert len(offline) == 1 and offline[0]["if"] == "steps.mode.outputs.real != 'true'"
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore"))
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save"))
    assert restore["with"]["path"] == save["with"]["path"] == ".compaction-eval/inspect-cache"
    assert steps.index(restore) < steps.index(real[0]) < steps.index(save)
    assert "always()" in save["if"]
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in steps)
