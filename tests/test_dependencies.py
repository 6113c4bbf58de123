"""Dependencies a user's agent project can live with: inspect-ai as a tested range (not an
exact pin), `datasets` only in the `[hf]` extra."""

from __future__ import annotations

import tomllib
from importlib.metadata import version

from packaging.requirements import Requirement

from conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements(items: list[str]) -> dict[str, Requirement]:
    return {Requirement(r).name: Requirement(r) for r in items}


def test_inspect_is_a_range_that_holds_the_tested_version():
    inspect = _requirements(PROJECT["dependencies"])["inspect-ai"]
    assert not any(s.operator == "==" for s in inspect.specifier), "an exact pin conflicts with an agent project's own"
    assert inspect.specifier.contains(version("inspect-ai"))  # the version the tests run against
    assert not inspect.specifier.contains("0.4.0")  # the next series is not promised


def test_datasets_is_the_hf_extra_only():
    assert "datasets" not in _requirements(PROJECT["dependencies"])
    assert "datasets" in _requirements(PROJECT["optional-dependencies"]["hf"])
