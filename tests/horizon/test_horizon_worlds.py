"""Worlds: deterministic, 12 in 3 families, each needing more than one window, checkable."""

from __future__ import annotations

from collections import Counter

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.tokens import count_tokens
from compaction_eval.horizon.worlds import get_world, world_ids
from compaction_eval.horizon.worlds.registry import SIZES

IDS = world_ids()


def test_at_least_twelve_worlds_in_three_families():
    families = Counter(get_world(w).family for w in IDS)
    assert len(IDS) >= 12 and len(families) >= 3 and min(families.values()) >= 4


def test_generation_is_deterministic():
    get_world.cache_clear()
    first = get_world("build-02")
    get_world.cache_clear()
    again = get_world("build-02")
    assert first.files == again.files and first.expected == again.expected and first.tests_output == again.tests_output


@pytest.mark.parametrize("size", ["small", "medium"])
@pytest.mark.parametrize("wid", IDS)
def test_reference_plan_needs_more_than_one_window(wid, size):
    w = get_world(wid, size)
    assert w.context_window == SIZES[size]["window"]
    transcript = count_tokens(w.system) + count_tokens(w.request) + sum(count_tokens(w.call(s.function, s.args)) for s in w.plan)
    assert transcript > 1.3 * w.context_window, f"{wid}@{size}: {transcript} tokens fit in {w.context_window}"
    # ...yet one step always fits next to the head, the tools and the reply reserve, or no
    # policy could finish it.
    from compaction_eval.contracts.chat_tokens import tools_tokens
    from compaction_eval.horizon.tools import world_tools

    fixed = count_tokens(w.system) + count_tokens(w.request) + tools_tokens(world_tools(w)) + 512
    assert max(count_tokens(w.call(s.function, s.args)) for s in w.plan) + fixed < w.context_window


@pytest.mark.parametrize("wid", IDS)
def test_expected_answer_follows_from_the_plan_outputs(wid):
    w = get_world(wid)
    outputs = "\n".join(w.call(s.function, s.args) for s in w.plan)
    found = w.extract(w.request + "\n" + outputs, True)
    assert {k: found[k] for k in w.expected} == w.expected
    # Every fact is needed: without the step that yields it, the field is unknown or wrong.
    for i, step in enumerate(w.plan):
        if step.yields:
            partial = "\n".join(w.call(s.function, s.args) for j, s in enumerate(w.plan) if j != i)
            lost = w.extract(w.request + "\n" + partial, True)
            assert any(lost[k] != w.expected.get(k, lost[k]) or lost[k] is None for k in [*step.yields, *w.expected]), (wid, i)


def test_facts_are_planted_early_mid_and_late():
    for wid in IDS:
        places = " ".join(get_world(wid).planted.values())
        assert all(p in places for p in ("early", "mid", "late")), wid


def test_checker_requires_format_fields_and_constraints():
    w = get_world("query-01")
    good = w.answer_format
    for k, v in w.expected.items():
        good = good.replace(f"<{k}>", v)
    calls = [("query", {"sql": "SHOW TABLES", "db": "replica"})]
    assert w.check(good, calls)["completed"]
    assert not w.check(good, [("query", {"sql": "SHOW TABLES", "db": "primary"})])["completed"]
    assert not w.check(good.replace(w.expected["first"], "1"), calls)["completed"]
    loose = "; ".join(f"{k}: {v}" for k, v in w.expected.items())
    verdict = w.check(loose, calls)
    assert not verdict["format_ok"] and not verdict["completed"]


def test_tools_behave_like_a_workspace():
    w = get_world("audit-01")
    assert "error: no such file" in w.call("read_file", {"path": "nope.py"})
    assert w.call("list_dir", {"path": "src"}).splitlines()[0].endswith("/")
    out = w.call("grep", {"pattern": "fetch", "path": "src/vendor"})
    assert out.splitlines()[-1].startswith("grep: ") and "matches in src/vendor/" in out
    assert "error: missing argument" in w.call("grep", {})



def test_an_unknown_world_is_one_located_line_and_nothing_is_written(tmp_path, capsys):
    from compaction_eval.cli.main import main

    assert main(["horizon", "--worlds", "dep-upgrade", "-q", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"compaction-eval: error: --worlds: unknown world 'dep-upgrade': known are {', '.join(world_ids())}"
    assert not any(tmp_path.iterdir())


def test_an_unknown_size_is_a_located_problem():
    with pytest.raises(ContractError, match="unknown world size 'huge'"):
        get_world("build-01", "huge")
