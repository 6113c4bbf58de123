"""One run-directory rule for every writer (issue 24 item 3): names and prompt header names
are plain names, nothing lands outside --out, and a file the tool did not create in this run
is replaced only with --force (contracts/runfiles.py: check_run_name, check_overwrite,
check_replaceable_dir, write_text_new). The first test walks every command of the CLI, so a
command added later must say how its writes follow the rule."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

from compaction_eval.cli.main import build_parser, main
from conftest import ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"

# How each command's writes go through the rule.
STAGED = {"run", "recall", "horizon", "replay", "decay", "probes"}  # a new --out/--run directory, checked name, built aside and renamed
FORCED = {"import", "labels draft", "corpus export", "baseline save", "tune", "review", "prompts copy", "replay", "decay", "probes"}  # --force
NEVER_OVERWRITES = {"init", "requests export"}  # refuses any existing file (a non-empty directory), no --force at all
# regenerate their own outputs (report.html, gate.md, matchers.json) or append (a history database, a recording)
DERIVED = {"report", "gate", "validate-matchers", "history add", "requests import"}
READ_ONLY = {"score", "lint", "labels", "corpus", "baseline", "baseline list", "suggest", "history", "history show", "history check", "requests",
             "prompts", "prompts list", "prompts show", "docs", "schema"}


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield " ".join((*path, name)), sub
                yield from _commands(sub, (*path, name))


def test_every_command_is_classified_and_the_forced_ones_have_force():
    commands = dict(_commands(build_parser()))
    assert set(commands) == STAGED | FORCED | NEVER_OVERWRITES | DERIVED | READ_ONLY, "classify the new command here"
    for name in FORCED:
        assert "--force" in commands[name]._option_string_actions, f"{name} writes without a --force rule"
    for name in STAGED:
        assert {"--out", "--run"} <= set(commands[name]._option_string_actions), name


@pytest.mark.parametrize("command", sorted(STAGED))
@pytest.mark.parametrize("run", ["../../escape", "/tmp/abs-escape", ".hidden"])
def test_every_staged_command_refuses_a_run_name_that_is_not_a_plain_name(tmp_path, capsys, command, run):
    out = tmp_path / "a" / "results"
    code = main([command, "--out", str(out), "--run", run, "--traces", str(TRACE), "--labels", str(LABELS)] if command != "horizon"
                else [command, "--out", str(out), "--run", run])
    assert code == 2
    assert "must match [A-Za-z0-9][A-Za-z0-9._-]*" in capsys.readouterr().err
    assert not (tmp_path / "escape").exists() and not (tmp_path / "a").exists()


def test_tune_refuses_a_prompt_header_name_that_is_a_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    prompt = tmp_path / "a" / "b" / "c" / "evil.j2"
    text = (ROOT / "prompts" / "terse.j2").read_text()
    prompt.write_text(text.replace("name: terse", 'name: "../../../X"', 1))
    assert "../../../X" in prompt.read_text()
    code = main(["tune", str(prompt), "--traces", str(TRACE), "--labels", str(LABELS)])
    assert code == 2
    assert f"{prompt}: header.name: '../../../X': a name is letters, digits" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_review_never_rewrites_a_review_file_without_force(tmp_path, capsys):
    assert main(["recall", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(ROOT / "prompts" / "terse.j2"),
                 "--out", str(tmp_path), "--run", "r", "--quiet"]) == 0
    assert main(["review", str(tmp_path / "r")]) == 0
    review = tmp_path / "r" / "review.yaml"
    judged = review.read_text().replace("judgment: null", "judgment: kept", 1) + "# my notes\n"
    review.write_text(judged)
    capsys.readouterr()
    assert main(["review", str(tmp_path / "r")]) == 2
    assert f"{review}: review file exists: pass --force" in capsys.readouterr().err
    assert review.read_text() == judged  # the person's judgments are kept
    assert main(["review", str(tmp_path / "r"), "--force"]) == 0 and review.read_text() != judged


def test_replay_into_needs_a_run_directory_and_force_to_replace(tmp_path, capsys):
    common = ["--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(ROOT / "prompts" / "handoff.j2"), "--k", "2"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert main(["decay", *common, "--into", str(mine)]) == 2
    assert "--into: not a run directory" in capsys.readouterr().err and sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    assert main(["decay", *common, "--out", str(tmp_path), "--run", "r"]) == 0
    before = (tmp_path / "r" / "decay.json").read_bytes()
    capsys.readouterr()
    assert main(["decay", *common, "--into", str(tmp_path / "r")]) == 2
    assert f"{tmp_path / 'r' / 'decay.json'}: --into exists: pass --force" in capsys.readouterr().err
    assert (tmp_path / "r" / "decay.json").read_bytes() == before
    assert main(["decay", *common, "--into", str(tmp_path / "r"), "--force"]) == 0


def test_import_never_replaces_a_trace_file_without_force(tmp_path, capsys):
    src = tmp_path / "t.json"
    shutil.copy(ROOT / "tests" / "data" / "importers" / "anthropic_messages.json", src) if (ROOT / "tests" / "data" / "importers" / "anthropic_messages.json").exists() \
        else src.write_text(json.dumps({"messages": [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "done"}]}))
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 0
    (written,) = list(out.glob("*.json"))
    written.write_text("my edit")
    capsys.readouterr()
    assert main(["import", str(src), "--out", str(out)]) == 2
    assert "exists: pass --force" in capsys.readouterr().err and written.read_text() == "my edit"
    assert main(["import", str(src), "--out", str(out), "--force"]) == 0 and written.read_text() != "my edit"


def test_corpus_export_never_wipes_the_users_files(tmp_path, capsys):
    pytest.importorskip("datasets")
    args = ["--traces", str(TRACE), "--labels", str(LABELS)]
    out = tmp_path / "ds"
    assert main(["corpus", "export", str(out), *args]) == 0
    capsys.readouterr()
    assert main(["corpus", "export", str(out), *args]) == 2
    assert "exists: pass --force" in capsys.readouterr().err
    (out / "notes.md").write_text("my notes")
    assert main(["corpus", "export", str(out), *args, "--force"]) == 2
    assert f"{out / 'notes.md'}: corpus export DIR holds a file this command did not write" in capsys.readouterr().err
    assert (out / "notes.md").read_text() == "my notes"
    (out / "notes.md").unlink()
    assert main(["corpus", "export", str(out), *args, "--force"]) == 0


def test_tune_optimize_never_replaces_name_optimized_without_force(tmp_path, capsys):
    prompt = tmp_path / "terse.j2"
    shutil.copy(ROOT / "prompts" / "terse.j2", prompt)
    mine = tmp_path / "terse-optimized.j2"
    mine.write_text("my hand-edited prompt")
    assert main(["tune", str(prompt), "--optimize", "--traces", str(TRACE), "--labels", str(LABELS)]) == 2
    assert f"{mine}: already exists: pass --force" in capsys.readouterr().err
    assert mine.read_text() == "my hand-edited prompt"
