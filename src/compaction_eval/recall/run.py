"""Run the fact-recall suite end to end: check inputs, eval, aggregate, write results.json."""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compaction_eval.compaction.recorded import MissingAnswers
from compaction_eval.compaction.recorded import provenance as recorded_provenance
from compaction_eval.compaction.session import provider_args, redacting
from compaction_eval.contracts.heap import fix_mmap_threshold
from compaction_eval.contracts.paths import DEFAULTS, resolve_inputs
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.prompts import load_candidates, require_span
from compaction_eval.contracts.runfiles import (
    PID_FILE,
    RESULTS_FILE,
    SCHEMA,
    SpooledList,
    adopt_log,
    check_run_path,
    clear_interrupted,
    kept_log_dir,
    request_limits,
    staged_run_dir,
    write_json_atomic,
)
from compaction_eval.contracts.settings import (
    DEFAULT_MODEL,
    CompactionSettings,
    is_stand_in,
)
from compaction_eval.corpus.hf import absolute as hf_absolute
from compaction_eval.corpus.hf import is_hf
from compaction_eval.corpus.load import load_corpus
from compaction_eval.corpus.redact import redact_text
from compaction_eval.corpus.stats import corpus_stats
from compaction_eval.recall.aggregate import RunTotals, figure_tiers, uncertain_count
from compaction_eval.recall.scorer import VERDICTS_KEY
from compaction_eval.recall.solver import STORE_KEY
from compaction_eval.recall.stability import FactTally

if TYPE_CHECKING:
    from inspect_ai.util import DisplayType  # inspect is imported only when something runs

# Providers that are deterministic stand-ins, not LLMs: their results say so everywhere.


class RunFailed(RuntimeError):
    """inspect reported a failed run (it exits 0 even then)."""


@dataclass
class RecallConfig:
    """What one recall run evaluates and how.

    Args:
        traces, labels, prompts: files or directories.
        model: the compaction model (`extractive/default` offline, `anthropic/<name>` real).
        compaction: how each sample is compacted (budget, keep_last, shape, focus): what a
            run must share with another to be compared.
        judge_model: optional LLM judge for meaning categories.
        epochs: repeats per sample (for noise estimates with real models).
        max_connections, max_retries, timeout: limits for real providers; inspect's
            retries are unbounded by default, which can hang a CI job.
        display: inspect's display (`none`, `plain`, `rich`).
        model_args: provider arguments (`-M`); they are part of the generate-cache scope.
        batch: send requests through the provider's batch mode (half price, slower).
        redact: replace secret-looking strings in traces before anything reaches a model.
        sample_retries: times a sample that errored is run again (a malformed answer is not
            retried by the provider: the SDK raises on the body, not on the status).
        points: only these samples (`TRACE@AT`, labelled points), e.g. the points a recording
            answers; empty: every labelled point.
    """

    traces: list[str] = field(default_factory=lambda: list(DEFAULTS["traces"]))
    labels: list[str] = field(default_factory=lambda: list(DEFAULTS["labels"]))
    prompts: list[str] = field(default_factory=lambda: ["prompts"])
    model: str = DEFAULT_MODEL
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    judge_model: str | None = None
    epochs: int = 1
    max_connections: int = 8
    max_retries: int = 4
    timeout: int = 120
    display: DisplayType = "none"
    model_args: dict[str, Any] = field(default_factory=dict)
    batch: bool = False
    redact: bool = False
    sample_retries: int = 1
    points: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse numbers that would run and report something wrong (ContractError naming
        the option): a retry count of -1, no epochs. (`CompactionSettings` checks its own.)"""
        if not isinstance(self.compaction, CompactionSettings):
            raise ContractError([Problem("compaction", "", f"{self.compaction!r} is not a CompactionSettings")])
        rules = [
            ("--epochs", self.epochs, 1, "at least 1"),
            ("--max-retries", self.max_retries, 0, "0 or more"),
            ("--timeout", self.timeout, 1, "at least 1 second"),
            ("max_connections", self.max_connections, 1, "at least 1"),
            ("sample_retries", self.sample_retries, 0, "0 or more"),
        ]
        for flag, value, low, what in rules:
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ContractError([Problem(flag, "", f"{value!r} is not valid: must be {what}")])

    @property
    def offline_stand_in(self) -> bool:
        return is_stand_in(self.model)


def config_json(config: RecallConfig) -> dict[str, Any]:
    """results.json's `config`: the fields of `config` (the compaction settings as one object,
    `compaction`) plus the settings' flat keys every results@1 reader knows (`budget`,
    `keep_last`, `shape`, `focus`). `display` is left out: it changes nothing measured."""
    out: dict[str, Any] = {}
    for key, value in asdict(config).items():
        if key == "compaction":
            out.update(value)  # the flat keys, where results@1 always had them
        if key != "display" and not (key == "points" and not value):  # a subset of points is said, all is the default
            out[key] = value
    return out


def empty_span_problems(corpus: Any, keep_last: int) -> list[Problem]:
    """Samples where `keep_last` leaves nothing to compact: scoring them would report the
    verbatim tail as a perfect summary (recall 100%)."""
    from compaction_eval.compaction.split import split_history

    problems = []
    for tid, at in corpus.samples():
        if not split_history(corpus.traces[tid], at, keep_last).middle:
            labels = corpus.labels[tid]
            i = labels.points.index(at)
            problems.append(Problem(str(labels.path), labels.place(f"points[{i}].at"),
                                    f"--keep-last {keep_last} keeps all of messages[1:{at}] verbatim: nothing is left to compact at point {at}"))
    return problems


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _sample_record(sample: dict[str, Any]) -> dict[str, Any]:
    """A results@1 `samples[]` entry from one inspect sample (its log JSON)."""
    score = next(iter(sample["scores"].values()))
    verdicts = sample["store"][VERDICTS_KEY]
    detail = verdicts["summary_score"]
    compacted = sample["store"][STORE_KEY]
    meta = sample["metadata"]
    return {
        "trace": meta["trace"],
        "point": meta["point"],
        "prompt": meta["prompt"],
        "epoch": sample["epoch"],
        "synthetic": meta["synthetic"],
        **detail,
        "uncertain": uncertain_count(detail),
        "context_recall": score["value"]["context_recall"],
        "context": verdicts["context_score"],
        "summary": compacted["summary"],
        "summary_tokens": compacted["summary_tokens"],
        "raw_summary_tokens": compacted["raw_summary_tokens"],
        "span_tokens": compacted["span_tokens"],
        "history_tokens": compacted["history_tokens"],
        "context_tokens": compacted["context_tokens"],
        "compression": score["value"]["compression"],
        "budget": compacted["budget"],
        "budget_truncated": compacted["raw_summary_tokens"] > compacted["summary_tokens"],
        "input_tokens": compacted["input_tokens"],
        "output_tokens": compacted["output_tokens"],
        "cache_read_tokens": compacted["cache_read_tokens"],
        "cache_write_tokens": compacted["cache_write_tokens"],
        "kept_span": compacted["split"],
    }


def log_samples(location: str) -> Iterator[dict[str, Any]]:
    """The samples of a finished `.eval` log, one at a time, as JSON, in the order
    `EvalLog.samples` lists them (epoch, then id).

    `EvalLog.samples` loads every sample of the run at once, each with its whole transcript
    (about 100 kB of JSON a sample): that, not the run, was most of a large run's memory.
    The log is a zip with one member per sample (`samples/<id>_epoch_<n>.json`, the
    format's own layout, read by name as inspect does): each is read, used and dropped.
    """
    import zipfile

    from inspect_ai.log import read_eval_log

    header = read_eval_log(location, header_only=True)
    ids = header.eval.dataset.sample_ids or []
    epochs = header.eval.config.epochs or 1
    # inspect's order (log.sort_samples): by epoch, then by id (numbers as zero-filled text)
    order = sorted(((e, i) for e in range(1, epochs + 1) for i in ids),
                   key=lambda k: (k[0], k[1] if isinstance(k[1], str) else str(k[1]).zfill(20)))
    with zipfile.ZipFile(location.removeprefix("file://")) as log:
        names = set(log.namelist())
        for epoch, sid in order:
            name = f"samples/{sid}_epoch_{epoch}.json"
            if name not in names:
                raise RunFailed(f"{location}: sample {sid} (epoch {epoch}) is missing from the inspect log")
            yield json.loads(log.read(name))


LOG_BUFFER = 10
"""Finished samples inspect holds before it appends them to its log."""

SCOPE_HEADER = "x-compaction-eval-scope"


def cache_scope(config: RecallConfig) -> dict[str, str]:
    """What must separate generate-cache entries but is not in inspect's cache key.

    inspect keys its generate cache on config, messages, tools and base_url, not on model
    arguments (`-M`): two runs that differ only there would share answers. The scope goes
    into the request as a header (ignored by the provider, part of the key).
    """
    args = json.dumps(config.model_args, sort_keys=True, default=str)
    return {SCOPE_HEADER: hashlib.sha256(args.encode("utf-8")).hexdigest()[:16]}


def _redacted_traces(config: RecallConfig, stage: Path) -> tuple[list[str], dict[str, int]]:
    """Redacted copies of the run's trace files under the staging directory."""
    from compaction_eval.corpus.load import trace_paths
    from compaction_eval.corpus.redact import redact_file

    counts: Counter = Counter()
    out = stage / "redacted-traces"
    paths = []
    for i, src in enumerate(trace_paths(config.traces)):
        paths.append(str(redact_file(src, out / f"{i:04d}" / src.name, counts)))
    return paths, dict(counts)


def _redacted_labels(config: RecallConfig, stage: Path, dropped: list[str]) -> list[str]:
    """Labels to go with redacted traces: keys redacted the same way (so they still occur),
    and avoid items whose keys were all secrets removed (they can no longer leak; a
    placeholder left in a summary is not the secret). Their ids are added to `dropped`."""
    import yaml

    from compaction_eval.contracts.yamlfile import read_yaml_file
    from compaction_eval.corpus.load import label_paths
    from compaction_eval.corpus.redact import redact_json, redact_text

    out = stage / "redacted-labels"
    paths = []
    for i, src in enumerate(label_paths(config.labels)):
        data = read_yaml_file(src)
        if isinstance(data, dict):
            kept = []
            for item in data.get("avoid") or []:
                keys = item.get("keys") or [] if isinstance(item, dict) else []
                if keys and all(redact_text(str(k)) != str(k) for k in keys):
                    dropped.append(f"{data.get('trace')}:{item.get('id')}")
                    continue
                kept.append(item)
            if "avoid" in data:
                data["avoid"] = kept
            data = {k: (redact_json(v) if k in ("facts", "avoid") else v) for k, v in data.items()}
        dst = out / f"{i:04d}" / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        paths.append(str(dst))
    return paths


def _failure_message(log: Any, max_retries: int, timeout: int | None = None) -> str:
    """One line saying why inspect's run failed (the first sample error if there is one)."""
    errors = [log.error.message] if log.error else []
    errors += [s.error.message for s in log.samples or [] if s.error]
    # Under fail_on_error the other samples are cancelled: the cause is the one that is not.
    causes = [e for e in errors if e and "CancelledError" not in e]
    error = (causes or errors or [""])[0]
    first = next((line.strip() for line in (error or "").splitlines() if line.strip()), "")
    gave_up = re.search(r"RetryError\(.*raised (\w+)", first)
    if "AttemptTimeoutError" in error or "attempt_timeout" in error:
        return f"the model provider did not answer within --timeout {timeout} s (after {max_retries} retries)"
    if re.search(r"JSONDecodeError|not valid JSON|Expecting value|APIResponseValidationError", error):
        return f"the provider's answer was not valid JSON (after {max_retries} retries)"
    if gave_up:
        return f"the model provider kept failing ({gave_up.group(1)}) after the allowed retries (--max-retries {max_retries})"
    return first[:400] or f"status {log.status}"


def _resolve(paths: list[str], kind: str) -> list[Any]:
    """Input paths with default names resolved; `hf:` datasets are kept as strings."""
    return [p if is_hf(p) else resolve_inputs([p], kind)[0] for p in paths] if paths else resolve_inputs(None, kind)


def _hf_files(corpus: Any, stage: Path) -> tuple[list[str], list[str]]:
    """The corpus read from `hf:` inputs, written as files for the inspect task (its solver and
    scorer read each sample's trace and labels by path); removed when the run ends."""
    base = stage / "hf-inputs"
    (base / "labels").mkdir(parents=True, exist_ok=True)
    for tid, trace in corpus.traces.items():
        write_json_atomic(base / "traces" / f"{tid}.json", trace.to_json())
    for tid, lab in corpus.labels.items():
        (base / "labels" / f"{tid}.yaml").write_text(lab.text or "", encoding="utf-8")
    return [str(base / "traces")], [str(base / "labels")]


@contextlib.contextmanager
def _no_log_without_answers(log_dir: Path) -> Iterator[None]:
    """A run stopped because a `recorded/` model lacks answers leaves nothing behind, not even
    inspect's log (nothing was measured: the answers were placeholders)."""
    existed = log_dir.exists()
    try:
        yield
    except MissingAnswers:
        if not existed:
            shutil.rmtree(log_dir, ignore_errors=True)
            with contextlib.suppress(OSError):
                log_dir.parent.rmdir()  # `<out>/logs`, when this run made it
        raise


def run_recall(config: RecallConfig, out_dir: Path, *, on_plan: Callable[[int], None] | None = None,
               with_samples: bool = True) -> dict[str, Any]:
    """Evaluate every prompt on every sample; write `out_dir/results.json` and the logs.

    `on_plan` is told the number of samples inspect will run (samples x prompts x epochs)
    once the inputs are checked and before any runs, so a progress bar starts at its real total.

    The run streams: each sample's record is written to disk and counted into the
    statistics as it is read from inspect's log, so memory does not grow with the number of
    samples. The document returned holds them (`samples`, read back from results.json) only
    with `with_samples`; without it, everything else (the leaderboard rows, corpus, files):
    what a command that prints the leaderboard needs, at the memory of a small run.

    Inputs are checked before anything runs; `out_dir` appears only when the run succeeded.
    A rerun of a killed run (same `out_dir`) clears the killed attempt's staging directory
    and resumes through the generate cache (real models): finished calls cost nothing.
    Raises ContractError for bad input and RunFailed when inspect reports a failure.
    """
    config.check()
    out_dir = check_run_path(out_dir).resolve()
    fix_mmap_threshold()  # a long run's freed buffers go back to the system (contracts.heap)
    # results.json records where the inputs were read (absolute: a report renders from any
    # directory) and the paths as given (found again when a run directory is moved).
    given = {kind: [str(p) for p in getattr(config, kind)] for kind in ("traces", "labels", "prompts")}
    resolved = {kind: [hf_absolute(p) if is_hf(p) else str(p.resolve()) for p in _resolve(paths, kind)] for kind, paths in given.items()}
    config = replace(config, traces=resolved["traces"], labels=resolved["labels"], prompts=resolved["prompts"])
    if redacting():  # a command run with --redact redacts every recall run it makes (tune's rounds too)
        config = replace(config, redact=True)
    # traces read when used, one at a time: a large corpus is never all in memory (TraceFiles)
    corpus = load_corpus(config.traces, config.labels, points=config.points, lazy=True)
    from_hf = any(map(is_hf, [*config.traces, *config.labels]))
    if from_hf and config.redact:
        raise ContractError([Problem("--redact", "", "not available with hf: inputs (redact the files, then export them)")])
    settings = config.compaction
    empty = empty_span_problems(corpus, settings.keep_last)
    if empty:
        raise ContractError(empty)
    candidates = load_candidates(config.prompts)
    require_span(candidates, settings.shape)  # else every sample scores 0% and the run "succeeds"
    if on_plan is not None:
        on_plan(sum(1 for _ in corpus.samples()) * len(candidates) * config.epochs)
    corpus_summary = corpus_stats(corpus)
    from inspect_ai.model import get_model

    from compaction_eval.compaction.cache import warm_up
    from compaction_eval.compaction.session import eval_or_interrupt  # inspect's eval, Ctrl-C kept
    from compaction_eval.recall.task import fact_recall

    # inspect's log is written where it stays, failed or not, so `inspect view` and
    # `inspect eval-retry` find it and the path inspect prints is the final one; a succeeded
    # run also gets it inside its run directory (hard-linked where possible).
    log_dir = kept_log_dir(out_dir)
    with _no_log_without_answers(log_dir), staged_run_dir(out_dir) as stage:
        (stage / PID_FILE).write_text(str(os.getpid()))
        resumed = clear_interrupted(out_dir, keep=stage)
        if resumed:
            print(f"note: resuming {out_dir.name}: cleared {len(resumed)} interrupted attempt(s); finished model calls come from the cache", file=sys.stderr)
        traces, labels = config.traces, config.labels
        redactions: dict[str, int] = {}
        dropped: list[str] = []
        if from_hf:
            traces, labels = _hf_files(corpus, stage)
        # the task reads its own inputs: the whole corpus is not kept through the run
        del corpus
        focus = settings.focus
        if config.redact:
            traces, redactions = _redacted_traces(config, stage)
            labels = _redacted_labels(config, stage, dropped)
            if focus:
                counts: Counter = Counter(redactions)
                focus = redact_text(focus, counts)
                redactions = dict(counts)
        real = not config.offline_stand_in
        task = fact_recall(
            traces=traces,
            labels=labels,
            prompts=config.prompts,
            budget=settings.budget,
            keep_last=settings.keep_last,
            shape=settings.shape,
            focus=focus,
            judge_model=config.judge_model,
            cache=real,
            points=list(config.points),
        )
        if real:
            warm_up(config.model)  # nothing the first answers would wait for on the event loop
        model_args = provider_args(config.model, dict(config.model_args))
        model = get_model(config.model, **model_args) if model_args else config.model
        extra: dict[str, Any] = {}
        # inspect's live views cost CPU on every sample: the live metrics deep-copy every
        # score once per metric about once a second (unseen under display "none"), and the
        # realtime buffer writes every event to SQLite so a running eval can be watched. An
        # offline run is over in seconds: nobody watches it. The log written at the end is
        # the same (samples, scores, explanations; kept when the run fails).
        if config.display == "none":
            extra["score_display"] = False
        if not real:
            extra["log_realtime"] = False
        # From 1,000 samples on inspect holds a twentieth of the run's samples, whole
        # transcripts and all, before it writes them to the log (500 at 10,000): memory
        # that grew with the run. A fixed buffer (its default below 1,000) keeps it flat.
        extra["log_buffer"] = LOG_BUFFER
        if real:
            extra["extra_headers"] = cache_scope(config)
            if config.batch:
                extra["batch"] = True
        logs = eval_or_interrupt(
            task,
            model=model,
            log_dir=str(log_dir),
            display=config.display,
            epochs=config.epochs,
            max_connections=config.max_connections,
            max_retries=config.max_retries,
            **request_limits(config.timeout, config.max_retries),
            fail_on_error=True,
            retry_on_error=config.sample_retries,
            log_format="eval",
            **extra,
        )
        log = logs[0]
        shutil.rmtree(stage / "hf-inputs", ignore_errors=True)  # only needed while running
        if config.redact:
            for copies in ("redacted-traces", "redacted-labels"):  # only needed while running
                shutil.rmtree(stage / copies, ignore_errors=True)
        if log.status != "success":
            where = f"; inspect log: {log.location} (inspect view --log-dir {log_dir}; inspect eval-retry {log.location})" if log.location else ""
            raise RunFailed(f"inspect run failed ({log.status}): {_failure_message(log, config.max_retries, config.timeout)}{where}")
        inspect_log = adopt_log(log.location, stage / "logs") if log.location else None
        fields = {c.name: c.active_fields for c in candidates if c.fields}
        from compaction_eval.corpus.redact import redact_json

        results = {
            "schema": SCHEMA,
            "suite": "fact_recall",
            "run": out_dir.name,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": git_commit(),
            "model": config.model,
            "offline_stand_in": config.offline_stand_in,
            # who produced the verdicts (every figure below): the offline matcher or the judge
            "tier": "judge" if config.judge_model else "matcher",
            "figure_tiers": figure_tiers("judge" if config.judge_model else "matcher"),
            "judge_model": config.judge_model,
            "stand_in_note": (
                "extractive summariser: a deterministic sentence-selection baseline, not an LLM"
                if config.offline_stand_in
                else None
            ),
            # who wrote the answers of a `recorded/` model (None otherwise): never presented as API output
            "recorded_answers": recorded_provenance(),
            # model args may carry credentials (api_key=...): never write them verbatim
            "config": redact_json(config_json(config)),
            "redactions": {"replaced": redactions, "avoid_items_removed": dropped} if config.redact else None,
            "corpus": corpus_summary,
            "inspect_log": str(inspect_log.relative_to(stage)) if inspect_log else None,
            "inspect_log_kept": str(Path(log.location).resolve()) if log.location else None,
            "inputs_as_given": given,
        }
        # One sample at a time: its record goes to disk and into the running figures.
        totals, tally = RunTotals(), FactTally()
        with SpooledList(stage) as samples:
            for sample in log_samples(log.location) if log.location else ():
                record = _sample_record(sample)
                samples.append(record)
                totals.add(record)
                tally.add(record)
            if not samples:
                raise RunFailed("inspect returned no scored samples")
            results["samples"] = samples
            # each prompt's declared schema fields: the gate fails a candidate that stops asking for one
            results["prompts"] = [dict(row, fields=list(fields.get(row["prompt"], ()))) if row["prompt"] in fields else row
                                  for row in totals.rows({c.name: c.description for c in candidates})]
            # kept in k of N epochs per fact: the gate does not fail on facts that flicker
            results["fact_stability"] = tally.summary()
            write_json_atomic(stage / RESULTS_FILE, results)
        del results["samples"]
        if with_samples:  # read back: the same document a reader of results.json gets
            with (stage / RESULTS_FILE).open(encoding="utf-8") as fh:
                results = json.load(fh)
        (stage / PID_FILE).unlink()
    return results
