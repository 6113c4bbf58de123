"""Shared test paths. Real traces are read from fixtures/real (shipped as trace@1); only the
importer tests of raw formats read ../shared/data, and skip when it is absent.

COMPACTION_EVAL_NO_SHARED=1 makes the tests treat ../shared/data as absent (a clone without
it): tests/test_no_shared.py runs the tests that touch real data that way."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_SHARED = os.environ.get("COMPACTION_EVAL_NO_SHARED") == "1"
SHARED_DATA = ROOT / ".no-shared-data" if NO_SHARED else ROOT.parent / "shared" / "data"  # never exists when hidden
MINI_SWE = SHARED_DATA / "mini-swe-agent"  # raw mini-swe-agent trajectories: importer tests only
REAL = ROOT / "fixtures" / "real"
REAL_MINI = REAL / "mini-swe-agent"  # the same trajectories as trace@1 (same ids, same messages)
needs_shared = pytest.mark.skipif(not MINI_SWE.is_dir(), reason="raw real traces in ../shared/data are absent (or hidden by COMPACTION_EVAL_NO_SHARED)")


def real_trace(trace_id: str) -> Path:
    """A shipped real trace by id, whatever its source folder under fixtures/real."""
    found = sorted(REAL.glob(f"*/{trace_id}.json.gz"))
    assert found, f"no shipped real trace {trace_id}"
    return found[0]

# Libraries read these once, at import: set them before any test imports inspect or
# matplotlib, so nothing is written under ~/.cache, ~/.local/share or ~/.config.
_STATE = Path(tempfile.mkdtemp(prefix="compaction-eval-tests-"))
# nothing reaches the Hugging Face Hub: datasets reads these at import
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HOME", str(_STATE / "hf"))
for _var, _sub in (("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"), ("XDG_CONFIG_HOME", "config"), ("MPLCONFIGDIR", "matplotlib")):
    os.environ[_var] = str(_STATE / _sub)


@pytest.fixture(autouse=True)
def _isolated_inspect(tmp_path, monkeypatch):
    """inspect writes ./logs and ~/.cache by default: keep every test inside its tmp dir."""
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
