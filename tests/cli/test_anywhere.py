"""Works anywhere: the default inputs resolve to the project or to the package's data, and
the built wheel, installed in a fresh virtual environment, runs from an empty directory."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from compaction_eval.cli.version import add_version_flag, version_string
from compaction_eval.contracts.paths import (
    default_input,
    package_data,
    project_dir,
    resolve_inputs,
)
from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.corpus.load import load_corpus

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_resolve_to_the_project_inside_one_and_to_the_package_outside(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert project_dir() == ROOT
    assert resolve_inputs(None, "traces") == [Path("fixtures/traces"), Path("fixtures/real")]
    assert default_input("gold") == Path("labels/gold")

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert project_dir() is None
    assert resolve_inputs(None, "prompts") == [package_data() / "prompts"]
    assert resolve_inputs(["labels", "./fixtures/traces"]) == [package_data() / "labels", package_data() / "fixtures" / "traces"]
    # a user's own path is never replaced
    assert resolve_inputs(["my-traces"], "traces") == [Path("my-traces")]
    # the default corpus and prompts load from the package data
    names = {c.name for c in load_candidates(["prompts"])}
    assert {"handoff", "terse"} <= names
    corpus = load_corpus(["fixtures/traces"], ["labels"])
    assert len(corpus.traces) == 11

    # a project without that folder says so (no silent fallback to the package's copy)
    (empty / "prompts").mkdir()
    with pytest.raises(Exception, match="fixtures/traces"):
        load_corpus(["fixtures/traces"], ["labels"])


def test_version_flag_prints_package_and_inspect_versions(capsys):
    parser = argparse.ArgumentParser(prog="compaction-eval")
    add_version_flag(parser)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.strip() == version_string()
    assert out.startswith("compaction-eval 0.") and "inspect-ai 0.3" in out


def _copy_project(dst: Path) -> Path:
    """What building the wheel reads, copied so the build writes nothing in the checkout."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dst / name)
    shutil.copytree(ROOT / "src", dst / "src", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "prompts", dst / "prompts")
    shutil.copytree(ROOT / "fixtures" / "traces", dst / "fixtures" / "traces")
    shutil.copytree(ROOT / "fixtures" / "real", dst / "fixtures" / "real")
    shutil.copytree(ROOT / "labels", dst / "labels", ignore=shutil.ignore_patterns("synth-large"))
    return dst


def install_wheel(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Build the wheel of this checkout (no network: no build isolation, no dependencies),
    install it into a fresh venv that sees the test environment's packages through a .pth
    file, and return (venv, its python, an environment for running it). Asserts what the
    wheel ships."""
    (tmp_path / "project").mkdir()
    src = _copy_project(tmp_path / "project")
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    wheel = next(dist.glob("compaction_eval-*.whl"))
    import zipfile

    shipped = zipfile.ZipFile(wheel).namelist()
    assert "compaction_eval/data/prompts/handoff.j2" in shipped
    assert any(n.startswith("compaction_eval/data/fixtures/traces/synth-") for n in shipped)
    assert "compaction_eval/data/labels/gold/controls.yaml" in shipped
    assert "compaction_eval/data/labels/gold/blind-rounds.json" in shipped  # the headline without a test part
    assert not any("synth-large" in n for n in shipped)  # the default corpus only
    # what a user writes against (issue 23): the docs, the schemas, init's files
    assert {"compaction_eval/docs/prompts.md", "compaction_eval/docs/schemas/trace.schema.json",
            "compaction_eval/docs/schemas/labels.schema.json", "compaction_eval/docs/schemas/results.schema.json",
            "compaction_eval/scaffold/workflow.yml", "compaction_eval/recall/matching/stop_words.py"} <= set(shipped)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # The test environment's packages (inspect-ai, ...) are seen through a path entry; its own
    # .pth files (an editable install of this checkout) are not processed from there.
    (site / "_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(INSPECT_DISPLAY="none", PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return venv, py, env


def test_built_wheel_runs_from_an_empty_directory(tmp_path):
    """Build the wheel, install it (no dependencies) into a fresh venv that sees the test
    environment's packages through a .pth file, and run from an empty directory."""
    venv, py, env = install_wheel(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()

    def run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=empty, env=env, capture_output=True, text=True, timeout=timeout)

    where = run(str(py), "-c", "import compaction_eval, sys; print(compaction_eval.__file__)")
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the wheel's copy, not the checkout

    version = run(str(py), "-m", "compaction_eval.cli.version")
    assert version.returncode == 0 and version.stdout.startswith("compaction-eval 0.1"), version.stderr

    # a copied packaged prompt lints and renders without its partial beside it
    cli = str(venv / "bin" / "compaction-eval")
    copied = run(cli, "prompts", "copy", "handoff", "mine", "--name", "mine")
    assert copied.returncode == 0, copied.stderr
    linted = run(cli, "lint", "mine/mine.j2")
    assert linted.returncode == 0 and "trial render on the real trace" in linted.stderr, linted.stdout + linted.stderr
    assert run(cli, "docs", "prompts").stdout.startswith("# Writing a compaction prompt")
    shutil.rmtree(empty / "mine")  # the empty directory stays empty (not a project)

    done = run(str(venv / "bin" / "compaction-eval"), "run", "--skip-horizon", "--run", "r1", "--display", "none")
    assert done.returncode == 0, done.stderr
    assert (empty / "results" / "r1" / "results.json").is_file()
    assert (empty / "results" / "r1" / "report.html").is_file()
    assert "handoff" in done.stdout and "recall" in done.stdout

    logs = empty / "inspect-logs"
    task = run(str(py), "-m", "inspect_ai", "eval", "compaction_eval/fact_recall", "--model", "extractive/default",
               "--limit", "2", "--log-dir", str(logs), "--display", "none")
    assert task.returncode == 0, task.stderr
    from inspect_ai.log import list_eval_logs, read_eval_log

    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success", log.error
    assert log.eval.task in ("compaction_eval/fact_recall", "fact_recall")
    recall = next(s for s in log.results.scores if s.name == "recall")
    assert recall.metrics and all(m.group == "grouped" for m in recall.metrics.values())  # per prompt
