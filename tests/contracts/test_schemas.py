"""The JSON Schemas of trace@1, labels@1 and results@1: generated from one definition
(contracts/schemas.py), shipped as the same text, and in agreement with the located validators
on every shipped file and on broken ones."""

from __future__ import annotations

import copy
import json
import tomllib

import jsonschema
import pytest
from pydantic import ValidationError

from compaction_eval.cli.main import main
from compaction_eval.cli.prompts import DOCS
from compaction_eval.contracts.labels import _check as check_labels
from compaction_eval.contracts.runfiles import validate_results
from compaction_eval.contracts.schemas import MODELS, json_schema, schema_file_name, schema_text
from compaction_eval.contracts.traces import read_json_file, validate_trace
from compaction_eval.contracts.yamlfile import read_yaml_file
from conftest import ROOT

TRACES = sorted([*ROOT.glob("fixtures/traces*/*.json.gz"), *ROOT.glob("fixtures/real/*/*.json.gz")])
LABELS = sorted(p for p in ROOT.glob("labels/**/*.yaml") if "gold" not in p.parts)  # gold@1 is another format
RESULTS = sorted(ROOT.glob("results/baselines/*/results.json"))


def validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schemas_are_the_generated_ones(capsys):
    for kind in MODELS:
        assert (DOCS / "schemas" / schema_file_name(kind)).read_text() == schema_text(kind), f"regenerate docs/schemas/{kind}"
        assert main(["schema", kind]) == 0
        assert json.loads(capsys.readouterr().out)["title"] == f"compaction-eval/{kind}@1"
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["compaction_eval"]
    assert "docs/schemas/*.json" in data


def test_every_shipped_trace_validates_against_the_schema_and_the_validator():
    assert len(TRACES) > 50
    check = validator("trace")
    for path in TRACES:
        data = read_json_file(path)
        assert not validate_trace(data, str(path))
        assert not list(check.iter_errors(data)), path
        MODELS["trace"].model_validate(data)


def test_every_shipped_labels_file_validates_against_the_schema_and_the_validator():
    assert len(LABELS) > 30
    check = validator("labels")
    for path in LABELS:
        data = read_yaml_file(path)
        assert not check_labels(data, str(path), {}), path
        assert not list(check.iter_errors(data)), path
        MODELS["labels"].model_validate(data)


def test_the_committed_baselines_validate_as_results():
    assert RESULTS
    check = validator("results")
    for path in RESULTS:
        data = json.loads(path.read_text())
        assert not validate_results(data, str(path))
        assert not list(check.iter_errors(data)), path
        MODELS["results"].model_validate(data)


def _mutate(data: dict, path: list, value) -> dict:
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


TRACE_BREAKS = [
    (["schema"], "compaction-eval/trace@2"), (["id"], ""), (["id"], KeyError), (["system"], 3), (["tools"], [{"x": 1}]),
    (["messages"], []), (["messages", 0, "role"], "system"), (["messages", 0, "content"], 7),
    (["messages", 1, "content", 0, "type"], "image"), (["source"], []), (["metadata"], "x"),
]
LABELS_BREAKS = [
    (["schema"], "x"), (["trace"], ""), (["labelled_by"], "robot"), (["points"], []), (["points", 0, "at"], 0),
    (["points", 0, "at"], True), (["facts"], []), (["facts", 0, "id"], "Bad Id"), (["facts", 0, "category"], "mood"),
    (["facts", 0, "text"], "  "), (["facts", 0, "source"], []), (["facts", 0, "source"], [-1]), (["facts", 0, "keys"], [" "]),
    (["facts", 0, "weight"], 0), (["facts", 0, "weight"], True), (["facts", 0, "critical"], "yes"), (["facts", 0, "valid_until"], -2),
    (["facts", 0, "alt_keys"], [[]]),
]
RESULTS_BREAKS = [
    (["samples"], KeyError), (["samples", 0, "recall"], 1.5), (["samples", 0, "point"], -1), (["samples", 0, "trace"], ""),
    (["samples", 0, "epoch"], 0), (["samples", 0, "facts", 0, "kept"], "yes"), (["samples", 0, "facts"], KeyError),
    (["prompts", 0, "recall_ci"], [0.1]), (["prompts", 0, "prompt"], ""), (["model"], 3),
]


@pytest.mark.parametrize("kind, breaks", [("trace", TRACE_BREAKS), ("labels", LABELS_BREAKS), ("results", RESULTS_BREAKS)])
def test_schema_validator_and_models_refuse_the_same_broken_files(kind, breaks):
    if kind == "trace":
        base = read_json_file(ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz")
        located = lambda d: validate_trace(d, "t")  # noqa: E731
    elif kind == "labels":
        base = read_yaml_file(ROOT / "labels" / "synth-ci-broken-001.yaml")
        located = lambda d: check_labels(d, "l", {})  # noqa: E731
    else:
        base = json.loads(RESULTS[0].read_text())
        located = lambda d: validate_results(d, "r")  # noqa: E731
    check = validator(kind)
    assert not located(base) and not list(check.iter_errors(base))
    for path, value in breaks:
        broken = _mutate(base, path, value)
        assert located(broken), (path, value)
        assert list(check.iter_errors(broken)), (path, value)
        with pytest.raises(ValidationError):
            MODELS[kind].model_validate(broken)
