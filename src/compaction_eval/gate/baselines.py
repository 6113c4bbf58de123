"""Committed baselines: `results/baselines/<name>/results.json`.

`/results/*` is git-ignored except `/results/baselines/`, so a blessed run is committed
with the prompts it was measured on. Only results.json (and horizon.json when the run has
one) is kept: the inspect logs are large and the results carry every per-fact verdict the
gate and the report need.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.runfiles import (
    RESULTS_FILE,
    RUN_NAME,
    check_run_name,
    read_results,
    write_json_atomic,
)
from compaction_eval.contracts.traces import parse_json_text
from compaction_eval.recall.stability import stability_summary

BASELINES_DIR = Path("results/baselines")
# The gate's corpus: the default synthetic corpus and the large one (53 traces, 106 samples).
# Chosen for power: on the 22 samples of the default corpus alone the paired bootstrap could
# not see a whole field removed; with 106 it sees the large ones (numbers, decisions) by the
# interval too, and a deterministic model's definite losses by count. The real traces stay
# out: they live outside the repository (../shared/data), where CI on a pull request cannot
# read them. `results/baselines/main` is a run on this corpus; the prompt-gate workflow runs
# the candidate on it.
GATE_TRACES = ("fixtures/traces", "fixtures/traces-large")
GATE_LABELS = ("labels", "labels/synth-large")
DEFAULT_NAME = "main"
HORIZON_FILE = "horizon.json"


def baseline_dir(name: str = DEFAULT_NAME, root: Path | str = BASELINES_DIR) -> Path:
    """Where baseline `name` lives (under `root`, default results/baselines)."""
    return Path(root) / check_run_name(name, "--name")


def save_baseline(run_dir: Path | str, name: str = DEFAULT_NAME, root: Path | str = BASELINES_DIR, *, force: bool = False) -> Path:
    """Bless a run: copy its results.json (and horizon.json) to `root/name/`, each atomically.

    The copy records where it came from and the per-fact stability over the run's epochs
    (`fact_stability`), and drops the pointer to the inspect log, which is not copied.

    Args:
        run_dir: a run directory written by `compaction-eval recall` or `run`.
        name: the baseline's name (default `main`, the one the gate uses by default).
        root: the baselines directory.
        force: replace an existing baseline of that name (refused otherwise: `main` is the
            committed baseline every gate compares with).

    Returns the baseline's results.json. Raises ContractError for a missing or invalid run.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ContractError([Problem(str(run_dir), "", "run directory not found")])
    results = read_results(run_dir)
    if results.get("suite", "fact_recall") != "fact_recall" or not results.get("samples"):
        raise ContractError([Problem(str(run_dir / RESULTS_FILE), "samples", "not a fact-recall run with samples")])
    target = baseline_dir(name, root)
    if (target / RESULTS_FILE).exists() and not force:
        raise ContractError([Problem(str(target / RESULTS_FILE), "", f"baseline {name!r} already exists: pass --force to replace it")])
    target.mkdir(parents=True, exist_ok=True)
    blessed: dict[str, Any] = dict(results)
    blessed["inspect_log"] = None
    blessed["fact_stability"] = stability_summary(results)
    blessed["baseline"] = {
        "name": name,
        "saved_from": str(run_dir),
        "saved": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    horizon = run_dir / HORIZON_FILE
    if horizon.exists():

        write_json_atomic(target / HORIZON_FILE, parse_json_text(horizon.read_text(encoding="utf-8"), str(horizon)))
    write_json_atomic(target / RESULTS_FILE, blessed)
    (target / RESULTS_FILE).chmod(0o644)  # a committed file, readable like any other
    return target / RESULTS_FILE


def resolve_baseline(spec: str | Path, root: Path | str = BASELINES_DIR) -> Path:
    """A baseline given as a path (run directory or results.json) or as a name under `root`.

    A spec that is neither an existing path nor an existing baseline is returned as the
    path it would have under `root` when it looks like a name, so that the caller's "not
    found" message names the place a baseline is expected.
    """
    path = Path(spec)
    if path.exists():
        return path
    if RUN_NAME.match(str(spec)):
        return Path(root) / str(spec)
    return path


def list_baselines(root: Path | str = BASELINES_DIR) -> list[Path]:
    """The baselines under `root` (directories holding a results.json)."""
    root = Path(root)
    return sorted(p.parent for p in root.glob(f"*/{RESULTS_FILE}")) if root.is_dir() else []
