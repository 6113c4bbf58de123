"""Blind rounds: the out-of-sample figure of a frozen matcher, kept after its test part joins
the tune part (labels/gold/blind-rounds.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.validation.rounds import FILE_NAME, load_rounds, main, record_round, with_gold_check

GOLD = Path(__file__).resolve().parents[2] / "labels" / "gold"


def _result(n: int = 10) -> dict:
    from compaction_eval.validation.headline import part_table

    rows = [(f"t{i % 2}", "intent", "terse", "synthetic", i % 2 == 0, i % 3 == 0, True) for i in range(n)]
    return {"headline": {"test": part_table(rows, 50)}}


def test_the_shipped_record_matches_the_gold_set():
    rounds = load_rounds(GOLD)
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5, 6]
    last = rounds[-1]
    assert last["split"] == "round6" and last["test"]["n"] == last["n"] >= 1000
    assert last["test"]["second_n"] >= 0.3 * last["n"]  # a second reader on at least 30% of the round
    by_split: dict[str, int] = {}
    from compaction_eval.validation.matchers import load_gold

    for g in load_gold(GOLD):
        for s in g.summaries:
            by_split[s.split] = by_split.get(s.split, 0) + len(s.facts)
    checked = with_gold_check(rounds, by_split)
    assert [r["stale"] for r in checked] == [None, False, False, False, False, False]


def test_record_adds_and_replaces_a_round_and_the_check_names_a_stale_one(tmp_path):
    assert load_rounds(tmp_path) == []  # no file: no rounds
    record_round(_result(10), tmp_path, round_no=2, split="round2", frozen_at="abc")
    record_round(_result(12), tmp_path, round_no=1, split="round1", frozen_at="old")
    record_round(_result(11), tmp_path, round_no=2, split="round2", frozen_at="abd")
    rounds = load_rounds(tmp_path)
    assert [(r["round"], r["n"], r["frozen_at"]) for r in rounds] == [(1, 12, "old"), (2, 11, "abd")]
    checked = with_gold_check(rounds, {"round1": 12, "round2": 10})
    assert [(r["stale"], r["gold_n"]) for r in checked] == [(False, 12), (True, 10)]


@pytest.mark.parametrize(
    "content, place",
    [("{not json", "line 1 column 2"), ('{"schema": "x", "rounds": []}', "schema"),
     ('{"schema": "compaction-eval/blind-rounds@1", "rounds": [{"round": 1}]}', "rounds[0].split"),
     ('{"schema": "compaction-eval/blind-rounds@1", "rounds": [{"round": 1, "split": "r", "frozen_at": "a", "n": 3,'
      ' "traces": 1, "kappa": 0.5, "kappa_ci": null, "keys_kappa": 0.4, "test": {"n": 4}}]}', "rounds[0].test")],
)
def test_a_malformed_record_is_one_located_error(tmp_path, content, place):
    (tmp_path / FILE_NAME).write_text(content, encoding="utf-8")
    with pytest.raises(ContractError) as info:
        load_rounds(tmp_path)
    [problem] = info.value.problems
    assert problem.file.endswith(FILE_NAME) and problem.place == place


def test_cli_records_from_a_result_and_refuses_one_without_a_test_part(tmp_path, capsys):
    result = tmp_path / "matchers.json"
    result.write_text(json.dumps(_result(7)), encoding="utf-8")
    assert main([str(result), "--round", "3", "--split", "round3", "--frozen-at", "c0ffee", "--gold", str(tmp_path)]) == 0
    assert load_rounds(tmp_path)[0]["test"]["n"] == 7
    result.write_text(json.dumps({"headline": {"test": None}}), encoding="utf-8")
    before = (tmp_path / FILE_NAME).read_bytes()
    assert main([str(result), "--round", "4", "--split", "round4", "--frozen-at", "x", "--gold", str(tmp_path)]) == 2
    assert "headline.test" in capsys.readouterr().err and (tmp_path / FILE_NAME).read_bytes() == before
