"""`compaction-eval review`: uncertain verdicts of a run (scored from a real gold summary)
-> editable file -> a person's judgments appended to a gold file -> refit elsewhere."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.runfiles import SCHEMA as RESULTS_SCHEMA
from compaction_eval.contracts.traces import Trace
from compaction_eval.recall.scoring import score_summary
from compaction_eval.validation.matchers import load_gold, load_gold_file
from conftest import ROOT


def _run(tmp_path: Path) -> Path:
    """A run dir whose one sample is a committed gold summary with uncertain verdicts."""
    for gf in load_gold(ROOT / "labels" / "gold"):
        for s in gf.summaries:
            score = score_summary(s.text, gf.labels, Trace(id=gf.trace, messages=[]), s.point)
            if any(f.uncertain for f in score.facts):
                run = tmp_path / "run"
                run.mkdir()
                sample = {"trace": gf.trace, "point": s.point, "prompt": "handoff", "epoch": 1, "summary": s.text,
                          **score.to_json()}
                (run / "results.json").write_text(json.dumps({
                    "schema": RESULTS_SCHEMA, "run": "r", "offline_stand_in": False,
                    "config": {"labels": [str(gf.labels.path)]}, "samples": [sample]}))
                return run
    raise AssertionError("no gold summary has an uncertain verdict")


def _cli(*argv: str) -> int:
    from compaction_eval.cli.review import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["review", *argv])
    return args.func(args)


def test_review_round_trip_appends_gold_and_refits_elsewhere(tmp_path, capsys):
    run = _run(tmp_path)
    assert _cli(str(run)) == 0
    assert "uncertain verdicts" in capsys.readouterr().out
    doc = yaml.safe_load((run / "review.yaml").read_text())
    facts = doc["summaries"][0]["facts"]
    open_ = [f for f in facts if f.get("uncertain")]
    assert open_ and all(f["judgment"] is None for f in open_)
    assert all(f["from"] == "scorer" for f in facts if not f.get("uncertain"))  # marked, not passed off as human

    gold = tmp_path / "gold" / "mine.yaml"
    with pytest.raises(ContractError, match="judgment must be kept or lost"):  # unjudged: refused, nothing written
        _cli(str(run), "--apply", str(run / "review.yaml"), "--gold", str(gold))
    assert not gold.exists()

    for f in open_:
        f["judgment"], f["reason"] = "kept", "I can act on it"
    (run / "review.yaml").write_text(yaml.safe_dump(doc))
    assert _cli(str(run), "--apply", str(run / "review.yaml"), "--gold", str(gold)) == 0
    gf = load_gold_file(gold)
    assert gf.split == "tune" and all(s.split == "tune" for s in gf.summaries)
    assert all(gf.summaries[0].facts[f["id"]][0] for f in open_)
    with pytest.raises(ContractError, match="already holds"):  # applying twice does not duplicate
        _cli(str(run), "--apply", str(run / "review.yaml"), "--gold", str(gold))

    from compaction_eval.recall.matching.calibrated import MODEL_PATH

    with pytest.raises(ContractError, match="packaged calibration"):
        _cli(str(run), "--apply", str(run / "review.yaml"), "--gold", str(tmp_path / "gold" / "other.yaml"),
             "--refit", str(MODEL_PATH))
    assert not (tmp_path / "gold" / "other.yaml").exists()


def test_a_review_of_several_traces_applies_to_a_gold_folder_one_file_per_trace(tmp_path, capsys):
    """Issue 23, item 10: `review --apply` takes a review file that spans several traces
    (a gold folder gets one file per trace), and the review shows each fact's text and keys."""
    samples, labels = [], []
    for gf in load_gold(ROOT / "labels" / "gold"):
        if gf.trace in {s["trace"] for s in samples}:
            continue
        for s in gf.summaries:  # the first summary of the trace with an uncertain verdict (what review lists)
            score = score_summary(s.text, gf.labels, Trace(id=gf.trace, messages=[]), s.point)
            if any(f.uncertain for f in score.facts):
                samples.append({"trace": gf.trace, "point": s.point, "prompt": "handoff", "epoch": 1, "summary": s.text,
                                **score.to_json()})
                labels.append(str(gf.labels.path))
                break
        if len(samples) == 2:
            break
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"schema": RESULTS_SCHEMA, "run": "r", "offline_stand_in": False,
                                                  "config": {"labels": labels}, "samples": samples}))
    assert _cli(str(run), "--write", str(run / "review.yaml")) == 0
    doc = yaml.safe_load((run / "review.yaml").read_text())
    assert len({e["trace"] for e in doc["summaries"]}) == 2
    for e in doc["summaries"]:
        for f in e["facts"]:
            assert f["text"] and isinstance(f["keys"], list)  # what the fact says, not only its id
            f["judgment"], f["reason"] = f["scorer"], "checked"
    (run / "review.yaml").write_text(yaml.safe_dump(doc))

    with pytest.raises(ContractError, match="name a folder"):  # one gold file holds one trace
        _cli(str(run), "--apply", str(run / "review.yaml"), "--gold", str(tmp_path / "one.yaml"))
    assert not (tmp_path / "one.yaml").exists()
    gold = tmp_path / "gold"
    assert _cli(str(run), "--apply", str(run / "review.yaml"), "--gold", str(gold)) == 0
    written = sorted(gold.glob("*.yaml"))
    assert len(written) == 2
    assert {load_gold_file(p).trace for p in written} == {e["trace"] for e in doc["summaries"]}


def test_a_review_of_a_run_with_tail_only_facts_applies_once_filled_in(tmp_path, capsys):
    """A fact whose sources all lie in the kept tail is not scored by the run, but a gold
    summary is judged on every expected fact: the review asks for it, so the file the review
    wrote applies once its open judgments are filled in (it failed before, naming the
    tail-only facts as expected but not judged)."""
    from compaction_eval.cli.main import main
    from conftest import real_trace

    trace = "rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6"
    labels = ROOT / "labels" / "real" / f"{trace}.yaml"
    assert main(["recall", "--traces", str(real_trace(trace)), "--labels", str(labels), "--prompts", str(ROOT / "prompts" / "terse.j2"),
                 "--out", str(tmp_path), "--run", "r", "-q"]) == 0
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    from compaction_eval.contracts.labels import load_labels

    lab = load_labels(labels)
    tail_only = {(s["point"], f.id) for s in results["samples"] for f in lab.expected(s["point"])} - {
        (s["point"], f["id"]) for s in results["samples"] for f in s["facts"]}
    assert tail_only, "the trace no longer has tail-only facts: the test would prove nothing"
    assert main(["review", str(tmp_path / "r")]) == 0
    doc = yaml.safe_load((tmp_path / "r" / "review.yaml").read_text())
    asked = {(e["point"], f["id"]) for e in doc["summaries"] for f in e["facts"] if f["scorer"] == "not scored"}
    reviewed_points = {e["point"] for e in doc["summaries"]}
    assert asked == {(p, f) for p, f in tail_only if p in reviewed_points} and asked
    for e in doc["summaries"]:
        for f in e["facts"]:
            if f.get("judgment") is None:
                f["judgment"], f["reason"] = "lost", "not in the summary text"
    (tmp_path / "filled.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    capsys.readouterr()
    assert main(["review", str(tmp_path / "r"), "--apply", str(tmp_path / "filled.yaml"), "--gold", str(tmp_path / "gold")]) == 0
    assert len(load_gold(tmp_path / "gold")[0].summaries) == len(doc["summaries"])
