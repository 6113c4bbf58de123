"""Progress that does not look like failure (issue 23 item 12): `run` shows its real total from
the first line to the last, inspect's hook banner stays out of stderr, a default corpus run does
not warn about the real traces it leaves unlabelled on purpose, and replay says how many traces
it used."""

from __future__ import annotations

import json
import re
import shutil

from compaction_eval.cli import recall as recall_cli
from compaction_eval.cli.main import main
from compaction_eval.cli.progress import RunProgress
from conftest import ROOT

TRACES = ROOT / "fixtures" / "traces"
TRACE = TRACES / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"
PROMPT = ROOT / "prompts" / "terse.j2"
LINE = re.compile(r"progress(?: \[[^\]]+\])?: (\d+)/(\d+) samples \((\d+)%\)")


def progress_lines(err: str) -> list[tuple[int, int, int]]:
    return [tuple(map(int, m.groups())) for m in LINE.finditer(err)]  # type: ignore[misc]


def test_a_suite_told_its_size_twice_counts_once():
    import io

    bar = RunProgress(stream=io.StringIO())
    bar.expect(72, task="long_horizon")
    bar.expect(72, task="long_horizon")  # the command, then the suite itself
    bar.task_started("long_horizon_eviction", 12)  # inspect's announcement
    assert bar.total == 72
    bar.done = 71
    assert "(98%)" in bar.line()  # never 100% before the end


def test_run_shows_its_real_total_from_start_to_end(tmp_path, capsys):
    code = main(["run", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(PROMPT),
                 "--worlds", "build-01", "--configs", "eviction", "full", "--out", str(tmp_path), "--run", "r"])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = progress_lines(err)
    totals = {total for _, total, _ in lines}
    # 2 recall samples (2 points x 1 prompt) + 2 horizon samples + the small replay
    assert totals == {5}, lines
    assert lines[-1][:2] == (5, 5) and lines[-1][2] == 100
    assert all(pct < 100 for done, total, pct in lines if done < total)
    assert "inspect_ai v" not in err and "hooks enabled" not in err
    replay = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert replay["traces"] == ["synth-ci-broken-001"]


def test_no_unlabelled_note_for_the_default_corpus(tmp_path, capsys, monkeypatch):
    # a small stand-in for the default corpus: two traces, one labelled (as labels/real#2
    # leaves most real traces unlabelled)
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("synth-ci-broken-001", "synth-ci-broken-002"):
        shutil.copy(TRACES / f"{name}.json.gz", traces)
    monkeypatch.setattr(recall_cli, "DEFAULT_TRACES", [str(traces)])
    monkeypatch.setattr(recall_cli, "DEFAULT_LABELS", [str(LABELS)])
    common = ["recall", "--prompts", str(PROMPT), "--out", str(tmp_path / "out"), "--quiet"]
    assert main([*common, "--run", "default"]) == 0
    assert "have no labels" not in capsys.readouterr().err
    # a corpus the user chose: the note says what was not evaluated
    assert main([*common, "--run", "mine", "--traces", str(traces), "--labels", str(LABELS)]) == 0
    assert "note: 1 trace(s) have no labels and were not evaluated" in capsys.readouterr().err


def test_replay_says_the_traces_it_used(tmp_path, capsys):
    code = main(["replay", "--traces", str(TRACES), "--labels", str(ROOT / "labels"), "--max-traces", "1",
                 "--policies", "baseline", "--windows", "12000", "--out", str(tmp_path), "--run", "r", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out)["traces"] == ["synth-ci-broken-001"]
    assert len(json.loads((tmp_path / "r" / "replay.json").read_text())["traces"]) == 1
