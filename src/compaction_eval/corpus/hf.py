"""The corpus as a Hugging Face dataset: `hf:` inputs (the export is corpus/export.py).

One row per trace. `trace` is the trace@1 JSON and `labels` the labels YAML exactly as
written (null for an unlabelled trace): a message's `content` is a string or a list of
blocks and a tool's `input` any JSON object, which no fixed Arrow schema holds without
rewriting it, so both travel as text and an import gives back identical traces and labels.
The other columns (source, agent, model, task kind, license, sizes, points, facts) are
there to browse and filter the dataset; an import ignores them.

Layout of an export folder: `datasets.DatasetDict({"train": ...}).save_to_disk` (so
`datasets.load_from_disk(OUT)` works) plus a dataset card README.md whose `configs:` header
points at the Arrow files (so `datasets.load_dataset(OUT)` works, on the folder or uploaded
to the Hub as it is). `hf:SPEC` inputs are read with `datasets.load_dataset(SPEC,
split="train")` whether SPEC is a local folder or a Hub name: one code path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compaction_eval.contracts.labels import Labels, labels_from_text
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import Trace, strict_loads, trace_from_json, validate_trace

PREFIX = "hf:"
SPLIT = "train"
COLUMNS = ("id", "trace", "labels")


def is_hf(spec: Any) -> bool:
    """Whether an input names a dataset (`hf:PATH` or `hf:owner/name`) rather than a file."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def hf_target(spec: str) -> str:
    """What `hf:SPEC` names: an existing local folder as an absolute path, else the Hub name."""
    target = spec[len(PREFIX):]
    if not target:
        raise ContractError([Problem(spec, "", "hf: needs a dataset folder or a Hub name after it")])
    local = Path(target).expanduser()
    return str(local.resolve()) if local.exists() else target


def absolute(spec: str) -> str:
    """`hf:` plus `hf_target` (a run records where its inputs were, from any directory)."""
    return PREFIX + hf_target(spec)


def _where(spec: str, tid: str, kind: str) -> Path:
    """The pseudo-path naming one row's trace or labels in errors and results."""
    return Path(f"{spec}#{tid}.{kind}")


def require_datasets(where: str) -> Any:
    """The `datasets` module, or a ContractError naming `where` and how to install it:
    `datasets` (with pyarrow and pandas, about 250 MB) is the optional `[hf]` extra, needed only
    by `corpus export` and `hf:` inputs."""
    try:
        import datasets
    except ImportError:
        raise ContractError([Problem(where, "", "needs the optional package `datasets`: pip install 'compaction-eval[hf]'")]) from None
    return datasets


def load_rows(spec: str) -> list[dict[str, Any]]:
    """The rows of the dataset `hf:SPEC`, or a ContractError naming it."""
    target = hf_target(spec)
    datasets = require_datasets(spec)

    try:
        ds = datasets.load_dataset(target, split=SPLIT)
    except Exception as exc:  # datasets raises many kinds (missing, offline, malformed)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ContractError([Problem(spec, "", f"cannot load the dataset: {type(exc).__name__}: {first[:300]}")]) from None
    missing = [c for c in COLUMNS if c not in ds.column_names]
    if missing:
        raise ContractError([Problem(spec, "columns", f"not a compaction-eval corpus dataset: no column(s) {', '.join(missing)}")])
    return ds.select_columns(list(COLUMNS)).to_list()


def read_traces(spec: str) -> tuple[list[Trace], list[Problem]]:
    """Every trace of the dataset, each checked like a trace file."""
    traces, problems = [], []
    for i, row in enumerate(load_rows(spec)):
        where = _where(spec, row.get("id") or f"row{i}", "json")
        try:
            data = strict_loads(row["trace"] or "")
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(where), f"row {i}, trace", f"malformed JSON: {exc.msg}"))
            continue
        found = validate_trace(data, str(where))
        if found:
            problems += found
            continue
        traces.append(trace_from_json(data, where))
    return traces, problems


def read_labels(spec: str) -> tuple[list[Labels], list[Problem]]:
    """The labels of every labelled row, each checked like a labels file."""
    out, problems = [], []
    for i, row in enumerate(load_rows(spec)):
        if row["labels"] is None:
            continue
        try:
            out.append(labels_from_text(row["labels"], _where(spec, row.get("id") or f"row{i}", "yaml")))
        except ContractError as exc:
            problems += exc.problems
    return out, problems
