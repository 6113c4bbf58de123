"""A recall run streams its samples (issue 25), and its results are the same as before.

`tests/data/recall/default-run-results.json.gz` is the results.json of the default run
(`compaction-eval recall` in the repository root) written by the code before the run
streamed (it held every sample, then aggregated the list), with what differs between two
runs of the same code replaced by placeholders: the run name, its time, the commit, the
inspect log's name and the repository's path. Rewrite it only when results are meant to
change, from a run of the unchanged code: `python tests/recall/test_streaming.py --record`.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import ROOT  # noqa: E402

BEFORE = ROOT / "tests" / "data" / "recall" / "default-run-results.json.gz"
VARYING = ("run", "created", "git_commit", "inspect_log", "inspect_log_kept")


def normalised(text: str) -> str:
    """`text` (a results.json) with what two runs of the same code differ in replaced."""
    text = text.replace(str(ROOT), "<ROOT>")
    for key in VARYING:  # top-level keys: one space of indent
        text, n = re.subn(rf'^ "{key}": .*?(,?)$', rf' "{key}": "<{key}>"\1', text, count=1, flags=re.M)
        assert n == 1, key
    return text


def default_run(out: Path) -> Path:
    """The default run, as a user runs it in the repository root; its results.json."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
    env.update(INSPECT_CACHE_DIR=str(out / "cache"), INSPECT_LOG_DIR=str(out / "logs"), PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "compaction_eval", "recall", "-q", "--out", str(out), "--run", "now"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    return out / "now" / "results.json"


def before() -> str:
    with gzip.open(BEFORE, "rt", encoding="utf-8") as fh:
        return fh.read()


def test_the_default_run_writes_the_same_results_json_as_before(tmp_path):
    """Byte for byte, apart from the run's name, time, commit, log name and the repository's
    place: every verdict, every evidence string, every statistic and the order of it all."""
    now = normalised(default_run(tmp_path).read_text(encoding="utf-8"))
    expected = before()
    if now != expected:  # the first differing line says what changed
        for i, (a, b) in enumerate(zip(expected.splitlines(), now.splitlines(), strict=False)):
            assert a == b, f"results.json line {i + 1} differs"
    assert now == expected


def test_figures_gathered_one_sample_at_a_time_are_the_figures_of_the_whole_list():
    """The running figures (compact arrays, counts) of the recorded run's samples give its
    recorded leaderboard rows and fact stability, whatever order the samples come in."""
    from compaction_eval.recall.aggregate import RunTotals
    from compaction_eval.recall.stability import FactTally

    doc = json.loads(before())
    for order in (doc["samples"], doc["samples"][::-1]):
        totals, tally = RunTotals(), FactTally()
        for s in order:
            totals.add(s)
            tally.add(s)
        descriptions = {p["prompt"]: p["description"] for p in doc["prompts"]}
        rows = totals.rows(descriptions)
        assert [r["prompt"] for r in rows] == [p["prompt"] for p in doc["prompts"]]
        for row, recorded in zip(rows, doc["prompts"], strict=True):
            assert row == {k: v for k, v in recorded.items() if k != "fields"}
        assert tally.summary() == doc["fact_stability"]


def test_a_spooled_list_writes_the_file_a_list_would(tmp_path):
    """results.json with its samples spooled to disk is the same bytes as with them in a list
    (and an empty spool is an empty list), so readers see no difference."""
    from compaction_eval.contracts.runfiles import SpooledList, write_json_atomic

    doc = json.loads(before())
    for samples in (doc["samples"], doc["samples"][:1], []):
        write_json_atomic(tmp_path / "list.json", dict(doc, samples=samples))
        with SpooledList(tmp_path) as spool:
            for s in samples:
                spool.append(s)
            write_json_atomic(tmp_path / "spool.json", dict(doc, samples=spool))
        assert (tmp_path / "spool.json").read_bytes() == (tmp_path / "list.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["list.json", "spool.json"]  # no temp file left


def test_a_value_that_cannot_be_written_leaves_no_file(tmp_path):
    from compaction_eval.contracts.runfiles import SpooledList, write_json_atomic

    with SpooledList(tmp_path) as spool:
        with pytest.raises(ValueError):
            spool.append({"recall": float("nan")})
        spool.append({"recall": 1.0})
        with pytest.raises(ValueError):
            write_json_atomic(tmp_path / "r.json", {"samples": spool, "mean": float("nan")})
    assert list(tmp_path.iterdir()) == []


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        text = normalised(default_run(Path(tmp)).read_text(encoding="utf-8"))
    with gzip.open(BEFORE, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(text)
    print(f"recorded {BEFORE}")


def test_long_texts_token_counts_are_cached_by_size_and_stay_right():
    """A run counts one long prompt per sample: the cache of long texts keeps at most its size
    in characters (the oldest out first), and a count is the same cached or not."""
    from compaction_eval.contracts.tokens import SHORT_TEXT, _count, _SizedCache, count_tokens

    cache = _SizedCache(limit=10 * SHORT_TEXT)
    texts = [f"prompt {i}: " + "the build fails in ci/build.sh " * (SHORT_TEXT // 20) for i in range(30)]
    for text in texts:
        assert cache.count(text) == _count(text) == count_tokens(text)
    assert cache.chars <= cache.limit and 0 < len(cache.counts) < len(texts)
    assert list(cache.counts)[-1] == texts[-1] and texts[0] not in cache.counts  # least recent out first
    assert cache.count(texts[-1]) == _count(texts[-1])  # a hit
