"""The synthetic corpus: reproducible byte for byte, valid, lint-clean, and as rich as promised."""

from __future__ import annotations

import gzip
import json
import re
import time

import pytest

from compaction_eval.contracts.labels import CATEGORIES, lint_against_trace, load_labels
from compaction_eval.contracts.traces import (
    fold,
    load_trace,
    message_text,
    validate_trace,
)
from compaction_eval.synth import LARGE_SPECS, SPECS, generate, write
from compaction_eval.synth.__main__ import main as synth_main
from compaction_eval.synth.build import SynthError, TraceBuilder
from conftest import ROOT

TRACES = ROOT / "fixtures" / "traces"
LABELS = ROOT / "labels"
LARGE_TRACES = ROOT / "fixtures" / "traces-large"
LARGE_LABELS = ROOT / "labels" / "synth-large"
IDS = [s.trace_id for s in SPECS]
LARGE_IDS = [s.trace_id for s in LARGE_SPECS]
ALL_IDS = IDS + LARGE_IDS
BARE = {s.trace_id for s in (*SPECS, *LARGE_SPECS) if s.target_tokens is None}


def _paths(tid):
    if tid in IDS:
        return TRACES / f"{tid}.json.gz", LABELS / f"{tid}.yaml"
    return LARGE_TRACES / f"{tid}.json.gz", LARGE_LABELS / f"{tid}.yaml"
TOOLS = {"read_file", "grep", "bash", "run_tests", "list_dir", "edit_file"}
SECRET = re.compile(r"sk-live-[0-9a-f]{16,}|AKIA[0-9A-Z]{16}")


@pytest.fixture(scope="module")
def corpus():
    """(trace, labels) per committed trace id, loaded through the contract loaders."""
    return {tid: tuple(f(p) for f, p in zip((load_trace, load_labels), _paths(tid), strict=False)) for tid in ALL_IDS}


def test_corpora_sizes_and_families():
    assert len(IDS) == 11 and len(LARGE_IDS) == 42 and len(set(ALL_IDS)) == 53
    families = {"ci_broken", "refactor", "pipeline_incident", "dep_upgrade", "support_thread"}
    for specs in (SPECS, LARGE_SPECS):
        assert {s.build.__module__.rsplit(".", 1)[1] for s in specs} == families
    # Exactly the committed files: a stale or stray trace would be evaluated too.
    assert sorted(p.name for p in TRACES.iterdir()) == sorted(f"{t}.json.gz" for t in IDS)
    assert sorted(p.name for p in LARGE_TRACES.iterdir()) == sorted(f"{t}.json.gz" for t in LARGE_IDS)
    assert sorted(p.name for p in LARGE_LABELS.iterdir()) == sorted(f"{t}.yaml" for t in LARGE_IDS)


@pytest.mark.parametrize("name", ["default", "large"])
def test_regeneration_is_byte_identical_to_committed_files(tmp_path, name):
    # Through the CLI entry point, as a maintainer would regenerate.
    out_t, out_l = tmp_path / "t", tmp_path / "l"
    assert synth_main(["--corpus", name, "--out-traces", str(out_t), "--out-labels", str(out_l), "--seed", "0"]) == 0
    for tid in (IDS if name == "default" else LARGE_IDS):
        trace_path, labels_path = _paths(tid)
        new_trace = (out_t / f"{tid}.json.gz").read_bytes()
        old_trace = trace_path.read_bytes()
        # The payload first, so a failure says whether content or only compression differs.
        assert gzip.decompress(new_trace) == gzip.decompress(old_trace), f"{tid}: trace content changed"
        assert new_trace == old_trace, f"{tid}: same JSON but different gzip bytes (zlib version?)"
        assert (out_l / f"{tid}.yaml").read_bytes() == labels_path.read_bytes(), tid


def test_gzip_header_has_no_timestamp_or_name():
    for tid in ALL_IDS:
        raw = _paths(tid)[0].read_bytes()
        assert raw[:2] == b"\x1f\x8b"
        assert raw[4:8] == b"\x00\x00\x00\x00", f"{tid}: mtime is set"
        assert raw[3] & 0x08 == 0, f"{tid}: file name stored in header"


def test_generation_is_fast():
    started = time.perf_counter()
    generate(0)
    assert time.perf_counter() - started < 3.0


@pytest.mark.parametrize("tid", ALL_IDS)
def test_trace_is_valid_and_labels_lint_clean(tid, corpus):
    trace, labels = corpus[tid]
    data = json.loads(gzip.decompress(_paths(tid)[0].read_bytes()))
    assert validate_trace(data, tid) == []
    assert list(data) == ["schema", "id", "source", "system", "tools", "messages", "metadata"]
    assert trace.id == labels.trace == tid
    assert trace.source == {"kind": "synthetic", "generator": "compaction_eval.synth",
                            "seed": trace.source["seed"], "license": "MIT"}
    assert labels.labelled_by == "generator"
    assert lint_against_trace(labels, trace) == []


@pytest.mark.parametrize("tid", ALL_IDS)
def test_size_and_shape(tid, corpus):
    trace, _ = corpus[tid]
    tokens = sum(trace.token_counts)
    if tid in BARE:
        assert 12_000 <= tokens <= 45_000, tokens
    else:
        target = trace.metadata["padding"]["target_tokens"]
        assert 0.65 * target <= tokens <= 1.4 * target, (tokens, target)  # filler is sized roughly
    assert tokens <= (60_000 if tid in IDS else 200_000)
    assert 40 <= len(trace.messages) <= 160
    first = trace.messages[0]
    assert first["role"] == "user" and isinstance(first["content"], str)
    calls = 0
    for m in trace.messages[1:]:
        if m["role"] != "assistant":
            continue
        kinds = [blk["type"] for blk in m["content"]]
        assert kinds[0] == "text" and kinds.count("tool_use") <= 1
        for blk in m["content"]:
            if blk["type"] == "tool_use":
                assert blk["name"] in TOOLS
                calls += 1
    assert calls >= 20
    used = {blk["name"] for m in trace.messages if m["role"] == "assistant" for blk in m["content"] if blk["type"] == "tool_use"}
    assert {"read_file", "grep", "bash"} <= used


@pytest.mark.parametrize("tid", ALL_IDS)
def test_points_are_assistant_turns_around_55_and_85_percent(tid, corpus):
    trace, labels = corpus[tid]
    n = len(trace.messages)
    assert len(labels.points) == 2
    p1, p2 = labels.points
    for at in labels.points:
        assert trace.messages[at]["role"] == "assistant"
        assert trace.messages[at - 1]["role"] == "user"  # history ends with a tool result or the human
    if tid in BARE:  # padding moves the points on purpose
        assert 0.45 <= p1 / n <= 0.65 and 0.78 <= p2 / n <= 0.92, (p1, p2, n)


def test_large_corpus_spans_sizes_and_positions(corpus):
    tokens = sorted(sum(corpus[t][0].token_counts) for t in LARGE_IDS)
    assert tokens[0] < 20_000 and 150_000 <= tokens[-1] <= 200_000
    assert sum(t >= 100_000 for t in tokens) >= 5
    # Where the story (and its facts) sits in the trace varies: first point from early to late.
    ratios = [corpus[t][1].points[0] / len(corpus[t][0].messages) for t in LARGE_IDS]
    assert min(ratios) < 0.4 and max(ratios) > 0.6


def test_padding_rereads_files_and_never_shows_stale_content(corpus):
    rereads = 0
    for tid in LARGE_IDS:
        trace = corpus[tid][0]
        seen: dict[str, str] = {}
        edited: set[str] = set()
        calls = {}
        for m in trace.messages:
            for blk in m["content"] if isinstance(m["content"], list) else []:
                if blk["type"] == "tool_use":
                    calls[blk["id"]] = blk
                elif blk["type"] == "tool_result":
                    use = calls[blk["tool_use_id"]]
                    path = use["input"].get("path")
                    if use["name"] == "edit_file":
                        edited.add(path)
                    elif use["name"] == "read_file" and "start_line" not in use["input"]:
                        if path in seen and seen[path] == blk["content"]:
                            rereads += 1
                            assert path not in edited, (tid, path)
                        seen[path] = blk["content"]
        assert not SECRET.search("\n".join(t for t in trace.texts if "again to check" in t)), tid
    assert rereads >= 5


@pytest.mark.parametrize("tid", ALL_IDS)
def test_fact_coverage(tid, corpus):
    trace, labels = corpus[tid]
    p1, p2 = labels.points
    assert {f.category for f in labels.facts} == set(CATEGORIES)
    assert 10 <= len(labels.facts) <= 14
    assert 2 <= sum(f.critical for f in labels.facts) <= 3
    assert all(f.weight == 1.0 for f in labels.facts)
    for f in labels.facts:
        assert any(f.expected_at(at) for at in labels.points), f.id
        # Stated in words by the agent or the human, not only buried in a tool result.
        assert any(_is_prose(trace.messages[s]) for s in f.source), f.id
    # Positions vary: from the request, from the middle, and facts expected only at the second point.
    assert any(min(f.source) == 0 for f in labels.facts)
    assert any(0 < min(f.source) < p1 for f in labels.facts)
    assert any(p1 <= min(f.source) < p2 for f in labels.facts)
    # A superseded fact is expected at the first point and no longer at the second.
    superseded = [f for f in labels.facts if f.valid_until is not None]
    assert superseded and all(f.expected_at(p1) and not f.expected_at(p2) for f in superseded)


@pytest.mark.parametrize("tid", ALL_IDS)
def test_avoid_items(tid, corpus):
    trace, labels = corpus[tid]
    assert 1 <= len(labels.avoid) <= 3
    reasons = {a.reason for a in labels.avoid}
    assert {"secret", "superseded"} <= reasons
    for a in labels.avoid:
        if a.reason == "secret":
            assert all(SECRET.fullmatch(k) for k in a.keys), a.keys
            # The secret sits in a tool output and the agent never repeats it in its own words.
            holders = [i for i, m in enumerate(trace.messages) if a.keys[0] in message_text(m)]
            assert holders and all(trace.messages[i]["role"] == "user" and not _is_prose(trace.messages[i])
                                   for i in holders)


@pytest.mark.parametrize("tid", ALL_IDS)
def test_near_miss_distractors_are_planted(tid, corpus):
    trace, labels = corpus[tid]
    near = trace.metadata["near_misses"]
    assert near
    facts = {f.id: f for f in labels.facts}
    text = fold("\n".join(trace.texts))
    for nm in near:
        fact = facts[nm["fact"]]
        assert fold(nm["text"]) in text
        assert fact.category in {"artifact", "number", "bug"}
        # The distractor is close to the fact but is not it: keys do not match inside it.
        assert not all(fold(k) in fold(nm["text"]) for k in fact.keys)


def test_other_seeds_give_different_but_valid_corpora(tmp_path):
    written = write(tmp_path / "t", tmp_path / "l", seed=7)
    assert len(written) == 11
    for trace_path, labels_path, _st in written:
        trace, labels = load_trace(trace_path), load_labels(labels_path)
        assert lint_against_trace(labels, trace) == []
        assert trace.source["seed"] != load_trace(TRACES / trace_path.name).source["seed"]
        assert trace_path.read_bytes() != (TRACES / trace_path.name).read_bytes()


def test_builder_rejects_a_key_its_sources_do_not_state():
    b = TraceBuilder("t", family="test", variant=0, seed=0)
    b.request("Fix the build; do not touch tests/.")
    step = b.call("Looking at the log.", "bash", {"command": "cat log"}, "AssertionError: 347 != 374")
    b.point()
    b.say("It is a count mismatch.")
    b.user("ok")
    b.point()
    b.say("done")
    b.fact("count", "number", "347 expected", ["347"], [step.result])
    b.fact("wrong", "bug", "an error never printed", ["KeyError"], [step.result])
    with pytest.raises(SynthError, match="KeyError"):
        b.build()


def _is_prose(message: dict) -> bool:
    """A user's own words or an assistant's text, as opposed to a tool result."""
    content = message["content"]
    if isinstance(content, str):
        return True
    return message["role"] == "assistant" and any(b["type"] == "text" for b in content)
