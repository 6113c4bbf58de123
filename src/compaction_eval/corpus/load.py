"""The corpus: traces paired with their labels, expanded into samples (trace x point)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compaction_eval.contracts.labels import Labels, lint_against_trace, load_labels
from compaction_eval.contracts.paths import resolve_input, split_selector
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import (
    SCHEMA,
    Trace,
    is_trace_file,
    read_json_file,
    trace_from_json,
    validate_trace,
)
from compaction_eval.corpus.hf import is_hf, require_datasets
from compaction_eval.corpus.hf import read_labels as read_hf_labels
from compaction_eval.corpus.hf import read_traces as read_hf_traces

if TYPE_CHECKING:  # datasets takes a second to import: only `to_dataset` needs it
    import datasets


def _files(paths: Iterable[Path], keep, scanned: set[Path] | None = None, depth: int = 0) -> list[Path]:
    """Files among `paths`; a directory gives the files directly in it and, with `depth=1`,
    those in its immediate subfolders too (one level, in name order).
    A file named twice (as itself and inside a named directory) is read once."""
    out: list[Path] = []
    for p in map(resolve_input, paths):
        if p.is_dir():
            found = sorted(f for f in p.glob("*") if f.is_file() and keep(f))
            if depth:
                found += sorted(f for f in p.glob("*/*") if f.is_file() and keep(f))
            out += found
            if scanned is not None:
                scanned.update(found)
        elif p.exists():
            if keep(p):
                out.append(p)
        else:
            raise ContractError([Problem(str(p), "", "no such file or directory")])
    unique: dict[Path, Path] = {}
    for f in out:
        unique.setdefault(f.resolve(), f)
    return list(unique.values())


def trace_paths(paths: Iterable[Path | str], scanned: set[Path] | None = None) -> list[Path]:
    """Trace files among `paths`; those found by scanning a directory are added to `scanned`.

    A trace directory may hold one level of source subfolders (`fixtures/real/<source>/`):
    its own trace files come first, then each subfolder's, in name order. Deeper folders are
    not read. `hf:` inputs (datasets) are not files: see `split_hf`.
    """
    return _files(map(Path, paths), is_trace_file, scanned, depth=1)


def label_paths(paths: Iterable[Path | str]) -> list[Path]:
    """Labels files among `paths`; a directory is flat (`labels/` holds the synthetic corpus
    and `labels/real/` the real one, run separately or together by naming both). A selector
    `DIR#N` is ignored here (every file is listed): `check_corpus` applies it."""
    return _files((Path(split_selector(p)[0]) for p in paths), lambda f: f.suffix in (".yaml", ".yml"))


def _recorded_base(spec: str, bases: Iterable[Path]) -> Path | None:
    """Where a recorded input (selector stripped) is now: as given when it exists, else under
    the first of `bases` where it exists."""
    path = Path(split_selector(spec)[0])
    if path.exists():
        return path
    if path.is_absolute():
        return None
    return next((b / path for b in bases if (b / path).exists()), None)


def read_labels_back(inputs: Iterable[Path | str], *, bases: Iterable[Path] = (), traces: Iterable[str] | None = None) -> dict[str, Labels]:
    """Labels by trace id from the labels inputs a run recorded, for showing fact text again
    (report, suggest, gate markdown, review). The one resolver of recorded label paths.

    A run records its inputs as it read them, selector included (`.../labels/real#2`): the
    selector chose which traces the run sampled, so it is dropped here and every file of the
    directory is read (the run's own traces are among them). A relative input missing from
    the working directory is looked for under `bases` (e.g. the parents of a moved run
    directory). Never raises: a missing or broken file only means less text to show, so
    callers say what they could not find. The first labels of a trace win.

    Args:
        inputs: recorded labels inputs (files, directories, `DIR#N`); `hf:` inputs are skipped.
        bases: folders to look under for a relative input that is not found as given.
        traces: keep only these trace ids (None: all).
    """
    wanted = None if traces is None else set(traces)
    bases = list(bases)
    out: dict[str, Labels] = {}
    seen: set[Path] = set()
    for spec in inputs:
        if is_hf(spec):
            continue
        base = _recorded_base(str(spec), bases)
        if base is None or base.resolve() in seen:
            continue
        seen.add(base.resolve())
        try:
            files = label_paths([base])
        except ContractError:
            continue
        for path in files:
            try:
                lab = load_labels(path)
            except (ContractError, OSError, ValueError):
                continue
            if wanted is None or lab.trace in wanted:
                out.setdefault(lab.trace, lab)
    return out


def run_labels(results: dict[str, Any], *, bases: Iterable[Path] = (), traces: Iterable[str] | None = None) -> dict[str, Labels]:
    """`read_labels_back` on a results document's recorded labels: where the run read them
    (`config.labels`, absolute), then as given (`inputs_as_given.labels`, for a moved run);
    redacted (`corpus.redact.redact_labels`) when the run was."""
    config = results.get("config") or {}
    given = results.get("inputs_as_given") or {}
    found = read_labels_back([*(config.get("labels") or []), *(given.get("labels") or [])], bases=bases, traces=traces)
    if config.get("redact"):  # a redacted run's labels are shown redacted wherever they are read back
        from compaction_eval.corpus.redact import redact_labels

        found = {tid: redact_labels(lab) for tid, lab in found.items()}
    return found


def per_source_limit(labels: list[Labels], traces: Mapping[str, Trace], n: int) -> list[Labels]:
    """At most `n` labels per source (the first by trace id), for an input `DIR#N`. Labels of
    a trace that is not loaded are kept, so that the caller reports them."""
    from compaction_eval.contracts.traces import source_of

    taken: dict[str, int] = {}
    kept = []
    for lab in sorted(labels, key=lambda lab: lab.trace):
        trace = traces.get(lab.trace)
        if trace is not None:
            src = source_of(trace)
            if taken.get(src, 0) >= n:
                continue
            taken[src] = taken.get(src, 0) + 1
        kept.append(lab)
    return kept


class NotATrace(Exception):
    """A JSON file that is neither a trace nor in a format an importer knows."""


def read_trace(path: Path | str, *, strict: bool = True) -> tuple[Trace | None, list[Problem]]:
    """A trace file in our format, or in any format an importer knows (converted in memory).

    With `strict=False` (files found by scanning a directory), a JSON file that does not
    look like a trace at all raises NotATrace so the caller can report it as skipped.
    """
    path = Path(path)
    try:
        data = read_json_file(path)
    except ContractError as exc:
        return None, exc.problems
    if not (isinstance(data, dict) and data.get("schema") == SCHEMA):
        from compaction_eval.corpus.importers import (  # imported only for foreign files
            convert,
            detect_format,
        )

        if detect_format(data) is None:
            # another document of ours (blind-rounds, results) or something with no trace shape
            ours = isinstance(data, dict) and str(data.get("schema", "")).startswith("compaction-eval/")
            if not strict and (ours or not (isinstance(data, dict) and ("schema" in data or "messages" in data))):
                raise NotATrace(str(path))
        else:
            try:
                data = convert(path)
            except ContractError as exc:
                return None, exc.problems
    problems = validate_trace(data, str(path))
    return (None, problems) if problems else (trace_from_json(data, path), [])


TRACES_KEPT = 16
"""Traces a `TraceFiles` keeps read (the latest used): the points of one trace are
visited one after another."""


class TraceFiles(Mapping[str, Trace]):
    """Traces by id, each read from its file when it is asked for, the last `keep` kept.

    A corpus of 1,250 synthetic traces (10,000 recall samples) is 350 MB once parsed, and
    the allocator keeps most of that after it is freed: a large run must never hold every
    trace at once. Reading a trace again gives the same trace (files are checked once, when
    the corpus is loaded); traces with no file to read again (`hf:` rows) are kept as given.
    Iterates in the order traces were added, like the dict it stands in for.
    """

    def __init__(self, keep: int = TRACES_KEPT) -> None:
        self._where: dict[str, Path | Trace] = {}
        self._recent: OrderedDict[str, Trace] = OrderedDict()
        self._keep = keep

    def add(self, trace: Trace) -> None:
        on_disk = trace.path is not None and Path(trace.path).is_file()
        self._where[trace.id] = Path(trace.path) if on_disk and trace.path is not None else trace

    def __getitem__(self, tid: str) -> Trace:
        where = self._where[tid]
        if isinstance(where, Trace):
            return where
        if tid in self._recent:
            self._recent.move_to_end(tid)
            return self._recent[tid]
        trace, problems = read_trace(where)
        if trace is None:  # changed since it was checked
            raise ContractError(problems)
        self._recent[tid] = trace
        if len(self._recent) > self._keep:
            self._recent.popitem(last=False)
        return trace

    def __contains__(self, tid: object) -> bool:
        return tid in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


@dataclass
class Corpus:
    """Traces and their labels, all checked.

    Args:
        traces: by trace id (a `TraceFiles` when loaded with `lazy`).
        labels: by trace id; every labels file has its trace.
    """

    traces: Mapping[str, Trace]
    labels: dict[str, Labels]
    skipped: list[Path] = field(default_factory=list)

    def samples(self) -> list[tuple[str, int]]:
        """(trace id, point) for every labelled point, in a stable order."""
        return [(tid, at) for tid in sorted(self.labels) for at in self.labels[tid].points]

    def rows(self) -> list[dict[str, Any]]:
        """One row per sample (trace x point) with where its files live."""
        return [
            {
                "id": f"{tid}@{at}",
                "trace": tid,
                "point": at,
                "trace_path": str(self.traces[tid].path),
                "labels_path": str(self.labels[tid].path),
                "expected_facts": len(self.labels[tid].expected(at)),
                "synthetic": self.labels[tid].labelled_by == "generator",
            }
            for tid, at in self.samples()
        ]

    def to_dataset(self) -> "datasets.Dataset":
        """`rows()` as a Hugging Face dataset (imports `datasets`, about a CPU-second; the `[hf]` extra)."""
        datasets = require_datasets("Corpus.to_dataset")
        return datasets.Dataset.from_list(self.rows())


def check_corpus(trace_inputs: Iterable[Path | str], label_inputs: Iterable[Path | str], *,
                 lazy: bool = False) -> tuple[Corpus, list[Problem]]:
    """Load everything, collecting every problem instead of stopping at the first.

    An input `hf:PATH` (a dataset folder or a Hub name, see corpus.hf) gives the traces, or
    the labels, of that dataset's rows; every other input is a file or directory. With
    `lazy` the traces are checked one at a time and read again when used (`TraceFiles`).
    """
    trace_inputs, label_inputs = list(trace_inputs), list(label_inputs)
    problems: list[Problem] = []
    traces: dict[str, Trace] | TraceFiles = TraceFiles() if lazy else {}
    scanned: set[Path] = set()
    skipped: list[Path] = []
    try:
        t_files = trace_paths([p for p in trace_inputs if not is_hf(p)], scanned)
        label_paths([p for p in label_inputs if not is_hf(p)])  # every input exists
    except ContractError as exc:
        return Corpus({}, {}), exc.problems

    def add(trace: Trace) -> None:
        if trace.id in traces:
            problems.append(Problem(str(trace.path), "id", f"trace id {trace.id!r} also in {traces[trace.id].path}"))
        elif isinstance(traces, TraceFiles):
            traces.add(trace)
        else:
            traces[trace.id] = trace

    for path in t_files:
        try:
            trace, found = read_trace(path, strict=path not in scanned)
        except NotATrace:
            skipped.append(path)
            continue
        problems += found
        if trace is not None:
            add(trace)
    for spec in filter(is_hf, trace_inputs):
        try:
            from_hf, found = read_hf_traces(str(spec))
        except ContractError as exc:
            problems += exc.problems
            continue
        problems += found
        for trace in from_hf:
            add(trace)
    candidates: list[Labels] = []
    seen: set[Path] = set()
    for spec in label_inputs:
        if is_hf(spec):
            continue
        limit = split_selector(spec)[1]
        chosen = []
        for path in label_paths([spec]):
            if path.resolve() in seen:  # a file named twice is read once
                continue
            seen.add(path.resolve())
            try:
                chosen.append(load_labels(path))
            except ContractError as exc:
                problems += exc.problems
        candidates += per_source_limit(chosen, traces, int(limit[1:])) if limit else chosen
    for spec in filter(is_hf, label_inputs):
        try:
            hf_labels, found = read_hf_labels(str(spec))
        except ContractError as exc:
            problems += exc.problems
            continue
        problems += found
        candidates += hf_labels
    labels: dict[str, Labels] = {}
    for lab in candidates:
        if lab.trace in labels:
            problems.append(Problem(str(lab.path), lab.place("trace"), f"a second labels file for {lab.trace!r} (first: {labels[lab.trace].path})"))
            continue
        trace = traces.get(lab.trace)
        if trace is None:
            where = ", ".join(sorted({str(p) if is_hf(p) or Path(p).is_dir() else str(Path(p).parent) for p in trace_inputs})) or "(no trace paths)"
            problems.append(Problem(str(lab.path), lab.place("trace"), f"labels a trace {lab.trace!r} that does not exist in {where}"))
            continue
        problems += lint_against_trace(lab, trace)
        labels[lab.trace] = lab
    return Corpus(traces, labels, skipped), problems


def load_corpus(trace_inputs: Iterable[Path | str], label_inputs: Iterable[Path | str], *,
                points: Sequence[str] = (), lazy: bool = False) -> Corpus:
    """The corpus, or a ContractError listing every problem.

    Args:
        points: when given, only these samples (`TRACE@AT`, each a labelled point), e.g. the
            points a recording answers: the other points and traces are left out.
        lazy: traces are read when used, a few kept (`TraceFiles`): for a caller that
            visits them one at a time (a recall run), so memory does not grow with the corpus.
    """
    trace_inputs, label_inputs = list(trace_inputs), list(label_inputs)
    corpus, problems = check_corpus(trace_inputs, label_inputs, lazy=lazy)
    if problems:
        raise ContractError(problems)
    if not corpus.labels:
        raise ContractError([Problem(", ".join(map(str, label_inputs)), "", "no labels files found: nothing to evaluate")])
    return only_points(corpus, points) if points else corpus


def parse_point(text: str, where: str = "--points") -> tuple[str, int]:
    """`TRACE@AT` -> (trace id, point).

    >>> parse_point("django__django-11087@45")
    ('django__django-11087', 45)
    """
    trace, sep, at = str(text).rpartition("@")
    if not sep or not trace or not at.isdigit():
        raise ContractError([Problem(where, str(text), "a point is TRACE@AT (a trace id, @, a labelled message index)")])
    return trace, int(at)


def only_points(corpus: Corpus, points: Sequence[str]) -> Corpus:
    """The corpus restricted to `points` (`TRACE@AT`); a point that is not labelled is an error."""
    wanted: dict[str, set[int]] = {}
    for text in points:
        trace, at = parse_point(text)
        wanted.setdefault(trace, set()).add(at)
    problems = []
    for trace, ats in sorted(wanted.items()):
        labelled = set(corpus.labels[trace].points) if trace in corpus.labels else set()
        for at in sorted(ats - labelled):
            problems.append(Problem("--points", f"{trace}@{at}", "not a labelled point of the corpus" if labelled else "no labelled trace with this id"))
    if problems:
        raise ContractError(problems)
    labels = {tid: replace(lab, points=tuple(at for at in lab.points if at in wanted[tid])) for tid, lab in corpus.labels.items() if tid in wanted}
    return replace(corpus, labels=labels)
