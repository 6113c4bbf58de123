"""The recall suite end to end, through the real command line and through `inspect eval`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL, ROOT

SMALL = [
    "--traces", str(ROOT / "fixtures" / "traces"),
    "--labels", str(ROOT / "labels" / "synth-ci-broken-001.yaml"), str(ROOT / "labels" / "synth-pipeline-incident-001.yaml"),
    "--prompts", str(ROOT / "prompts" / "handoff.j2"), str(ROOT / "prompts" / "terse.j2"),
    "--display", "none",
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # A fresh HOME and no inspect/XDG settings: the command must choose its own places.
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_"))}
    env.update(HOME=str(home), PYTHONWARNINGS="ignore", INSPECT_DISPLAY="none")
    return subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    proc = cli("run", *SMALL, "--out", str(work / "results"), "--run", "r1", cwd=work)
    return work, proc


def test_run_prints_the_table_and_paths(small_run):
    work, proc = small_run
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "OFFLINE STAND-IN" in out
    assert "recall (95% CI)" in out and "handoff" in out and "terse" in out
    assert f"results: {work / 'results' / 'r1' / 'results.json'}" in out
    # inspect's state stays in the working directory: nothing in ./logs or under HOME
    assert not (work / "logs").exists()
    assert [p for p in (work / "home").rglob("*")] == []


def test_results_follow_the_contract(small_run):
    work, _ = small_run
    results = json.loads((work / "results" / "r1" / "results.json").read_text())
    assert results["schema"] == "compaction-eval/results@1" and results["suite"] == "fact_recall"
    assert results["model"] == "extractive/default" and results["offline_stand_in"] is True
    assert len(results["samples"]) == 2 * 2 * 2  # traces x points x prompts
    # the compaction settings as one object, and as the flat keys every results@1 reader knows
    config = results["config"]
    assert config["compaction"] == {"budget": 800, "keep_last": 4, "shape": "inline", "focus": None}
    assert {k: config[k] for k in config["compaction"]} == config["compaction"]
    for s in results["samples"]:
        assert {"trace", "point", "prompt", "recall", "precision", "facts", "avoid"} <= set(s)
        assert 0 <= s["recall"] <= 1 and 0 <= s["context_recall"] <= 1
        # the context holds the summary: an exact fact the summary keeps, the context keeps
        in_context = {f["id"]: f["kept"] for f in s["context"]["facts"]}
        assert all(in_context[f["id"]] for f in s["facts"] if f["kept"] and f["matcher"] == "literal")
        # facts only in the verbatim tail are the context's job, not the summary's
        assert not set(s["tail_only_facts"]) & {f["id"] for f in s["facts"]}
        assert s["summary_tokens"] <= s["budget"]
        for f in s["facts"]:
            assert {"id", "category", "kept", "matcher", "evidence"} <= set(f)
            assert f["evidence"] is None or not f["kept"] or f["evidence"]
    by_name = {p["prompt"]: p for p in results["prompts"]}
    for p in by_name.values():
        lo, hi = p["recall_ci"]
        assert lo <= p["recall"] <= hi
    # recall-first ordering, and a terse summary keeps less than a hand-off note
    assert results["prompts"][0]["recall"] >= results["prompts"][-1]["recall"]
    assert by_name["handoff"]["recall"] > by_name["terse"]["recall"]
    assert (work / "results" / "r1" / results["inspect_log"]).is_file()



def test_the_runs_inspect_log_shows_recall_per_prompt_and_what_each_sample_lost(small_run):
    """What `inspect view` shows of a run (offline runs skip inspect's live views): the
    recall of each prompt, and each sample's explanation listing the facts it lost (in its
    store: the Score itself holds numbers and a headline, what inspect keeps of every sample
    until the run ends)."""
    from inspect_ai.log import read_eval_log

    work, _ = small_run
    results = json.loads((work / "results" / "r1" / "results.json").read_text())
    log = read_eval_log(str(work / "results" / "r1" / results["inspect_log"]))
    assert log.status == "success" and len(log.samples) == len(results["samples"])
    recall = next(s for s in log.results.scores if s.name == "recall")
    per_prompt = {m.name: m.value for m in recall.metrics.values() if m.group == "grouped"}
    assert per_prompt == pytest.approx({p["prompt"]: p["recall"] for p in results["prompts"]}, abs=1e-4)
    lost = 0
    for sample in log.samples:
        record = next(r for r in results["samples"] if (r["trace"], r["point"], r["prompt"]) ==
                      (sample.metadata["trace"], sample.metadata["point"], sample.metadata["prompt"]))
        score = sample.scores["fact_recall"]
        explanation = sample.store["explanation"]
        assert explanation.splitlines()[0] == score.explanation  # the headline: kept k of n
        assert score.answer is None and sample.output.completion == record["summary"]  # the summary is the output
        for fact in record["facts"]:
            assert (f"`{fact['id']}`" in explanation) is (not fact["kept"]), (fact["id"], explanation)
            lost += not fact["kept"]
    assert lost  # the terse prompt loses facts: the check above had something to find


def test_a_failed_run_keeps_its_inspect_log(tmp_path, monkeypatch):
    """A sample that fails fails the run: no run directory, and inspect's log (status error,
    the finished samples in it) stays where the error message says."""
    from inspect_ai.log import read_eval_log

    import compaction_eval.standins.extractive as extractive
    from compaction_eval.recall.run import RecallConfig, RunFailed, run_recall

    real = extractive.summarise

    def summarise(conversation, instruction, budget, options):
        if "handing this task over" in instruction:  # the handoff prompt's samples
            raise RuntimeError("summariser broke on purpose")
        return real(conversation, instruction, budget, options)

    monkeypatch.setattr(extractive, "summarise", summarise)
    config = RecallConfig(traces=[str(ROOT / "fixtures" / "traces")], labels=[str(ROOT / "labels" / "synth-ci-broken-001.yaml")],
                          prompts=[str(ROOT / "prompts" / "handoff.j2"), str(ROOT / "prompts" / "terse.j2")], sample_retries=0)
    with pytest.raises(RunFailed, match="summariser broke on purpose") as failed:
        run_recall(config, tmp_path / "results" / "bad")
    assert not (tmp_path / "results" / "bad").exists()
    [kept] = (tmp_path / "results" / "logs" / "bad").rglob("*.eval")
    assert str(kept) in str(failed.value)
    log = read_eval_log(str(kept))
    assert log.status == "error" and log.samples


def test_bad_labels_leave_no_run_directory(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = (ROOT / "labels" / "synth-ci-broken-001.yaml").read_text().replace("category: bug", "category: bugz", 1)
    bad.write_text(text)
    proc = cli("recall", *SMALL[:2], "--labels", str(bad), "--out", str(tmp_path / "results"), "--run", "x", cwd=tmp_path)
    assert proc.returncode == 2
    first = proc.stderr.strip().splitlines()[-1]
    assert "error:" in first and "bad.yaml: line " in first and "unknown category 'bugz'" in first
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_missing_trace_dir_is_one_clear_line(tmp_path):
    proc = cli("recall", "--traces", str(tmp_path / "nope"), "--out", str(tmp_path / "results"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("nope: no such file or directory")
    assert not (tmp_path / "results").exists()


def test_failed_model_leaves_no_run_directory(tmp_path):
    proc = cli("recall", *SMALL, "--model", "extractive/no-such-variant", "--out", str(tmp_path / "results"), "--run", "x", cwd=tmp_path)
    assert proc.returncode == 1
    assert "unknown extractive variant" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_inspect_eval_runs_the_task_file(tmp_path):
    """`inspect eval evals/fact_recall.py --model extractive/default` with the provider
    found through the entry point; inspect exits 0 even on failure, so read the status."""
    logs = tmp_path / "logs"
    env = {**os.environ, "INSPECT_LOG_DIR": str(logs)}
    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "evals/fact_recall.py", "--model", "extractive/default",
         "-T", f"labels={ROOT / 'labels' / 'synth-refactor-001.yaml'}", "-T", f"prompts={ROOT / 'prompts' / 'recall_max.j2'}",
         "--log-dir", str(logs), "--display", "none"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    from inspect_ai.log import list_eval_logs, read_eval_log

    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info)
    assert log.status == "success"
    assert len(log.samples) == 2
    assert all(0 <= s.scores["fact_recall"].value["recall"] <= 1 for s in log.samples)


def test_real_traces_are_read_in_place(tmp_path):
    """The real corpus: labels/real against fixtures/real (source subfolders)."""
    label = ROOT / "labels" / "real" / "django__django-11087.yaml"
    proc = cli("recall", "--traces", str(REAL), "--labels", str(label), "--prompts", str(ROOT / "prompts" / "handoff.j2"),
               "--display", "none", "--out", str(tmp_path / "results"), "--run", "real", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "89 trace(s) have no labels and were not evaluated" in proc.stderr  # said, not silent
    results = json.loads((tmp_path / "results" / "real" / "results.json").read_text())
    assert results["corpus"]["real_traces"] == 1 and results["corpus"]["synthetic_traces"] == 0
    assert {s["trace"] for s in results["samples"]} == {"django__django-11087"}
