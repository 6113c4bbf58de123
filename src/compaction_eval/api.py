"""The public Python API: load, compact, score, run, compare, gate, read a run.

Everything here is re-exported by `compaction_eval` (see `__all__` there). Each function
takes paths or already-loaded objects, raises `ContractError` (one located problem per
line) on bad input, and returns the same objects the command line works with.

>>> import compaction_eval as ce
>>> trace = ce.load_trace("fixtures/traces/synth-ci-broken-001.json.gz")  # doctest: +SKIP
>>> labels = ce.load_labels("labels/synth-ci-broken-001.yaml")  # doctest: +SKIP
>>> ce.score_summary("...", labels, trace, at=51).recall  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from compaction_eval.contracts.labels import Labels, labels_from_text
from compaction_eval.contracts.labels import load_labels as _load_labels_file
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.prompts import Candidate, load_candidate
from compaction_eval.contracts.settings import COMPACTION_FIELDS, DEFAULT_MODEL, CompactionSettings
from compaction_eval.contracts.traces import Trace, strict_loads, trace_from_json, validate_trace


def _looks_inline(source: str, opener: tuple[str, ...]) -> bool:
    stripped = source.lstrip()
    return "\n" in source or stripped.startswith(opener)


def load_trace(source: Path | str | dict[str, Any]) -> Trace:
    """A trace from a file (trace@1 or any importable format), JSON text, or a dict.

    Raises:
        ContractError: the file is missing or malformed, or the trace breaks the contract.
    """
    if isinstance(source, dict):
        problems = validate_trace(source, "<dict>")
        if problems:
            raise ContractError(problems)
        return trace_from_json(source)
    if isinstance(source, str) and _looks_inline(source, ("{",)):
        try:
            data = strict_loads(source)
        except json.JSONDecodeError as exc:
            raise ContractError([Problem("<string>", f"line {exc.lineno} column {exc.colno}", f"malformed JSON: {exc.msg}")]) from None
        return load_trace(data)
    from compaction_eval.corpus.load import read_trace

    trace, problems = read_trace(Path(source))
    if trace is None:
        raise ContractError(problems)
    return trace


def load_labels(source: Path | str) -> Labels:
    """Labels from a YAML file or from YAML text (a string with a newline)."""
    if isinstance(source, str) and _looks_inline(source, ("schema:",)):
        return labels_from_text(source)
    return _load_labels_file(source)


def load_prompt(source: Path | str) -> Candidate:
    """A candidate compaction prompt (a `.j2` file with its YAML header)."""
    return load_candidate(source)


def score_summary(summary: str, labels: Labels, trace: Trace, at: int, **options: Any):
    """Per-fact verdicts, recall and precision of one summary written at point `at`.

    Returns a `SummaryScore` (`.recall`, `.precision`, `.facts`, `.avoid`, `.to_json()`).

    >>> trace = load_trace({"schema": "compaction-eval/trace@1", "id": "t", "messages": [
    ...     {"role": "user", "content": "Fix the crash in src/app/main.py; it fails 347 times."},
    ...     {"role": "assistant", "content": "Looking at src/app/main.py."},
    ...     {"role": "user", "content": "ok"}]})
    >>> labels = load_labels('''schema: compaction-eval/labels@1
    ... trace: t
    ... labelled_by: human
    ... points: [{at: 3}]
    ... facts:
    ...   - {id: file, category: artifact, text: The crash is in src/app/main.py., keys: [src/app/main.py], source: [0]}
    ...   - {id: count, category: number, text: It fails 347 times., keys: ["347"], source: [0]}
    ... ''')
    >>> score = score_summary("- Crash in src/app/main.py, about 300 failures.", labels, trace, 3)
    >>> score.recall, [(f.id, f.kept) for f in score.facts]
    (0.5, [('file', True), ('count', False)])
    """
    from compaction_eval.recall.scoring import score_summary as _score

    return _score(summary, labels, trace, at, **options)


def compact(
    trace: Trace,
    at: int,
    prompt: Candidate | Path | str,
    *,
    model: str = DEFAULT_MODEL,
    settings: CompactionSettings | None = None,
):
    """Compact `trace` at point `at` with `prompt` using an inspect model.

    Returns a `Compacted` (`.summary`, `.context`, token counts). The default model is the
    offline extractive summariser, a stand-in, not an LLM.
    """
    from inspect_ai.model import get_model

    import compaction_eval.standins.registry  # noqa: F401  (registers the offline providers)
    from compaction_eval.compaction.compact import compact_sample

    settings = settings or CompactionSettings()
    candidate = prompt if isinstance(prompt, Candidate) else load_candidate(prompt)
    return asyncio.run(
        compact_sample(get_model(model), trace, at, candidate, budget=settings.budget, keep_last=settings.keep_last,
                       shape=settings.shape, focus=settings.focus)
    )


def run_recall(out: Path | str, config: Any = None, **overrides: Any) -> dict[str, Any]:
    """Run the fact-recall suite into the run directory `out`; returns results.json's data.

    `config` is a `RecallConfig` (defaults: the default corpus, every prompt, the offline
    stand-in); keyword arguments override its fields. The compaction settings are one value,
    `compaction=CompactionSettings(...)`; `budget=`, `keep_last=`, `shape=` and `focus=`
    still override that value's fields.
    """
    from compaction_eval.recall.run import RecallConfig
    from compaction_eval.recall.run import run_recall as _run

    config = config or RecallConfig()
    flat = {k: overrides.pop(k) for k in COMPACTION_FIELDS if k in overrides}
    if flat:
        overrides["compaction"] = replace(overrides.get("compaction", config.compaction), **flat)
    return _run(replace(config, **overrides), Path(out))


def read_run(run_dir: Path | str) -> dict[str, Any]:
    """A run directory's (or a results.json file's) results, checked against results@1."""
    from compaction_eval.contracts.runfiles import read_results

    return read_results(run_dir)


def compare_runs(baseline: Path | str | dict[str, Any], candidate: Path | str | dict[str, Any], **options: Any):
    """Paired comparison of two recall runs (by trace, point, prompt and fact)."""
    from compaction_eval.gate.compare import compare_runs as _compare

    return _compare(_results(baseline), _results(candidate), **options)


def gate_runs(baseline: Path | str, candidate: Path | str, **options: Any):
    """The regression gate's decision (`.passed`, `.exit_code`, reasons) for two runs."""
    from compaction_eval.gate.rules import gate_files

    return gate_files(baseline, candidate, **options)


def _results(run: Path | str | dict[str, Any]) -> dict[str, Any]:
    return run if isinstance(run, dict) else read_run(run)
