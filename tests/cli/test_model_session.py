"""The one model session: every subcommand that can call a model exposes its flags and goes
through it (the CLI is enumerated, so a command added later is checked too)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compaction_eval.cli.main import build_parser, main
from compaction_eval.cli.session import model_commands
from compaction_eval.compaction import recorded
from conftest import ROOT

SESSION_FLAGS = ("--timeout", "--max-retries", "--redact", "--record")
SECRET = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield
    recorded.reset()


def test_every_command_that_can_call_a_model_exposes_the_session_flags():
    commands = model_commands(build_parser())
    assert {"run", "recall", "replay", "decay", "probes", "tune", "validate-matchers", "horizon"} <= set(commands)
    for name, parser in commands.items():
        missing = [flag for flag in SESSION_FLAGS if flag not in parser._option_string_actions]
        assert not missing, f"{name} calls a model without the session's {missing}"


@pytest.mark.parametrize("command", ["validate-matchers", "decay", "probes"])
def test_session_limits_are_checked_for_every_command(command, capsys):
    assert main([command, "--model", "recorded/none.jsonl", "--timeout", "-5"]) == 2
    assert "--timeout" in capsys.readouterr().err


def _trace_with_a_secret(tmp_path: Path) -> Path:
    src = ROOT / "fixtures" / "traces" / "synth-dep-upgrade-001.json.gz"
    data = json.loads(gzip.open(src).read())
    for message in data["messages"][1:12]:  # in whatever span a policy compacts first
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "text":
                block["text"] += f"\nThe deploy key is {SECRET}, keep it safe."
                break
    out = tmp_path / "traces" / src.name
    out.parent.mkdir()
    out.write_bytes(gzip.compress(json.dumps(data).encode()))
    return out


@pytest.mark.parametrize("command", ["replay", "decay"])
def test_redact_reaches_every_request_of_commands_that_had_no_redaction_of_their_own(command, tmp_path):
    trace = _trace_with_a_secret(tmp_path)
    args = [command, "--traces", str(trace), "--labels", str(ROOT / "labels" / "synth-dep-upgrade-001.yaml"),
            "--model", "anthropic/claude-test"]
    assert main(["requests", "export", "-q", "plain", "--", *args]) == 0
    assert SECRET in (tmp_path / "plain" / "requests.jsonl").read_text()  # the test can fail
    assert main(["requests", "export", "-q", "redacted", "--", *args, "--redact"]) == 0
    sent = (tmp_path / "redacted" / "requests.jsonl").read_text()
    assert sent and SECRET not in sent
    assert not any(SECRET in p.read_text() for p in (tmp_path / "redacted" / "requests").glob("*.md"))
