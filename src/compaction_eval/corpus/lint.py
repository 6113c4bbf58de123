"""`compaction-eval lint`: every problem in traces and labels, with file and place."""

from __future__ import annotations

from pathlib import Path

from compaction_eval.contracts.paths import resolve_input, split_selector
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.corpus.load import check_corpus, label_paths, trace_paths


def lint(
    paths: list[Path], trace_dirs: list[Path], *, warnings: list[Problem] | None = None
) -> tuple[int, int, list[Problem], list[Path]]:
    """Check the trace and labels files under `paths`.

    Labels are checked against the traces found in `paths` and in `trace_dirs` (where the
    traces of labels live when only the labels are linted). Weak keys and leaky facts
    (corpus.keylint, the key rule of docs/labels.md) are not problems: they are appended to
    `warnings` when a list is given (`lint --strict` fails on them).

    Returns (trace files, labels files, problems, JSON files skipped as not traces).
    """
    # a DIR#N selector samples traces for a run; lint checks every file of DIR
    paths = [Path(split_selector(p)[0]) for p in paths]
    scanned: set[Path] = set()
    try:
        traces = trace_paths(paths, scanned)
        labels = label_paths(paths)
    except ContractError as exc:
        return 0, 0, exc.problems, []
    extra = [d for d in map(resolve_input, trace_dirs) if d.exists()]
    # the inputs as given, so that JSON found by scanning a folder that is not a trace (a
    # results file, labels/gold/blind-rounds.json) is reported as skipped, not as a bad trace
    named = [*(p for p in paths if resolve_input(p).is_dir()), *(t for t in traces if t not in scanned)]
    corpus, problems = check_corpus([*named, *extra], labels)
    if warnings is not None:
        from compaction_eval.corpus.keylint import corpus_key_warnings

        warnings += corpus_key_warnings(corpus.labels.values(), corpus.traces)
    known = {*traces, *labels}
    problems += [
        Problem(str(p), "", "neither a trace (.json, .json.gz) nor a labels file (.yaml, .yml)")
        for p in paths
        if p.is_file() and p not in known
    ]
    return len(traces) - len(set(corpus.skipped) & set(traces)), len(labels), problems, corpus.skipped


def draft_warnings(paths: list[Path]) -> list[str]:
    """One warning per labels file under `paths` still marked `labelled_by: draft` (proposed by
    `labels draft`, not yet checked by a person). Warnings, not problems: lint still passes."""
    from compaction_eval.contracts.yamlfile import read_yaml_file

    out: list[str] = []
    try:
        files = label_paths(paths)
    except ContractError:
        return out
    for f in files:
        try:
            data = read_yaml_file(f)
        except ContractError:
            continue  # reported as a problem by lint()
        if isinstance(data, dict) and data.get("labelled_by") == "draft":
            out.append(f"warning: {f}: labelled_by: draft: unchecked candidate facts; review them and set labelled_by: human")
    return out
