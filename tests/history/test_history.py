"""The run history: 30 nightly runs of the offline stand-in with a planted corpus change and a
planted slide in one category; trends, breaks, the drift alarm, and the report's chart in a
real browser."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from compaction_eval.contracts.settings import CompactionSettings
from compaction_eval.history.store import add_run, open_store
from compaction_eval.history.trends import check, series
from compaction_eval.recall.aggregate import summarise_prompts
from compaction_eval.recall.run import RecallConfig, run_recall
from compaction_eval.report.render import render_report
from test_report import Chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = [str(ROOT / "prompts" / f"{p}.j2") for p in ("handoff", "terse")]
CORPUS_A = ["synth-ci-broken-001", "synth-refactor-001"]
CORPUS_B = [*CORPUS_A, "synth-dep-upgrade-001"]
NIGHTS, CHANGE, SLIDE = 30, 10, 20  # corpus B from night 10; constraint recall slides from night 20
SLIPPING = ("handoff", "constraint")
START = datetime(2026, 11, 1, 2, 0, tzinfo=timezone.utc)


def when(night: int) -> str:
    return (START + timedelta(days=night)).isoformat(timespec="seconds")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def _base_run(root: Path, name: str, traces: list[str]) -> dict:
    run_recall(
        RecallConfig(traces=[str(ROOT / "fixtures" / "traces" / f"{t}.json.gz") for t in traces],
                     labels=[str(ROOT / "labels" / f"{t}.yaml") for t in traces], prompts=PROMPTS,
                     compaction=CompactionSettings()),
        root / name,
    )
    return json.loads((root / name / "results.json").read_text())


def _recount(sample: dict) -> None:
    """A sample's recall and per-category recall from its fact verdicts (weights kept)."""
    def share(facts: list[dict]) -> float:
        total = sum(f["weight"] for f in facts)
        return round(sum(f["weight"] for f in facts if f["kept"]) / total, 4)  # as the scorer writes it
    sample["recall"] = share(sample["facts"])
    sample["recall_by_category"] = {c: share([f for f in sample["facts"] if f["category"] == c])
                                    for c in sample["recall_by_category"]}


def _night(base: dict, night: int, slide: bool) -> dict:
    doc = copy.deepcopy(base)
    doc["run"], doc["created"], doc["git_commit"] = f"night-{night:02d}", when(night), f"{night:07x}"
    if slide and night >= SLIDE:
        prompt, category = SLIPPING
        for s in doc["samples"]:
            if s["prompt"] == prompt:
                for f in s["facts"]:
                    if f["category"] == category:
                        f["kept"] = False
                _recount(s)
        described = {p["prompt"]: p for p in base["prompts"]}
        doc["prompts"] = [{**described[p["prompt"]], **p, "description": described[p["prompt"]]["description"]}
                          for p in summarise_prompts(doc["samples"])]
    return doc


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Two real offline runs (corpus A, corpus B), then 30 nights built from them: with the slide
    (`slide/`) and without (`flat/`)."""
    root = tmp_path_factory.mktemp("history")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INSPECT_CACHE_DIR", str(root / "inspect-cache"))
        mp.setenv("INSPECT_LOG_DIR", str(root / "inspect-logs"))
        mp.setenv("INSPECT_DISPLAY", "none")
        a = _base_run(root / "base", "a", CORPUS_A)
        b = _base_run(root / "base", "b", CORPUS_B)
    for s in b["samples"]:  # the recount reproduces what the scorer wrote, so planted nights are honest
        before = (s["recall"], dict(s["recall_by_category"]))
        _recount(s)
        assert s["recall"] == pytest.approx(before[0], abs=1e-4) and s["recall_by_category"] == pytest.approx(before[1], abs=1e-4)
    for kind in ("slide", "flat"):
        for n in range(NIGHTS):
            d = root / kind / f"night-{n:02d}"
            d.mkdir(parents=True)
            doc = _night(a if n < CHANGE else b, n, slide=kind == "slide")
            (d / "results.json").write_text(json.dumps(doc))
    return root


@pytest.fixture(scope="module")
def dbs(nights):
    out = {}
    for kind in ("slide", "flat"):
        db = nights / f"{kind}.db"
        proc = cli("history", "add", *[str(nights / kind / f"night-{n:02d}") for n in range(NIGHTS)], "--db", str(db), cwd=nights)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"{NIGHTS} run(s) added")
        out[kind] = db
    return out


def test_the_corpus_change_breaks_the_trend_and_nothing_else_does(dbs):
    with open_store(dbs["slide"]) as conn:
        s = series(conn, "handoff")
    assert len(s.nights) == NIGHTS
    broken = [i for i, n in enumerate(s.nights) if n.breaks]
    assert broken == [CHANGE] and s.nights[CHANGE].breaks == ("corpus",)
    assert {n.segment for n in s.nights[:CHANGE]} == {0} and {n.segment for n in s.nights[CHANGE:]} == {1}


def test_show_prints_a_trend_table_with_a_sparkline_and_the_break(dbs, nights):
    proc = cli("history", "show", "--db", str(dbs["slide"]), "--prompt", "handoff", "--category", "constraint", cwd=nights)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("handoff / constraint"))
    spark = row.split()[-1]
    assert len(spark) == NIGHTS + 1 and spark[CHANGE] == "│"  # one mark per night, the break between
    assert spark[SLIDE + 1] < spark[SLIDE]  # the slide is visible: a lower block from night 20
    assert f"break before {when(CHANGE)}: corpus changed" in proc.stdout
    doc = json.loads(cli("history", "show", "--db", str(dbs["slide"]), "--format", "json", cwd=nights).stdout)
    assert {r["prompt"] for r in doc["series"]} == {"handoff", "terse"}


def test_check_names_the_prompt_the_category_and_the_first_night_of_the_slide(dbs, nights):
    proc = cli("history", "check", "--db", str(dbs["slide"]), cwd=nights)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DRIFT handoff recall on constraint" in proc.stdout
    assert f"slipping since {when(SLIDE)} (run night-{SLIDE:02d}" in proc.stdout
    assert "terse" not in proc.stdout
    doc = json.loads(cli("history", "check", "--db", str(dbs["slide"]), "--format", "json", cwd=nights).stdout)
    slips = {(s["prompt"], s["category"]): s for s in doc["slips"]}
    assert slips[SLIPPING]["first_night"] == when(SLIDE) and doc["verdict"] == "drift"


def test_check_passes_without_the_slide(dbs, nights):
    proc = cli("history", "check", "--db", str(dbs["flat"]), cwd=nights)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no drift" in proc.stdout


def test_check_ignores_a_slide_across_a_break(nights, tmp_path):
    """Nights 0-9 of corpus A then 10-12 of corpus B: the drop at the change is a new corpus,
    not drift, and three comparable nights are too few to judge."""
    db = tmp_path / "h.db"
    with open_store(db, create=True) as conn:
        for n in range(13):
            add_run(conn, nights / "flat" / f"night-{n:02d}")
        assert check(conn) == []


def test_adding_a_run_twice_changes_nothing(dbs, nights, tmp_path):
    db = tmp_path / "copy.db"
    shutil.copy(dbs["flat"], db)
    before = db.read_bytes()
    proc = cli("history", "add", str(nights / "flat" / "night-05"), "--db", str(db), cwd=nights)
    assert proc.returncode == 0 and proc.stdout.startswith("0 run(s) added, 1 already there")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == NIGHTS
    assert db.read_bytes() == before


@pytest.mark.parametrize("damage", ["truncated", "foreign", "text"])
def test_a_damaged_or_foreign_database_is_refused_in_one_line_and_left_alone(dbs, nights, tmp_path, damage):
    db = tmp_path / "bad.db"
    if damage == "truncated":
        db.write_bytes(dbs["flat"].read_bytes()[:6000])
    elif damage == "foreign":
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE notes (x TEXT)")
    else:
        db.write_text("not a database\n")
    before = db.read_bytes()
    for args in (["add", str(nights / "flat" / "night-00")], ["show"], ["check"]):
        proc = cli("history", *args, "--db", str(db), cwd=nights)
        assert proc.returncode == 2, (damage, args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(db) in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert db.read_bytes() == before


def test_a_bad_run_adds_nothing(dbs, nights, tmp_path):
    db = tmp_path / "h.db"
    bad = tmp_path / "bad-run"
    bad.mkdir()
    (bad / "results.json").write_text("{\"schema\": \"compaction-eval/results@1\", \"samples\": [")
    proc = cli("history", "add", str(nights / "flat" / "night-00"), str(bad), "--db", str(db), cwd=nights)
    assert proc.returncode == 2 and "results.json" in proc.stderr
    assert not db.exists()


def test_history_flag_indexes_the_run_a_command_wrote(tmp_path):
    proc = cli("recall", "--traces", str(ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"),
               "--labels", str(ROOT / "labels" / "synth-ci-broken-001.yaml"), "--prompts", PROMPTS[1],
               "--out", str(tmp_path / "results"), "--history", str(tmp_path / "h.db"), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with open_store(tmp_path / "h.db") as conn:
        (row,) = conn.execute("SELECT name, answers, verdicts, model FROM runs").fetchall()
    run = next(d.name for d in (tmp_path / "results").iterdir() if (d / "results.json").is_file())
    assert tuple(row) == (run, "stand-in", "matcher", "extractive/default")


def test_the_report_draws_the_trend_with_its_break_in_a_real_browser(dbs, nights, tmp_path):
    binary = find_chromium()
    if binary is None:
        pytest.fail("headless Chromium not found: install Debian's `chromium` (.ci/run does), or set CHROMIUM")
    out = render_report(nights / "slide" / f"night-{NIGHTS - 1:02d}", history=dbs["slide"], out=tmp_path / "report.html")
    browser = Chromium(binary)
    try:
        page = browser.open(out.as_uri())
        assert page.js("document.querySelector('#trends svg') !== null")
        assert page.js("document.querySelector('#trends svg').getBoundingClientRect().width") > 300
        assert page.js("document.querySelectorAll('#trends .trend-break').length") == 1
        assert "corpus changed" in page.js("document.querySelector('#trends svg').textContent")
        slips = page.js("[...document.querySelectorAll('#trends .trend-slip')].map(e => e.textContent)")
        assert any("constraint" in s and when(SLIDE) in s for s in slips)
        assert page.js("document.querySelectorAll('#trends-table tbody tr').length") == 2
    finally:
        browser.close()
