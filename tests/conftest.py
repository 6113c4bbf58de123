"""Shared test paths. Real traces are read from ../shared/data, never copied in."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
MINI_SWE = SHARED_DATA / "mini-swe-agent"


@pytest.fixture(autouse=True)
def _isolated_inspect(tmp_path, monkeypatch):
    """inspect writes ./logs and ~/.cache by default: keep every test inside its tmp dir."""
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
