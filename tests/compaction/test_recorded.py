"""Recorded answers as a model: the key, a missing answer, export -> import -> replay (judge
included), import's refusals. Through the CLI, in process, on a real synthetic trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ContentText

from compaction_eval.cli.main import main
from compaction_eval.compaction import recorded
from compaction_eval.compaction.recorded import canonical_request, request_key
from conftest import ROOT

INPUTS = [
    "--traces", str(ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"),
    "--labels", str(ROOT / "labels" / "synth-ci-broken-001.yaml"),
    "--prompts", str(ROOT / "prompts" / "handoff.j2"), str(ROOT / "prompts" / "terse.j2"),
]
VOLATILE = ("run", "created", "git_commit", "inspect_log", "inspect_log_kept")


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield
    recorded.reset()


def test_the_key_names_the_request_not_the_model_nor_how_it_is_packed():
    one = [ChatMessageSystem(content="be brief"), ChatMessageUser(content="a"), ChatMessageUser(content="b")]
    packed = [ChatMessageSystem(content="be brief"), ChatMessageUser(content=[ContentText(text="a\nb")])]
    assert request_key(canonical_request(one)) == request_key(canonical_request(packed))
    other = [ChatMessageSystem(content="be brief"), ChatMessageUser(content="a"), ChatMessageAssistant(content="b")]
    assert request_key(canonical_request(one)) != request_key(canonical_request(other))
    assert canonical_request(one) == {"system": "be brief", "messages": [{"role": "user", "content": "a\nb"}],
                                      "tools": [], "tool_choice": None}


def _answers(export: Path, judge_kept: bool) -> Path:
    """Answer every exported request: a summary for a compaction request, a verdict list for
    the judge's (every fact kept, quoting the summary, or none)."""
    out = export.parent / f"answers-{export.name}.jsonl"
    with out.open("w") as fh:
        for line in (export / "requests.jsonl").read_text().splitlines():
            entry = json.loads(line)
            request = entry["request"]
            if request["system"] and "which facts of an agent's conversation survived" in request["system"]:
                user = request["messages"][0]["content"]
                summary = user.split("<summary>\n", 1)[1].split("\n</summary>", 1)[0]
                facts = [json.loads(f) for f in user.split("<facts>\n", 1)[1].split("\n</facts>")[0].splitlines()]
                text = json.dumps([{"id": f["id"], "kept": judge_kept, "quote": summary.split("\n")[0] if judge_kept else "",
                                    "reason": "test"} for f in facts])
            else:
                text = "The nightly CI run #4812 failed on main. Do not modify anything under tests/."
            fh.write(json.dumps({"key": entry["key"], "text": text}) + "\n")
    return out


def _results(run: Path) -> dict:
    data = json.loads((run / "results.json").read_text())
    return {k: v for k, v in data.items() if k not in VOLATILE}


def test_export_import_replay_round_trip_with_the_judge_and_replays_agree(tmp_path, capsys):
    rec = tmp_path / "rec.jsonl"
    run = ["recall", *INPUTS, "--model", f"recorded/{rec}", "--judge-model", f"recorded/{rec}", "--out", "results", "-q"]
    rec.write_text("")
    # nothing recorded: exit 2, one line with the count and the command that exports them, nothing written
    assert main([*run, "--run", "a"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "4 request(s) have no recorded answer (and " in err[0]
    assert f"compaction-eval requests export exported-requests -- recall {INPUTS[0]}" in err[0]
    assert not any((tmp_path / "results").iterdir())  # --out may exist; nothing in it

    # stage 1: the compaction requests (the judge's wait for the summaries)
    assert main(["requests", "export", "-q", "ex1", "--", *run]) == 0
    assert "4 more request(s) depend on those answers" in capsys.readouterr().out
    assert len((tmp_path / "ex1" / "requests.jsonl").read_text().splitlines()) == 4
    assert len(list((tmp_path / "ex1" / "requests").glob("*.md"))) == 4
    assert main(["requests", "import", "--requests", "ex1", "--answers", str(_answers(tmp_path / "ex1", True)),
                 "--into", str(rec), "--model", "test-model", "--written-by", "a test, playing the model"]) == 0
    # stage 2: the judge's requests, about the summaries now recorded (the same summary at a
    # point is one request whichever prompt wrote it)
    assert main(["requests", "export", "ex2", "-q", "--", *run]) == 0
    judge = [json.loads(line) for line in (tmp_path / "ex2" / "requests.jsonl").read_text().splitlines()]
    assert len(judge) == 2 and all("survived in a compacted summary" in j["request"]["system"] for j in judge)
    md = (tmp_path / "ex2" / "requests" / f"{judge[0]['key']}.md").read_text()
    assert "## system" in md and "## message 1: user" in md and judge[0]["key"] in md
    assert main(["requests", "import", "--requests", "ex2", "--answers", str(_answers(tmp_path / "ex2", True)),
                 "--into", str(rec), "--model", "test-model", "--written-by", "a test, playing the model"]) == 0
    capsys.readouterr()

    assert main([*run, "--run", "r1"]) == 0
    out = capsys.readouterr().out
    assert "recorded answers written by a test, playing the model (models: test-model), not API output" in out
    assert main([*run, "--run", "r2"]) == 0
    first, second = _results(tmp_path / "results" / "r1"), _results(tmp_path / "results" / "r2")
    assert first == second
    assert first["offline_stand_in"] is False and first["model"] == f"recorded/{rec}"
    assert first["recorded_answers"]["written_by"] == ["a test, playing the model"]
    assert first["recorded_answers"]["answers"] == 4 + 2
    assert {s["summary"] for s in first["samples"]} == {"The nightly CI run #4812 failed on main. Do not modify anything under tests/."}


def test_import_refuses_bad_answers_with_located_errors_and_writes_nothing(tmp_path, capsys):
    rec = tmp_path / "rec.jsonl"
    rec.write_text("")
    run = ["recall", *INPUTS, "--model", f"recorded/{rec}", "--out", "results", "-q"]
    assert main(["requests", "export", "-q", "ex", "--", *run]) == 0
    keys = [json.loads(line)["key"] for line in (tmp_path / "ex" / "requests.jsonl").read_text().splitlines()]
    who = ["--model", "m", "--written-by", "w"]
    cases = {
        "unknown.jsonl": (json.dumps({"key": keys[0], "text": "ok"}) + "\n" + json.dumps({"key": "a" * 64, "text": "x"}) + "\n",
                          "unknown.jsonl: line 2: unknown key aaaaaaaaaaaa"),
        "dup.jsonl": (json.dumps({"key": keys[0], "text": "ok"}) + "\n" + json.dumps({"key": keys[0], "text": "again"}) + "\n",
                      "dup.jsonl: line 2: duplicate answer to request"),
        "bad.jsonl": (json.dumps({"key": keys[0], "text": "ok"}) + "\n{not json\n", "bad.jsonl: line 2: not JSON"),
        "notext.jsonl": (json.dumps({"key": keys[0]}) + "\n", "notext.jsonl: line 1: `text` must be a string"),
    }
    for name, (body, located) in cases.items():
        (tmp_path / name).write_text(body)
        assert main(["requests", "import", "--requests", "ex", "--answers", name, "--into", str(rec), *who]) == 2, name
        assert located in capsys.readouterr().err, name
        assert rec.read_text() == ""  # nothing half-imported
    # an edited export is not the one that was exported
    lines = (tmp_path / "ex" / "requests.jsonl").read_text().splitlines()
    entry = json.loads(lines[1])
    entry["request"]["messages"][0]["content"] += " (edited)"
    (tmp_path / "edited.jsonl").write_text("\n".join([lines[0], json.dumps(entry)]) + "\n")
    (tmp_path / "ok.jsonl").write_text(json.dumps({"key": keys[0], "text": "ok"}) + "\n")
    assert main(["requests", "import", "--requests", "edited.jsonl", "--answers", "ok.jsonl", "--into", str(rec), *who]) == 2
    assert "edited.jsonl: line 2: the key does not match the request" in capsys.readouterr().err
    # a malformed recording fails the run before anything runs, located
    (tmp_path / "broken.jsonl").write_text(json.dumps({"key": "zz", "text": "x"}) + "\n")
    assert main(["recall", *INPUTS, "--model", "recorded/broken.jsonl", "--out", "results", "-q"]) == 2
    assert "broken.jsonl: line 1: `key` must be 64 lowercase hex digits" in capsys.readouterr().err
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_validate_matchers_judges_the_gold_summaries_from_a_recording(tmp_path, capsys):
    """The judge's requests for the gold summaries: exported, answered, imported, replayed."""
    rec = tmp_path / "judge.jsonl"
    rec.write_text("")
    run = ["validate-matchers", "--gold", str(ROOT / "labels" / "gold"), "--judge-model", f"recorded/{rec}", "--out", "vm.json"]
    assert main([*run]) == 2
    assert "request(s) have no recorded answer" in capsys.readouterr().err and not (tmp_path / "vm.json").exists()
    assert main(["requests", "export", "-q", "ex", "--", *run]) == 0
    capsys.readouterr()
    assert main(["requests", "import", "--requests", "ex", "--answers", str(_answers(tmp_path / "ex", False)),
                 "--into", str(rec), "--model", "test-model", "--written-by", "a test that keeps nothing"]) == 0
    assert main([*run]) == 0
    assert "recorded answers written by a test that keeps nothing" in capsys.readouterr().out
    result = json.loads((tmp_path / "vm.json").read_text())
    assert result["recorded_answers"]["written_by"] == ["a test that keeps nothing"]


def test_decay_chains_are_answered_round_by_round_and_say_who_wrote_them(tmp_path, capsys):
    """Each compaction of a decay chain summarises the previous summary: its request exists
    only once that answer is recorded, so export and import go round by round."""
    rec = tmp_path / "decay.jsonl"
    rec.write_text("")
    run = ["decay", "--traces", INPUTS[1], "--labels", INPUTS[3], "--prompts", INPUTS[5], "--model", f"recorded/{rec}",
           "--out", "results", "--run", "d", "-q"]
    rounds = 0
    while True:
        assert main(["requests", "export", "-q", f"ex{rounds}", "--", *run]) == 0
        if not (tmp_path / f"ex{rounds}" / "requests.jsonl").read_text():
            break
        assert main(["requests", "import", "--requests", f"ex{rounds}", "--answers", str(_answers(tmp_path / f"ex{rounds}", False)),
                     "--into", str(rec), "--model", "test-model", "--written-by", "a test"]) == 0
        rounds += 1
        assert rounds < 20
    assert rounds > 1  # a chain: the second compaction waited for the first
    capsys.readouterr()
    assert main(run) == 0
    decay = json.loads((tmp_path / "results" / "d" / "decay.json").read_text())
    assert decay["offline_stand_in"] is False and decay["recorded_answers"]["written_by"] == ["a test"]
    assert "recorded answers written by a test" in capsys.readouterr().out
