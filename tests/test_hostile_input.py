"""The bad-input and fault catalogue of issue 14: each hostile or careless input gives one
clear line naming the file (and place), a non-zero exit, nothing partial written and
nothing leaked. Real files, the real CLI entry point (in process, fast)."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from compaction_eval.cli.main import main
from compaction_eval.contracts.problems import ContractError

TRACE = {
    "schema": "compaction-eval/trace@1",
    "id": "t1",
    "source": {"kind": "test"},
    "system": "You are a coding agent.",
    "messages": [
        {"role": "user", "content": "Fix the failing test in src/app/billing.py; do not touch tests/."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Running the tests first."},
            {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "pytest -q"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "FAILED tests/test_billing.py - ZeroDivisionError\n1 failed, 347 passed"}]},
        {"role": "assistant", "content": "The total divides by the item count; I will guard it."},
        {"role": "user", "content": "Go ahead."},
    ],
}
LABELS = """schema: compaction-eval/labels@1
trace: t1
labelled_by: human
points:
  - at: 4
facts:
  - id: failing-file
    category: artifact
    text: The bug is in src/app/billing.py.
    keys: ["src/app/billing.py"]
    source: [0]
"""


def write_corpus(tmp_path: Path, labels: str = LABELS, trace: dict | None = None) -> tuple[Path, Path]:
    traces, labs = tmp_path / "traces", tmp_path / "labels"
    traces.mkdir(exist_ok=True)
    labs.mkdir(exist_ok=True)
    (traces / "t1.json").write_text(json.dumps(trace or TRACE))
    (labs / "t1.yaml").write_text(labels)
    return traces, labs


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str, *needles: str) -> str:
    """The CLI's error: one located line (extra problems are indented below it)."""
    first = [line for line in err.splitlines() if line.startswith("compaction-eval: error:")]
    assert len(first) == 1, err
    assert "Traceback" not in err and "(set COMPACTION_EVAL_DEBUG=1" not in err, err
    for needle in needles:
        assert needle in first[0], first[0]
    return first[0]


def files_under(path: Path) -> set[Path]:
    return {p for p in path.rglob("*")} if path.exists() else set()


# --------------------------------------------------------------------------------- YAML

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
) + "schema: compaction-eval/labels@1\n"


@pytest.mark.parametrize("command", ["lint", "corpus", "recall"])
def test_yaml_alias_bomb_is_refused_at_once(tmp_path, capsys, command):
    assert len(ALIAS_BOMB) < 500  # expands to 9**9 = 387M nodes
    traces, labs = write_corpus(tmp_path, labels=ALIAS_BOMB)
    argv = {
        "lint": ["lint", str(traces), str(labs)],
        "corpus": ["corpus", "--traces", str(traces), "--labels", str(labs)],
        "recall": ["recall", "--traces", str(traces), "--labels", str(labs), "--out", str(tmp_path / "results"), "--run", "r"],
    }[command]
    start = time.perf_counter()
    code, out, err = cli(capsys, *argv)
    assert time.perf_counter() - start < 10
    assert code != 0
    text = out + err
    assert f"{labs / 't1.yaml'}: line 2, b[0]: YAML aliases (*name) are not allowed" in text
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("snippet", "place", "message"),
    [
        ("weight: .nan", "line 12, facts[0].weight", "must be a positive finite number"),
        ("weight: .inf", "line 12, facts[0].weight", "must be a positive finite number"),
        ("weight: !!python/object/apply:os.system [id]", "line 12, facts[0].weight", "tag !!python/object/apply:os.system is not allowed"),
        ("weight: !!python/name:os.system x", "line 12, facts[0].weight", "tag !!python/name:os.system is not allowed"),
        ("alt_keys: !!set {a: null}", "line 12, facts[0].alt_keys", "tag !!set is not allowed on a mapping"),
        ("alt_keys: !custom [[a]]", "line 12, facts[0].alt_keys", "tag !custom is not allowed on a list"),
        ("alt_keys: [['  ']]", "line 12, facts[0].alt_keys", "must be a list of lists of strings"),
        ("id: second", "line 12, facts[0].id", "duplicate key 'id'"),
    ],
)
def test_labels_lint_refuses_what_would_fail_later(tmp_path, capsys, snippet, place, message):
    traces, labs = write_corpus(tmp_path, labels=LABELS + f"    {snippet}\n")
    code, out, err = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1
    assert f"{labs / 't1.yaml'}: {place}: {message}" in out, out


def test_labels_lint_refuses_duplicate_points_and_blank_keys(tmp_path, capsys):
    labels = LABELS.replace("  - at: 4\n", "  - at: 4\n  - at: 4\n").replace('["src/app/billing.py"]', '["src/app/billing.py", "   "]')
    traces, labs = write_corpus(tmp_path, labels=labels)
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1
    assert f"{labs / 't1.yaml'}: line 6, points[1].at: duplicate point 4 (first at points[0])" in out
    assert f"{labs / 't1.yaml'}: line 11, facts[0].keys: must be a list of strings that are not empty or only whitespace" in out


def test_yaml_reader_keeps_data_and_line_maps():
    from compaction_eval.contracts.labels import load_labels

    labels = load_labels(ROOT / "labels" / "synth-dep-upgrade-001.yaml")
    assert labels.place("facts[0].keys[0]").startswith("line ")
    assert yaml.safe_load((ROOT / "labels" / "synth-dep-upgrade-001.yaml").read_text())["trace"] == labels.trace


# ------------------------------------------------------------------------------- traces


def test_trace_with_nan_inside_tool_use_input_is_a_lint_error(tmp_path, capsys):
    traces, labs = write_corpus(tmp_path)
    text = json.dumps(TRACE, indent=1).replace('"command": "pytest -q"', '"command": "pytest -q", "n": NaN')
    (traces / "t1.json").write_text(text)
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "NaN" in t)
    assert code == 1
    assert f"{traces / 't1.json'}: line {line} column" in out
    assert "NaN is not a JSON number (NaN and Infinity are not allowed)" in out


def test_json_nested_200k_deep_is_a_located_error(tmp_path, capsys):
    traces, labs = write_corpus(tmp_path)
    (traces / "t1.json").write_text("[" * 200_000 + "]" * 200_000)
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1
    assert f"{traces / 't1.json'}: JSON nested too deeply to read" in out


def test_gzip_bomb_is_refused_with_a_size_limit(tmp_path, capsys, monkeypatch):
    from compaction_eval.contracts import traces as traces_mod

    monkeypatch.setattr(traces_mod, "MAX_TRACE_BYTES", 1024 * 1024)  # the real limit is 256 MiB
    traces, labs = write_corpus(tmp_path)
    (traces / "t1.json").unlink()
    (traces / "t1.json.gz").write_bytes(gzip.compress(b" " * (8 * 1024 * 1024)))
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1
    assert f"{traces / 't1.json.gz'}: larger than 1 MiB once decompressed: refused" in out


# ------------------------------------------------------------------------------ prompts

HEADER = "{#-\nname: evil\ndescription: x\nfields: [intent]\n-#}\n"


def prompt_run(tmp_path: Path, capsys, body: str, name: str = "evil.j2", raw: bytes | None = None):
    traces, labs = write_corpus(tmp_path)
    prompts = tmp_path / "prompts"
    prompts.mkdir(exist_ok=True)
    path = prompts / name
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(HEADER + body)
    code, out, err = cli(capsys, "recall", "--traces", str(traces), "--labels", str(labs), "--prompts", str(path),
                         "--out", str(tmp_path / "results"), "--run", "r")
    assert code == 2
    assert not (tmp_path / "results").exists()
    return path, err


@pytest.mark.parametrize(
    "body",
    [
        '{{ cycler.__init__.__globals__.os.popen("id").read() }}',
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{% set x = fields.add('bugs') %}{{ x }}",
    ],
)
def test_prompt_templates_are_sandboxed(tmp_path, capsys, body):
    path, err = prompt_run(tmp_path, capsys, "Summarise.\n" + body + "\n")
    one_error(err, f"{path}: line 7: unsafe template:", "sandbox")


def test_prompt_template_cannot_read_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-do-not-copy-0000")
    path, err = prompt_run(tmp_path, capsys, "{{ cycler.__init__.__globals__.os.environ['ANTHROPIC_API_KEY'] }}\n")
    assert "SECRET" not in err
    one_error(err, f"{path}: line 6: unsafe template")


@pytest.mark.parametrize("target", ["../outside.j2", "/etc/hostname", "link.j2"])
def test_prompt_include_only_inside_the_prompts_folder(tmp_path, capsys, target):
    (tmp_path / "outside.j2").write_text("outside the folder\n")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "link.j2").symlink_to(tmp_path / "outside.j2")
    path, err = prompt_run(tmp_path, capsys, f'{{% include "{target}" %}}\n')
    one_error(err, f"{path}: line 6: included template not found:")


def test_prompt_with_an_undefined_variable_fails_before_running(tmp_path, capsys):
    path, err = prompt_run(tmp_path, capsys, "Summarise {{ spann }} in {{ budget }} tokens.\n")
    one_error(err, f"{path}: line 6: template error: 'spann' is undefined")


def test_prompt_with_binary_content_is_a_located_error(tmp_path, capsys):
    path, err = prompt_run(tmp_path, capsys, "", raw=HEADER.encode() + b"\xff\xfe\x00binary")
    one_error(err, f"{path}: byte {len(HEADER)}: not UTF-8 text")


def test_prompt_including_a_binary_partial_is_a_located_error(tmp_path, capsys):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "_bin.j2").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    _, err = prompt_run(tmp_path, capsys, '{% include "_bin.j2" %}\n')
    one_error(err, f"{tmp_path / 'prompts' / '_bin.j2'}: byte 0: not UTF-8 text")


def test_the_shipped_prompts_still_render():
    from compaction_eval.contracts.prompts import load_candidates

    for c in load_candidates([ROOT / "prompts"]):
        assert "src/x.py" in c.render(budget=100, span="see src/x.py")


def _unused() -> None:  # keep imports used by later sections
    os.getpid()
