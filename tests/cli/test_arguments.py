"""Errors name the flag the user typed, and a subcommand word after a many-valued option is the
subcommand (issue 23 item 11); the `[hf]` extra is named when `datasets` is missing."""

from __future__ import annotations

import shutil
import sys

import pytest

from compaction_eval.cli.main import main
from conftest import ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"


@pytest.fixture
def my_prompts(tmp_path):
    """A user's prompts folder without `handoff`: one copied prompt renamed `mine`."""
    folder = tmp_path / "myprompts"
    folder.mkdir()
    text = (ROOT / "prompts" / "handoff.j2").read_text().replace("name: handoff", "name: mine", 1)
    (folder / "mine.j2").write_text(text)
    shutil.copy(ROOT / "prompts" / "_span.j2", folder / "_span.j2")
    return folder


def test_replay_names_the_prompt_flag_the_user_has(my_prompts, tmp_path, capsys):
    code = main(["replay", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(my_prompts),
                 "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("compaction-eval: error: --prompt: no prompt named 'handoff'") and "(prompts: mine)" in err[0]
    assert "--policy-prompt" not in err[0]
    assert not list((tmp_path / "out").glob("*/*.json"))  # no run directory with results


def test_decay_names_only_prompts(my_prompts, tmp_path, capsys):
    code = main(["decay", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(my_prompts),
                 "--only-prompts", "nope", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--only-prompts: no prompt named 'nope'" in err and "--decay-prompts" not in err


def test_labels_does_not_swallow_the_export_subcommand(tmp_path, capsys):
    out = tmp_path / "ds"
    code = main(["corpus", "--traces", str(TRACE), "--labels", str(LABELS), "export", "--format", "hf", str(out)])
    assert code == 0, capsys.readouterr().err
    assert (out / "dataset_dict.json").is_file()
    assert "corpus export: 1 trace(s), 1 labelled" in capsys.readouterr().err


def test_options_before_the_subcommand_are_not_reset(tmp_path, capsys):
    # argparse resets a command's options to the subcommand's defaults: `--traces` given before
    # `export` must still be the corpus exported (one trace, not the default corpus)
    out = tmp_path / "ds"
    assert main(["corpus", "--traces", str(TRACE), "--labels", str(LABELS), "export", str(out)]) == 0
    assert "1 trace(s)" in capsys.readouterr().err


def test_export_without_datasets_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` raises ImportError
    code = main(["corpus", "--traces", str(TRACE), "--labels", str(LABELS), "export", str(tmp_path / "ds")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "pip install 'compaction-eval[hf]'" in err[0]
    assert not (tmp_path / "ds").exists()
