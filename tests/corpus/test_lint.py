"""`lint` rejects each bad input with file and place, and accepts real traces."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
import yaml

from compaction_eval.cli.main import main
from compaction_eval.contracts.problems import ContractError
from compaction_eval.corpus.importers import convert
from compaction_eval.corpus.load import load_corpus
from conftest import MINI_SWE, needs_shared

TRACE = {
    "schema": "compaction-eval/trace@1",
    "id": "t1",
    "source": {"kind": "test"},
    "system": "You are a coding agent.",
    "tools": [{"name": "bash", "description": "run", "input_schema": {}}],
    "messages": [
        {"role": "user", "content": "Fix the failing test in src/app/billing.py; do not touch tests/."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running the tests first."},
                {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "pytest -q"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "FAILED tests/test_billing.py::test_total - ZeroDivisionError: division by zero\n1 failed, 347 passed"}
            ],
        },
        {"role": "assistant", "content": "The total divides by the item count; I will guard it because empty carts are legal."},
        {"role": "user", "content": "ok"},
    ],
    "metadata": {},
}

LABELS = {
    "schema": "compaction-eval/labels@1",
    "trace": "t1",
    "labelled_by": "human",
    "points": [{"at": 4}],
    "facts": [
        {"id": "bug", "category": "bug", "text": "test_total fails with ZeroDivisionError: division by zero", "keys": ["ZeroDivisionError: division by zero"], "source": [2]},
        {"id": "passed", "category": "number", "text": "347 tests pass", "keys": ["347 passed"], "source": [2], "critical": True},
        {"id": "no-tests", "category": "constraint", "text": "Do not modify tests/", "keys": ["tests/"], "source": [0]},
    ],
    "avoid": [{"id": "noise", "reason": "noise", "text": "the test command", "keys": ["pytest -q"], "source": [1]}],
}


def write(tmp: Path, trace=TRACE, labels=LABELS) -> tuple[Path, Path]:
    (tmp / "traces").mkdir(exist_ok=True)
    (tmp / "labels").mkdir(exist_ok=True)
    tpath = tmp / "traces" / "t1.json"
    tpath.write_text(json.dumps(trace, indent=1))
    lpath = tmp / "labels" / "t1.yaml"
    lpath.write_text(labels if isinstance(labels, str) else yaml.safe_dump(labels, sort_keys=False))
    return tpath, lpath


def run_lint(tmp: Path, capsys) -> tuple[int, str]:
    code = main(["lint", str(tmp / "traces"), str(tmp / "labels"), "--traces"])
    return code, capsys.readouterr().out


def test_valid_corpus_passes(tmp_path, capsys):
    write(tmp_path)
    code, out = run_lint(tmp_path, capsys)
    assert code == 0, out
    corpus = load_corpus([tmp_path / "traces"], [tmp_path / "labels"])
    ds = corpus.to_dataset()
    assert ds.num_rows == 1 and ds[0]["id"] == "t1@4" and ds[0]["expected_facts"] == 3


def mutated(fn):
    data = copy.deepcopy(TRACE)
    fn(data)
    return data


def labels_mutated(fn):
    data = copy.deepcopy(LABELS)
    fn(data)
    return data


TRACE_CASES = {
    "unknown schema": (mutated(lambda d: d.update(schema="other@2")), "schema", "unknown schema"),
    "bad role": (mutated(lambda d: d["messages"][3].update(role="tool")), "messages[3].role", "role 'tool'"),
    "unknown block": (mutated(lambda d: d["messages"][1]["content"].append({"type": "image"})), "messages[1].content[2].type", "unknown block type"),
    "tool_use without result": (
        mutated(lambda d: d["messages"][2].update(content="plain text")),
        "messages[1].content[1]",
        "has no tool_result",
    ),
    "result without tool_use": (
        mutated(lambda d: d["messages"][4].update(content=[{"type": "tool_result", "tool_use_id": "call_9", "content": "x"}])),
        "messages[4].content[0].tool_use_id",
        "answers no tool_use",
    ),
    "content not string or list": (mutated(lambda d: d["messages"][0].update(content=42)), "messages[0].content", "string or a list"),
}


@pytest.mark.parametrize("case", sorted(TRACE_CASES))
def test_bad_trace_is_reported_with_place(tmp_path, capsys, case):
    data, place, words = TRACE_CASES[case]
    tpath, _ = write(tmp_path, trace=data)
    code, out = run_lint(tmp_path, capsys)
    assert code == 1
    assert f"{tpath}: {place}: " in out and words in out, out


def test_malformed_json_names_line(tmp_path, capsys):
    tpath, _ = write(tmp_path)
    tpath.write_text('{"schema": "compaction-eval/trace@1",\n "id": }')
    code, out = run_lint(tmp_path, capsys)
    assert code == 1
    assert f"{tpath}: line 2 column" in out and "malformed JSON" in out


LABEL_CASES = {
    "duplicate id": (labels_mutated(lambda d: d["facts"][1].update(id="bug")), "facts[1].id", "duplicate id 'bug'"),
    "unknown category": (labels_mutated(lambda d: d["facts"][0].update(category="trivia")), "facts[0].category", "unknown category 'trivia'"),
    "source out of range": (labels_mutated(lambda d: d["facts"][0].update(source=[2, 99])), "facts[0].source[1]", "out of range"),
    "source not below point": (labels_mutated(lambda d: d["facts"][0].update(source=[4])), "facts[0].source", "never expected"),
    "key not in history": (labels_mutated(lambda d: d["facts"][1].update(keys=["348 passed"])), "facts[1].keys[0]", "'348 passed' does not occur in messages[0:4]"),
    "unknown schema": (labels_mutated(lambda d: d.update(schema="labels@0")), "schema", "unknown schema"),
    "trace missing": (labels_mutated(lambda d: d.update(trace="no-such-trace")), "trace", "does not exist"),
    "bad avoid reason": (labels_mutated(lambda d: d["avoid"][0].update(reason="boring")), "avoid[0].reason", "unknown reason"),
}


@pytest.mark.parametrize("case", sorted(LABEL_CASES))
def test_bad_labels_are_reported_with_yaml_line(tmp_path, capsys, case):
    data, path, words = LABEL_CASES[case]
    _, lpath = write(tmp_path, labels=data)
    code, out = run_lint(tmp_path, capsys)
    assert code == 1
    line = next(ln for ln in out.splitlines() if words in ln)
    assert line.startswith(f"{lpath}: line "), line
    assert f", {path}: " in line, line


def test_key_matching_folds_case_and_whitespace(tmp_path, capsys):
    write(tmp_path, labels=labels_mutated(lambda d: d["facts"][0].update(keys=["zerodivisionerror:   DIVISION\n by zero"])))
    code, out = run_lint(tmp_path, capsys)
    assert code == 0, out


def test_malformed_yaml_names_line(tmp_path, capsys):
    _, lpath = write(tmp_path, labels="schema: compaction-eval/labels@1\nfacts:\n  - id: a\n   category: [\n")
    code, out = run_lint(tmp_path, capsys)
    assert code == 1
    assert f"{lpath}: line " in out and "malformed YAML" in out


def test_every_problem_is_reported_not_just_the_first(tmp_path, capsys):
    def break_many(d):
        d["facts"][0]["category"] = "trivia"
        d["facts"][1]["id"] = "bug"
        d["facts"][2]["source"] = [77]

    write(tmp_path, labels=labels_mutated(break_many))
    code, out = run_lint(tmp_path, capsys)
    assert code == 1
    assert "unknown category" in out and "duplicate id" in out


def test_missing_path_is_an_error(tmp_path, capsys):
    code = main(["lint", str(tmp_path / "nope")])
    out = capsys.readouterr().out
    assert code == 1 and "no such file or directory" in out and "nope" in out


def test_gzip_trace_loads(tmp_path):
    write(tmp_path)
    tpath = tmp_path / "traces" / "t1.json"
    gz = tpath.with_suffix(".json.gz")
    gz.write_bytes(gzip.compress(tpath.read_bytes()))
    tpath.unlink()
    corpus = load_corpus([tmp_path / "traces"], [tmp_path / "labels"])
    assert corpus.traces["t1"].path == gz


@needs_shared
def test_real_mini_swe_agent_traces_lint_clean(tmp_path, capsys):
    """Real trajectories converted to trace@1 pass lint, as files and read in place."""
    sources = sorted(MINI_SWE.glob("*.traj.json"))[:6]
    assert sources, "expected the shared mini-swe-agent data"
    out_dir = tmp_path / "traces"
    out_dir.mkdir()
    for src in sources:
        data = convert(src)
        (out_dir / f"{data['id']}.json").write_text(json.dumps(data))
    code = main(["lint", str(out_dir), "--traces"])
    assert code == 0, capsys.readouterr().out
    # and the lint reads foreign formats in place too (converted in memory)
    code = main(["lint", *map(str, sources), "--traces"])
    assert code == 0, capsys.readouterr().out


def test_load_corpus_raises_one_line_error(tmp_path):
    write(tmp_path, labels=labels_mutated(lambda d: d["facts"][0].update(category="trivia")))
    with pytest.raises(ContractError) as info:
        load_corpus([tmp_path / "traces"], [tmp_path / "labels"])
    assert "\n" not in str(info.value) and "t1.yaml" in str(info.value)


def test_lint_without_paths_checks_every_default_file(tmp_path, monkeypatch, capsys):
    """`lint` alone lints the defaults; `labels/real#2` (a run's sample of two traces per
    source) means the whole folder to lint, not a file named `real#2`."""
    monkeypatch.chdir(tmp_path)  # outside a project: the package's copy of the defaults
    assert main(["lint"]) == 0
    err = capsys.readouterr().err
    real = len(list((Path(__file__).parents[2] / "labels" / "real").glob("*.yaml")))
    labels = int(err.rsplit("trace file(s), ", 1)[1].split()[0])
    assert labels >= real > 50, err


def test_a_document_of_ours_in_a_scanned_folder_is_skipped_with_a_note_but_named_it_is_an_error(tmp_path, capsys):
    """labels/gold/blind-rounds.json sits in a folder lint scans: not a trace, said so; named
    explicitly, the same file is a located error (nothing silently skipped)."""
    folder = tmp_path / "labels" / "gold"
    folder.mkdir(parents=True)
    doc = folder / "blind-rounds.json"
    doc.write_text(json.dumps({"schema": "compaction-eval/blind-rounds@1", "rounds": []}), encoding="utf-8")
    assert main(["lint", str(tmp_path / "labels"), "--traces"]) == 0
    assert f"skipped {doc}: JSON that is not a trace" in capsys.readouterr().err
    assert main(["lint", str(doc), "--traces"]) == 1
    assert f"{doc}: schema: unknown schema" in capsys.readouterr().out
