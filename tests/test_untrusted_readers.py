"""One untrusted-input reader (issue 24 item 4): YAML through contracts/yamlfile.py, JSON
through contracts/traces.py `strict_loads` / `parse_json_text`, for traces, JSONL and SQLite
imports, hf: rows, review files and run side files alike. Every refusal names the file and
the place; nothing hangs or fills memory. Real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.traces import parse_json_text, strict_loads
from test_hostile_input import ALIAS_BOMB, TRACE, cli, write_corpus


def test_a_review_file_with_an_alias_bomb_is_refused_at_once(tmp_path, capsys):
    review = tmp_path / "review.yaml"
    review.write_text(ALIAS_BOMB)  # 430 bytes; yaml.safe_load expanded it to 387M nodes (2 GB)
    code, _, err = cli(capsys, "review", str(tmp_path), "--apply", str(review), "--gold", str(tmp_path / "gold"))
    assert code == 2
    assert f"{review}: line 2, b[0]: YAML aliases (*name) are not allowed" in err
    assert not (tmp_path / "gold").exists()


@pytest.mark.parametrize(("text", "place", "message"), [
    ('{"id": "t1",\n  "id": "t2"}', "line 2 column 3", "duplicate key 'id'"),
    ('{"n": ' + "9" * 5000 + "}", "line 1 column 7", "an integer with more than 4300 digits"),
    ('{"x": [1, NaN]}', "line 1 column 11", "NaN is not a JSON number"),
    ('{"ok": "\\ud83d\\ude00",\n "x": "a\\ud800"}', "line 2 column 9", "a lone UTF-16 surrogate escape"),
])
def test_json_limits_are_located(text, place, message):
    with pytest.raises(ContractError) as info:
        parse_json_text(text, "f.json")
    assert str(info.value).startswith(f"f.json: {place}: {message}")
    with pytest.raises(json.JSONDecodeError):
        strict_loads(text)  # the same refusal where a reader handles malformed JSON itself


def test_a_trace_with_a_key_given_twice_is_a_located_lint_error(tmp_path, capsys):
    traces, labs = write_corpus(tmp_path)
    text = json.dumps(TRACE, indent=1).replace('"id": "t1",', '"id": "t1",\n "id": "t9",', 1)
    (traces / "t1.json").write_text(text)
    code, out, _ = cli(capsys, "lint", str(traces), str(labs))
    assert code == 1 and f"{traces / 't1.json'}: line 4 column 2: duplicate key 'id'" in out


def test_a_jsonl_import_refuses_nan_with_the_line(tmp_path, capsys):
    src = tmp_path / "rollout-2025-01-01T00-00-00-x.jsonl"
    src.write_text("\n".join([
        json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x", "cwd": "/w"}}),
        '{"timestamp": "2025-01-01T00:00:01Z", "type": "response_item", "payload": {"type": "message", "role": "user", '
        '"content": [{"type": "input_text", "text": "hi"}], "score": NaN}}',
    ]) + "\n")
    code, _, err = cli(capsys, "import", str(src), "--from", "codex-cli", "--out", str(tmp_path / "out"))
    assert code == 2 and f"{src}: line 2, column " in err and "NaN is not a JSON number" in err
    assert not list((tmp_path / "out").glob("*.json")) if (tmp_path / "out").exists() else True


def test_a_side_file_with_nan_is_a_located_error(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "decay.json").write_text('{"schema": "compaction-eval/decay@1",\n "x": NaN}')
    from compaction_eval.gate.decay import read_decay

    with pytest.raises(ContractError, match=r"decay.json: line 2 column 7: NaN is not a JSON number"):
        read_decay(run)


def test_a_swe_agent_sample_with_80k_unclosed_parameters_imports_in_linear_time(tmp_path):
    # 1 MB: the lazy `(.*?)</parameter>` regex rescanned to the end from each of the 80k opens
    # (minutes; killed at 60 s). The limit below is a hang detector, not a speed claim.
    body = "<function=bash>\n" + "<parameter=a>" * 80_000 + "\n</function>"
    sample = [{"instance_id": "x", "messages": [
        {"role": "system", "content": "tools"}, {"role": "user", "content": "fix the bug"},
        {"role": "assistant", "content": body}, {"role": "user", "content": "OBSERVATION: ok"},
        {"role": "assistant", "content": "done"}]}]
    src = tmp_path / "sample_raw.json"
    src.write_text(json.dumps(sample))
    assert src.stat().st_size > 1_000_000
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", "import", str(src), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads((tmp_path / "out" / "x.json").read_text())
    assert trace["metadata"]["inline_calls"]["kept_as_text"] == [{"index": 1, "reason": "the call holds text outside <parameter=...> elements"}]


def test_control_characters_in_names_never_reach_the_terminal(tmp_path, capsys):
    from compaction_eval.cli.main import main

    bad = tmp_path / "evil\x1b]0;pwned\x07\x1b[2J.json"
    for argv in (["lint", str(bad)], ["recall", "--traces", str(bad), "--out", str(tmp_path / "r")]):
        assert main(argv) != 0
        out, err = capsys.readouterr()
        assert "\x1b" not in out + err and "\x07" not in out + err and "evil\\x1b]0;pwned\\x07\\x1b[2J.json" in out + err


def test_an_output_that_is_a_directory_is_a_located_error(tmp_path):
    from compaction_eval.contracts.runfiles import write_text_atomic

    (tmp_path / "gate.md").mkdir()
    with pytest.raises(ContractError, match=r"gate\.md: is a directory: name a file to write"):
        write_text_atomic(tmp_path / "gate.md", "x")


def test_the_dataset_card_escapes_once():
    from compaction_eval.corpus.export import _md

    assert _md("a<b & c|d") == "a&#60;b &#38; c\\|d"


def test_an_hf_row_with_nan_or_a_key_twice_is_a_located_problem(monkeypatch):
    from compaction_eval.corpus import hf

    good = json.dumps(TRACE)
    rows = [{"id": "t1", "trace": good.replace('"messages"', '"score": NaN, "messages"', 1)},
            {"id": "t2", "trace": good.replace('"id": "t1"', '"id": "t2", "id": "t3"', 1)}]
    monkeypatch.setattr(hf, "load_rows", lambda spec: rows)
    traces, problems = hf.read_traces("hf:some/dataset")
    assert traces == [] and [p.place for p in problems] == ["row 0, trace", "row 1, trace"]
    assert "NaN is not a JSON number" in problems[0].message and "duplicate key 'id'" in problems[1].message
