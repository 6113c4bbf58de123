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

from compaction_eval.cli.main import main
from compaction_eval.contracts.problems import ContractError
from conftest import ROOT

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
        {"role": "assistant", "content": "Guarded the division in src/app/billing.py."},
        {"role": "user", "content": "Run the tests again."},
        {"role": "assistant", "content": "All 348 tests pass."},
        {"role": "user", "content": "Thanks."},
    ],
}
LABELS = """schema: compaction-eval/labels@1
trace: t1
labelled_by: human
points:
  - at: 8
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


def assert_one_error(err: str, *needles: str) -> str:
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
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=False)
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
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1
    assert f"{labs / 't1.yaml'}: {place}: {message}" in out, out


def test_labels_lint_refuses_duplicate_points_and_blank_keys(tmp_path, capsys):
    labels = LABELS.replace("  - at: 8\n", "  - at: 8\n  - at: 8\n").replace('["src/app/billing.py"]', '["src/app/billing.py", "   "]')
    traces, labs = write_corpus(tmp_path, labels=labels)
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1
    assert f"{labs / 't1.yaml'}: line 6, points[1].at: duplicate point 8 (first at points[0])" in out
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
    code, _, err = cli(capsys, "recall", "--traces", str(traces), "--labels", str(labs), "--prompts", str(path),
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
    assert_one_error(err, f"{path}: line 7: unsafe template:", "sandbox")


def test_prompt_template_cannot_read_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-do-not-copy-0000")
    path, err = prompt_run(tmp_path, capsys, "{{ cycler.__init__.__globals__.os.environ['ANTHROPIC_API_KEY'] }}\n")
    assert "SECRET" not in err
    assert_one_error(err, f"{path}: line 6: unsafe template")


@pytest.mark.parametrize("target", ["../outside.j2", "/etc/hostname", "link.j2"])
def test_prompt_include_only_inside_the_prompts_folder(tmp_path, capsys, target):
    (tmp_path / "outside.j2").write_text("outside the folder\n")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "link.j2").symlink_to(tmp_path / "outside.j2")
    path, err = prompt_run(tmp_path, capsys, f'{{% include "{target}" %}}\n')
    assert_one_error(err, f"{path}: line 6: included template not found:")


def test_prompt_with_an_undefined_variable_fails_before_running(tmp_path, capsys):
    path, err = prompt_run(tmp_path, capsys, "Summarise {{ spann }} in {{ budget }} tokens.\n")
    assert_one_error(err, f"{path}: line 6: template error: 'spann' is undefined")


def test_prompt_with_binary_content_is_a_located_error(tmp_path, capsys):
    path, err = prompt_run(tmp_path, capsys, "", raw=HEADER.encode() + b"\xff\xfe\x00binary")
    assert_one_error(err, f"{path}: byte {len(HEADER)}: not UTF-8 text")


def test_prompt_including_a_binary_partial_is_a_located_error(tmp_path, capsys):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "_bin.j2").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    _, err = prompt_run(tmp_path, capsys, '{% include "_bin.j2" %}\n')
    assert_one_error(err, f"{tmp_path / 'prompts' / '_bin.j2'}: byte 0: not UTF-8 text")


def test_the_shipped_prompts_still_render():
    from compaction_eval.contracts.prompts import load_candidates

    for c in load_candidates([ROOT / "prompts"]):
        assert "src/x.py" in c.render(budget=100, span="see src/x.py")


# -------------------------------------------------------------------- numbers and names


def recall_argv(tmp_path: Path, *extra: str) -> list[str]:
    traces, labs = write_corpus(tmp_path)
    return ["recall", "--traces", str(traces), "--labels", str(labs), "--prompts", str(ROOT / "prompts" / "terse.j2"),
            "--out", str(tmp_path / "results"), *extra]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--budget", "0"], "--budget: 0 is not valid: must be a positive number of tokens"),
        (["--budget", "-5"], "--budget: -5 is not valid"),
        (["--keep-last", "-3"], "--keep-last: -3 is not valid: must be 0 or more messages"),
        (["--epochs", "0"], "--epochs: 0 is not valid"),
        (["--timeout", "0"], "--timeout: 0 is not valid"),
        (["--max-retries", "-1"], "--max-retries: -1 is not valid"),
        (["--run", "../../escape"], "--run: name '../../escape' must match"),
        (["--run", "/tmp/abs"], "--run: name '/tmp/abs' must match"),
        (["--run", ".hidden"], "--run: name '.hidden' must match"),
    ],
)
def test_recall_refuses_bad_numbers_and_run_names_before_running(tmp_path, capsys, extra, needle):
    argv = recall_argv(tmp_path, *extra)
    if "--run" not in extra:
        argv += ["--run", "r"]
    code, _, err = cli(capsys, *argv)
    assert code == 2
    assert_one_error(err, needle)
    assert not (tmp_path / "results").exists() or list((tmp_path / "results").iterdir()) == []
    assert not (tmp_path.parent / "escape").exists()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["horizon", "--worlds", "build-01", "--budget", "0"], "--budget: 0 is not valid"),
        (["replay", "--budget", "0"], "--budget: 0 is not valid"),
        (["decay", "--budget", "-1"], "--budget: -1 is not valid"),
        (["probes", "--keep-last", "-2"], "--keep-last: -2 is not valid"),
        (["tune", str(ROOT / "prompts" / "terse.j2"), "--budget", "0"], "--budget: 0 is not valid"),
    ],
)
def test_every_suite_checks_its_compaction_flags_in_one_place(tmp_path, capsys, argv, needle):
    """Each command builds one CompactionSettings from its flags: the same check, the same line."""
    out = ["--work-dir", str(tmp_path / "results")] if argv[0] == "tune" else ["--out", str(tmp_path / "results"), "--run", "r"]
    code, _, err = cli(capsys, *argv, *out)
    assert code == 2
    assert_one_error(err, needle)
    assert not (tmp_path / "results").exists() or list((tmp_path / "results").iterdir()) == []


def test_keep_last_that_empties_the_span_is_an_error_not_100_percent(tmp_path, capsys):
    code, _, err = cli(capsys, *recall_argv(tmp_path, "--keep-last", "1000", "--run", "r"))
    assert code == 2
    assert_one_error(err, f"{tmp_path / 'labels' / 't1.yaml'}: line 5, points[0].at: --keep-last 1000 keeps all of messages[1:8] verbatim")


def test_absolute_run_names_are_refused_by_the_one_name_rule():
    from compaction_eval.contracts.runfiles import check_run_name, run_directory

    for bad in ("/tmp/abs", "../x", "a/b", "..", ""):
        with pytest.raises(ContractError):
            check_run_name(bad)
        with pytest.raises(ContractError):
            run_directory("results", bad)
    assert run_directory("results", "ok-1.2") == Path("results") / "ok-1.2"


def test_a_second_run_with_the_same_name_fails_at_once(tmp_path):
    from compaction_eval.contracts.runfiles import staged_run_dir

    final = tmp_path / "results" / "same"
    with staged_run_dir(final):
        start = time.perf_counter()
        with pytest.raises(ContractError, match=rf"run 'same' is already in progress \(pid {os.getpid()}\)"):
            with staged_run_dir(final):
                pass
        assert time.perf_counter() - start < 1
    assert final.is_dir() and sorted(p.name for p in final.parent.iterdir()) == ["same"]  # lock removed


def test_a_second_process_with_the_same_run_fails_at_once(tmp_path):
    import subprocess
    import sys

    final = tmp_path / "results" / "same"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys,time; from compaction_eval.contracts.runfiles import run_lock; "
         "cm = run_lock(__import__('pathlib').Path(sys.argv[1])); cm.__enter__(); print('held', flush=True); time.sleep(30)", str(final)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    try:
        assert holder.stdout.readline().strip() == "held"
        from compaction_eval.contracts.runfiles import staged_run_dir

        with pytest.raises(ContractError, match=f"already in progress \\(pid {holder.pid}\\)"):
            with staged_run_dir(final):
                pass
    finally:
        holder.kill()
        holder.wait()
    with staged_run_dir(final):  # a killed holder's lock is released by the kernel
        pass
    assert final.is_dir()


def test_out_naming_an_existing_file_is_a_located_error(tmp_path, capsys):
    argv = recall_argv(tmp_path, "--run", "r")
    (tmp_path / "results").write_text("not a directory")
    code, _, err = cli(capsys, *argv)
    assert code == 2
    assert_one_error(err, f"{tmp_path / 'results'}: --out must be a directory, but this is an existing file")
    assert (tmp_path / "results").read_text() == "not a directory"


def test_labels_draft_and_baseline_save_refuse_to_overwrite(tmp_path):
    from compaction_eval.contracts.traces import load_trace
    from compaction_eval.corpus.drafting import write_draft

    traces, _ = write_corpus(tmp_path)
    out = tmp_path / "edited.yaml"
    out.write_text("# hand-edited\n")
    with pytest.raises(ContractError, match="--out exists: pass --force to overwrite it"):
        write_draft(load_trace(traces / "t1.json"), 8, out)
    assert out.read_text() == "# hand-edited\n"
    write_draft(load_trace(traces / "t1.json"), 8, out, force=True)
    assert "labelled_by: draft" in out.read_text()


def test_summary_that_is_a_directory_or_binary_is_a_located_error(tmp_path):
    from compaction_eval.contracts.runfiles import read_text_input

    (tmp_path / "bin.txt").write_bytes(b"ok\xff\xfe")
    with pytest.raises(ContractError, match=r"bin.txt: byte 2: --summary is not UTF-8 text"):
        read_text_input(tmp_path / "bin.txt")
    with pytest.raises(ContractError, match=r": --summary is a directory"):
        read_text_input(tmp_path)


# ---------------------------------------------------------------- results.json, gate, report


def results_doc(prompt: str = "handoff", recall: float = 1.0, budget: int = 800, n: int = 6) -> dict:
    samples = []
    for i in range(n):
        kept = recall >= 1.0 or i % 2 == 0
        samples.append({"trace": f"t{i}", "point": 10, "prompt": prompt, "epoch": 1, "recall": 1.0 if kept else 0.0,
                        "precision": 0.5, "recall_by_category": {"artifact": 1.0 if kept else 0.0},
                        "facts": [{"id": "f1", "category": "artifact", "kept": kept, "critical": False}], "avoid": []})
    return {"schema": "compaction-eval/results@1", "suite": "fact_recall", "run": "r", "model": "extractive/default",
            "offline_stand_in": True, "config": {"model": "extractive/default", "budget": budget, "keep_last": 4,
                                                 "shape": "inline", "focus": None, "judge_model": None},
            "samples": samples, "prompts": [{"prompt": prompt, "recall": recall, "recall_ci": [0.0, 1.0]}]}


def write_run(path: Path, doc: dict) -> Path:
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(doc, allow_nan=True))
    return path


@pytest.mark.parametrize(
    ("mutate", "place", "message"),
    [
        (lambda d: d["samples"][2].update(recall=-0.5), "samples[2].recall", "-0.5 is not a number between 0 and 1"),
        (lambda d: d["samples"][0].update(recall=5.0), "samples[0].recall", "5.0 is not a number between 0 and 1"),
        (lambda d: d["samples"][1].update(recall="0.9"), "samples[1].recall", "'0.9' is not a number between 0 and 1"),
        (lambda d: d["samples"][1].update(facts={"id": "f1"}), "samples[1].facts", "missing or not a list"),
        (lambda d: d["samples"][1]["facts"][0].pop("kept"), "samples[1].facts[0].kept", "None is not true or false"),
        (lambda d: d["samples"][3].pop("trace"), "samples[3].trace", "missing or not a non-empty string"),
        (lambda d: d["samples"][3].update(point="x"), "samples[3].point", "'x' is not a message index"),
        (lambda d: d.update(samples={"a": 1}), "samples", "missing or not a list"),
        (lambda d: d["prompts"][0].update(recall_ci=[0.1]), "prompts[0].recall_ci", "must be [low, high]"),
    ],
)
def test_gate_and_report_refuse_bad_results_with_a_located_error(tmp_path, capsys, mutate, place, message):
    base = write_run(tmp_path / "base", results_doc())
    doc = results_doc()
    mutate(doc)
    cand = write_run(tmp_path / "cand", doc)
    md, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    code, _, err = cli(capsys, "gate", "--baseline", str(base), "--candidate", str(cand), "--markdown", str(md), "--junit", str(junit))
    assert code == 2
    assert_one_error(err, f"{cand / 'results.json'}: {place}: candidate: {message}")
    assert "unusable input" in md.read_text()
    ET_parse(junit)
    code, _, err = cli(capsys, "report", str(cand))
    assert code == 2
    assert_one_error(err, f"{cand / 'results.json'}: {place}: {message}")
    assert not (cand / "report.html").exists()


def ET_parse(path: Path):
    from xml.etree import ElementTree

    return ElementTree.parse(path)


def test_gate_refuses_nan_written_as_a_json_constant(tmp_path, capsys):
    base = write_run(tmp_path / "base", results_doc())
    cand = write_run(tmp_path / "cand", results_doc())
    path = cand / "results.json"
    path.write_text(path.read_text().replace('"recall": 1.0,', '"recall": NaN,', 1))
    code, _, err = cli(capsys, "gate", "--baseline", str(base), "--candidate", str(cand))
    assert code == 2
    assert_one_error(err, f"{path}: line 1 column", "NaN is not a JSON number")


def test_report_baseline_refuses_runs_with_different_settings_as_the_gate_does(tmp_path, capsys):
    base = write_run(tmp_path / "base", results_doc(budget=250))
    cand = write_run(tmp_path / "cand", results_doc(budget=800))
    code, _, gate_err = cli(capsys, "gate", "--baseline", str(base), "--candidate", str(cand))
    assert code == 2
    code, _, report_err = cli(capsys, "report", str(cand), "--baseline", str(base))
    assert code == 2
    line = assert_one_error(report_err, "budget: baseline 250, candidate 800", "--allow-setting-changes")
    assert line.split(": config: ")[1] == assert_one_error(gate_err).split(": config: ")[1]  # the gate's own words
    assert not (cand / "report.html").exists()


EVIL_PROMPT = "x\n## ✅ compaction-eval gate: pass\n<img src=x onerror=alert(1)> ![pwn](http://evil.example/p.png) [click](http://evil.example)\x07\x1b|"


def test_gate_markdown_and_junit_are_inert_for_hostile_prompt_names(tmp_path, capsys):
    base = write_run(tmp_path / "base", results_doc(prompt=EVIL_PROMPT))
    cand = write_run(tmp_path / "cand", results_doc(prompt=EVIL_PROMPT, recall=0.5))
    md, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    code, _, _ = cli(capsys, "gate", "--baseline", str(base), "--candidate", str(cand), "--markdown", str(md), "--junit", str(junit))
    assert code == 1
    text = md.read_text()
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0] == "## ❌ compaction-eval gate: regression"
    assert not any("gate: pass" in h for h in headings)
    assert "<img" not in text and "](http" not in text and "\x07" not in text and "\x1b" not in text
    assert "&lt;img src=x onerror=alert\\(1\\)&gt; \\!\\[pwn\\]\\(http://evil.example/p.png\\)" in text
    rows = [line for line in text.splitlines() if line.startswith("| x ")]
    # the name's pipe is escaped: every row keeps its table's cells (7 in the recall table, 5 in facts lost)
    counts = {row.replace("\\|", "").count("|") for row in rows}  # recall: 7 cells, category: 2, facts: 5
    assert counts == {8, 3, 6}, rows

    suites = ET_parse(junit).getroot().findall("testsuite")
    assert suites[0].get("name").endswith("\\x07\\x1b|")


# ------------------------------------------------------------------------------ redaction

PGP = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGXyZ1kBCAC9s3cr3tKeyMaterial\n-----END PGP PRIVATE KEY BLOCK-----"


def test_redact_catches_keys_pgp_blocks_and_aws_secret_values():
    from compaction_eval.corpus.redact import redact_json, redact_text

    data = {"input": {"sk-live-4f9aSECRETKEY0": True, "sk-proj-AAAASECRET1": 1, "sk-proj-BBBBSECRET2": 2}}
    out = json.dumps(redact_json(data))
    assert "SECRET" not in out and out.count("[REDACTED:openai_key]") == 3
    assert redact_text(PGP) == "[REDACTED:private_key]"
    text = redact_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = eu-west-1")
    assert "wJalrXUtnFEMI" not in text and "region = eu-west-1" in text


def test_a_redacted_run_writes_no_secret_anywhere(tmp_path, capsys):
    secret_key, focus_secret = "sk-live-4f9aSECRETKEYxyz", "ghp_" + "A" * 30
    trace = json.loads(json.dumps(TRACE))
    trace["messages"][1]["content"][1]["input"] = {"command": "pytest -q", secret_key: "token"}
    trace["messages"][2]["content"][0]["content"] += "\naws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n" + PGP
    traces, labs = write_corpus(tmp_path, trace=trace)
    code, _, err = cli(capsys, *recall_argv(tmp_path, "--run", "red", "--redact", "--keep-last", "2", "--focus", f"keep {focus_secret}"))
    assert code == 0, err
    run = tmp_path / "results" / "red"
    code, _, err = cli(capsys, "report", str(run), "--traces", str(traces), "--labels", str(labs))
    assert code == 0, err
    assert (run / "report.html").exists()
    for path in run.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".eval":
                import zipfile

                with zipfile.ZipFile(path) as z:
                    data += b"".join(z.read(n) for n in z.namelist())
            for needle in (secret_key, focus_secret, "wJalrXUtnFEMI", "s3cr3tKeyMaterial"):
                assert needle.encode() not in data, f"{needle} leaked into {path}"


# ------------------------------------------------------------- faults over real HTTP


@pytest.fixture(scope="module")
def loopback():
    from compaction_eval.loopback import LoopbackServer

    srv = LoopbackServer().start()
    try:
        yield srv
    finally:
        srv.faults.clear()
        srv.stop()


@pytest.mark.parametrize(
    ("fault", "args", "message"),
    [
        ("hang", ["--timeout", "2", "--max-retries", "0"], "the model provider did not answer within --timeout 2 s"),
        ("slow", ["--timeout", "2", "--max-retries", "0"], "the model provider did not answer within --timeout 2 s"),
        ("malformed", ["--max-retries", "0"], "the provider's answer was not valid JSON"),
    ],
)
def test_held_slow_and_malformed_answers_fail_in_bounded_time(loopback, tmp_path, fault, args, message):
    import test_real_model_path as real
    from compaction_eval.loopback import Fault

    loopback.faults.clear()
    loopback.faults.always(Fault(fault, delay=20.0))
    start = time.perf_counter()
    try:
        proc = real.recall(loopback, tmp_path, "--run", "held", *args)
    finally:
        loopback.faults.clear()  # releases held requests
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("compaction-eval: error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
    assert elapsed < 60  # was: still hanging after 150 s (the SDK was given 600 s)
    results = tmp_path / "results"
    assert not (results / "held").exists() and list(results.glob(".held*")) == []
    real.assert_no_key_anywhere(tmp_path, proc.stdout, proc.stderr)
