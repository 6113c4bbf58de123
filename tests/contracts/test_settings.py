"""CompactionSettings: one value per config, checked once, and what runs are compared on."""

from __future__ import annotations

import dataclasses

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.settings import (
    COMPARED,
    HORIZON_COMPACTION,
    CompactionSettings,
    recorded_settings,
)


@pytest.mark.parametrize(("kwargs", "flag"), [
    ({"budget": 0}, "--budget"), ({"budget": "800"}, "--budget"), ({"budget": True}, "--budget"),
    ({"keep_last": -1}, "--keep-last"), ({"shape": "chat"}, "--shape"), ({"focus": 3}, "--focus"),
])
def test_a_bad_value_is_refused_naming_its_flag(kwargs, flag):
    with pytest.raises(ContractError) as exc:
        CompactionSettings(**kwargs)
    assert str(exc.value).startswith(f"{flag}: ")


def test_the_fields_are_what_runs_are_compared_on():
    names = [f.name for f in dataclasses.fields(CompactionSettings)]
    assert COMPARED == ("model", *names, "judge_model")
    assert HORIZON_COMPACTION.budget == 600 and HORIZON_COMPACTION.keep_last == CompactionSettings().keep_last


def test_recorded_settings_read_new_files_then_old_ones():
    settings = CompactionSettings(budget=500, keep_last=2, shape="messages", focus="the flaky test")
    new = {"model": "extractive/default", "config": {"model": "extractive/default", "judge_model": None, **settings.to_json(),
                                                      "compaction": settings.to_json()}}
    old = {"model": "extractive/default", "config": {"model": "extractive/default", "judge_model": None, **settings.to_json()}}
    assert recorded_settings(new) == recorded_settings(old) == {"model": "extractive/default", **settings.to_json(), "judge_model": None}
    # the oldest files carry the model only at the top level; a setting never recorded is None
    assert recorded_settings({"model": "m", "config": {}}) == {"model": "m", **dict.fromkeys(settings.to_json()), "judge_model": None}
    assert CompactionSettings.from_json(new["config"]["compaction"]) == settings
    assert CompactionSettings.from_json({"budget": 300}) == CompactionSettings(budget=300)


def test_suites_that_render_the_span_inline_refuse_the_messages_shape():
    from compaction_eval.horizon.runner import HorizonConfig
    from compaction_eval.replay.decay import DecaySettings

    with pytest.raises(ContractError, match="--shape: 'messages': the long-horizon suite renders the span inline"):
        HorizonConfig(compaction=CompactionSettings(shape="messages"))
    with pytest.raises(ContractError, match="decay renders the span inline"):
        DecaySettings(compaction=CompactionSettings(shape="messages"))
