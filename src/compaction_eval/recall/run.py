"""Run the fact-recall suite end to end: check inputs, eval, aggregate, write results.json."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.prompts import load_candidates
from compaction_eval.contracts.runfiles import (
    PID_FILE,
    RESULTS_FILE,
    SCHEMA,
    clear_interrupted,
    staged_run_dir,
    write_json_atomic,
)
from compaction_eval.corpus.load import load_corpus
from compaction_eval.corpus.stats import corpus_stats
from compaction_eval.recall.aggregate import summarise_prompts
from compaction_eval.recall.stability import stability_summary

# Providers that are deterministic stand-ins, not LLMs: their results say so everywhere.
OFFLINE_STAND_INS = ("extractive/",)


class RunFailed(RuntimeError):
    """inspect reported a failed run (it exits 0 even then)."""


@dataclass
class RecallConfig:
    """What one recall run evaluates and how.

    Args:
        traces, labels, prompts: files or directories.
        model: the compaction model (`extractive/default` offline, `anthropic/<name>` real).
        budget: summary budget in tokens; keep_last: messages kept verbatim at the end.
        shape: `inline` or `messages`; focus: optional focus instruction.
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
    """

    traces: list[str] = field(default_factory=lambda: ["fixtures/traces"])
    labels: list[str] = field(default_factory=lambda: ["labels"])
    prompts: list[str] = field(default_factory=lambda: ["prompts"])
    model: str = "extractive/default"
    budget: int = 800
    keep_last: int = 4
    shape: str = "inline"
    focus: str | None = None
    judge_model: str | None = None
    epochs: int = 1
    max_connections: int = 8
    max_retries: int = 4
    timeout: int = 120
    display: str = "none"
    model_args: dict[str, Any] = field(default_factory=dict)
    batch: bool = False
    redact: bool = False
    sample_retries: int = 1

    @property
    def offline_stand_in(self) -> bool:
        return self.model.startswith(OFFLINE_STAND_INS)


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _sample_record(sample: Any) -> dict[str, Any]:
    score = next(iter(sample.scores.values()))
    detail = score.metadata["summary_score"]
    compacted = score.metadata["compacted"]
    meta = sample.metadata
    return {
        "trace": meta["trace"],
        "point": meta["point"],
        "prompt": meta["prompt"],
        "epoch": sample.epoch,
        "synthetic": meta["synthetic"],
        **detail,
        "context_recall": score.value["context_recall"],
        "context": score.metadata["context_score"],
        "summary": compacted["summary"],
        "summary_tokens": compacted["summary_tokens"],
        "raw_summary_tokens": compacted["raw_summary_tokens"],
        "span_tokens": compacted["span_tokens"],
        "history_tokens": compacted["history_tokens"],
        "context_tokens": compacted["context_tokens"],
        "compression": score.value["compression"],
        "budget": compacted["budget"],
        "budget_truncated": compacted["raw_summary_tokens"] > compacted["summary_tokens"],
        "input_tokens": compacted["input_tokens"],
        "output_tokens": compacted["output_tokens"],
        "cache_read_tokens": compacted["cache_read_tokens"],
        "cache_write_tokens": compacted["cache_write_tokens"],
        "kept_span": compacted["split"],
    }


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

    from compaction_eval.corpus.load import label_paths
    from compaction_eval.corpus.redact import redact_json, redact_text

    out = stage / "redacted-labels"
    paths = []
    for i, src in enumerate(label_paths(config.labels)):
        data = yaml.safe_load(src.read_text(encoding="utf-8"))
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


def _failure_message(log: Any, max_retries: int) -> str:
    """One line saying why inspect's run failed (the first sample error if there is one)."""
    errors = [log.error.message] if log.error else []
    errors += [s.error.message for s in log.samples or [] if s.error]
    # Under fail_on_error the other samples are cancelled: the cause is the one that is not.
    causes = [e for e in errors if e and "CancelledError" not in e]
    error = (causes or errors or [""])[0]
    first = next((line.strip() for line in (error or "").splitlines() if line.strip()), "")
    gave_up = re.search(r"RetryError\(.*raised (\w+)", first)
    if gave_up:
        return f"the model provider kept failing ({gave_up.group(1)}) after the allowed retries (--max-retries {max_retries})"
    return first[:400] or f"status {log.status}"


def run_recall(config: RecallConfig, out_dir: Path) -> dict[str, Any]:
    """Evaluate every prompt on every sample; write `out_dir/results.json` and the logs.

    Inputs are checked before anything runs; `out_dir` appears only when the run succeeded.
    A rerun of a killed run (same `out_dir`) clears the killed attempt's staging directory
    and resumes through the generate cache (real models): finished calls cost nothing.
    Raises ContractError for bad input and RunFailed when inspect reports a failure.
    """
    out_dir = Path(out_dir).resolve()
    corpus = load_corpus(config.traces, config.labels)
    candidates = load_candidates(config.prompts)
    from inspect_ai import eval as inspect_eval  # slow import: only when something runs
    from inspect_ai.model import get_model

    from compaction_eval.recall.task import fact_recall

    with staged_run_dir(out_dir) as stage:
        (stage / PID_FILE).write_text(str(os.getpid()))
        resumed = clear_interrupted(out_dir, keep=stage)
        if resumed:
            print(f"note: resuming {out_dir.name}: cleared {len(resumed)} interrupted attempt(s); finished model calls come from the cache", file=sys.stderr)
        traces, labels, redactions, dropped = config.traces, config.labels, {}, []
        if config.redact:
            traces, redactions = _redacted_traces(config, stage)
            labels = _redacted_labels(config, stage, dropped)
        real = not config.offline_stand_in
        task = fact_recall(
            traces=traces,
            labels=labels,
            prompts=config.prompts,
            budget=config.budget,
            keep_last=config.keep_last,
            shape=config.shape,
            focus=config.focus,
            judge_model=config.judge_model,
            cache=real,
        )
        model_args = dict(config.model_args)
        if config.model.startswith("anthropic/"):
            # The SDK retries on its own (twice by default) under inspect's retries, so
            # `max_retries` would multiply: leave retrying to inspect alone.
            model_args.setdefault("max_retries", 0)
        model = get_model(config.model, **model_args) if model_args else config.model
        extra: dict[str, Any] = {}
        if real:
            extra["extra_headers"] = cache_scope(config)
            if config.batch:
                extra["batch"] = True
        logs = inspect_eval(
            task,
            model=model,
            log_dir=str(stage / "logs"),
            display=config.display,
            epochs=config.epochs,
            max_connections=config.max_connections,
            max_retries=config.max_retries,
            timeout=config.timeout,
            fail_on_error=True,
            retry_on_error=config.sample_retries,
            log_format="eval",
            **extra,
        )
        log = logs[0]
        if config.redact:
            for copies in ("redacted-traces", "redacted-labels"):  # only needed while running
                shutil.rmtree(stage / copies, ignore_errors=True)
        if log.status != "success":
            raise RunFailed(f"inspect run failed ({log.status}): {_failure_message(log, config.max_retries)}")
        samples = [_sample_record(s) for s in log.samples or []]
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
            "stand_in_note": (
                "extractive summariser: a deterministic sentence-selection baseline, not an LLM"
                if config.offline_stand_in
                else None
            ),
            # model args may carry credentials (api_key=...): never write them verbatim
            "config": redact_json({k: v for k, v in asdict(config).items() if k not in ("display",)}),
            "redactions": {"replaced": redactions, "avoid_items_removed": dropped} if config.redact else None,
            "corpus": corpus_stats(corpus),
            "inspect_log": str(Path(log.location).resolve().relative_to(stage.resolve())) if log.location else None,
            "samples": samples,
            # each prompt's declared schema fields: the gate fails a candidate that stops asking for one
            "prompts": [dict(row, fields=list(fields.get(row["prompt"], ()))) if row["prompt"] in fields else row
                        for row in summarise_prompts(samples, {c.name: c.description for c in candidates})],
            # kept in k of N epochs per fact: the gate does not fail on facts that flicker
            "fact_stability": stability_summary({"samples": samples}),
        }
        if not samples:
            raise RunFailed("inspect returned no scored samples")
        write_json_atomic(stage / RESULTS_FILE, results)
        (stage / PID_FILE).unlink()
    return results
