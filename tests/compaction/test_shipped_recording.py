"""The shipped recording (fixtures/recorded): the first LLM leaderboard replays offline and
complete, every gold summary's judge request has its recorded answer, every record says who
wrote it, and `--points` selects labelled points only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

from compaction_eval.compaction.recorded import canonical_request, load_recording, read_manifest, request_key
from compaction_eval.contracts.problems import ContractError
from compaction_eval.corpus.load import load_corpus
from compaction_eval.recall.matching.judge import SYSTEM, build_prompt
from compaction_eval.validation.matchers import load_gold

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "fixtures" / "recorded"


def test_every_record_says_who_wrote_it_and_that_it_is_not_api_output():
    for path in sorted(RECORDED.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            record = json.loads(line)
            assert record["model"] and record["written_at"].startswith("2026-"), (path.name, n)
            assert "helper" in record["written_by"] and "NOT API output" in record["written_by"], (path.name, n)


def test_the_manifests_name_labelled_points_of_the_default_corpus():
    main = read_manifest(RECORDED)
    corpus = load_corpus([ROOT / t for t in main.traces], [str(ROOT / main.labels[0].split("#")[0]) + "#2"], points=main.points)
    # one point for every real trace of the default corpus (labels/real#2)
    assert sorted(corpus.labels) == sorted(load_corpus([ROOT / "fixtures/real"], [str(ROOT / "labels/real") + "#2"]).labels)
    assert all(len(lab.points) == 1 for lab in corpus.labels.values())
    wild = read_manifest(RECORDED / "wild")
    assert len(wild.points) >= 6 and "prompts/wild" in wild.prompts


def test_points_select_labelled_points_and_refuse_others():
    traces, labels = [ROOT / "fixtures/real"], [ROOT / "labels/real/django__django-11087.yaml"]
    corpus = load_corpus(traces, labels, points=["django__django-11087@45"])
    assert corpus.samples() == [("django__django-11087", 45)]
    with pytest.raises(ContractError) as exc:
        load_corpus(traces, labels, points=["django__django-11087@46", "nope@3", "bad"])
    text = str(exc.value)
    assert text.startswith("--points: bad") or "--points" in text


def test_every_gold_summary_has_its_recorded_judge_answer():
    """validate-matchers --judge-model recorded/fixtures/recorded judges every blind round
    offline: the exact request it sends for each gold summary has an answer."""
    from compaction_eval.validation.headline import blind_parts
    from compaction_eval.validation.rounds import load_rounds

    answers = load_recording(RECORDED).answers
    gold = load_gold(ROOT / "labels" / "gold")
    parts = [keep for _, keep in blind_parts(gold, load_rounds(ROOT / "labels" / "gold"))]
    missing, judged = [], 0
    for gf in gold:
        for s in gf.summaries:
            if not any(keep(s.split, gf.trace) for keep in parts):
                continue
            judged += 1
            facts = [f for f in gf.labels.expected(s.point) if f.id in s.facts]
            key = request_key(canonical_request([ChatMessageSystem(content=SYSTEM), ChatMessageUser(content=build_prompt(s.text, facts))]))
            if key not in answers:
                missing.append(f"{gf.trace}/{s.id}")
    assert missing == [] and judged >= 400


@pytest.mark.parametrize("manifest", ["", "wild"])
def test_the_llm_leaderboard_replays_offline_with_a_table_and_a_report(tmp_path, manifest):
    args = ["run", "--recorded", *([str(RECORDED / manifest)] if manifest else []), "--out", str(tmp_path), "--run", "llm", "-q"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "INSPECT_DISPLAY": "none"}
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "not API output" in proc.stdout and "judge tier" in proc.stdout
    results = json.loads((tmp_path / "llm" / "results.json").read_text())
    assert results["offline_stand_in"] is False and results["model"].startswith("recorded/")
    assert results["tier"] == "judge" and (tmp_path / "llm" / "report.html").is_file()
    prompts = {p["prompt"] for p in results["prompts"]}
    assert {"handoff", "recall_max", "inspect_default", "terse"} <= prompts
    if manifest:
        assert {"wild_codex", "wild_gemini_cli", "wild_openhands", "wild_goose", "wild_cline"} <= prompts
