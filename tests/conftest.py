"""Shared test paths. Real traces are read from ../shared/data, never copied in."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
MINI_SWE = SHARED_DATA / "mini-swe-agent"

# Libraries read these once, at import: set them before any test imports inspect or
# matplotlib, so nothing is written under ~/.cache, ~/.local/share or ~/.config.
_STATE = Path(tempfile.mkdtemp(prefix="compaction-eval-tests-"))
for _var, _sub in (("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"), ("XDG_CONFIG_HOME", "config"), ("MPLCONFIGDIR", "matplotlib")):
    os.environ[_var] = str(_STATE / _sub)


@pytest.fixture(autouse=True)
def _isolated_inspect(tmp_path, monkeypatch):
    """inspect writes ./logs and ~/.cache by default: keep every test inside its tmp dir."""
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
