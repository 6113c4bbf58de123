"""Run the fact-recall suite end to end: check inputs, eval, aggregate, write results.json."""

from __future__ import annotations

import datetime as _dt
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .aggregate import summarise_prompts
from .corpus import load_corpus
from .corpus_stats import corpus_stats
from .problems import ContractError
from .prompts import load_candidates
from .results import RESULTS_FILE, SCHEMA, staged_run_dir, write_json_atomic

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


def run_recall(config: RecallConfig, out_dir: Path) -> dict[str, Any]:
    """Evaluate every prompt on every sample; write `out_dir/results.json` and the logs.

    Inputs are checked before anything runs; `out_dir` appears only when the run succeeded.
    Raises ContractError for bad input and RunFailed when inspect reports a failure.
    """
    corpus = load_corpus(config.traces, config.labels)
    candidates = load_candidates(config.prompts)
    from inspect_ai import eval as inspect_eval  # slow import: only when something runs

    from .tasks.fact_recall import fact_recall

    with staged_run_dir(out_dir) as stage:
        task = fact_recall(
            traces=config.traces,
            labels=config.labels,
            prompts=config.prompts,
            budget=config.budget,
            keep_last=config.keep_last,
            shape=config.shape,
            focus=config.focus,
            judge_model=config.judge_model,
            cache=not config.offline_stand_in,
        )
        logs = inspect_eval(
            task,
            model=config.model,
            log_dir=str(stage / "logs"),
            display=config.display,
            epochs=config.epochs,
            max_connections=config.max_connections,
            max_retries=config.max_retries,
            timeout=config.timeout,
            fail_on_error=True,
            log_format="eval",
        )
        log = logs[0]
        if log.status != "success":
            error = log.error.message if log.error else f"status {log.status}"
            raise RunFailed(f"inspect run failed ({log.status}): {error.splitlines()[0] if error else ''}")
        samples = [_sample_record(s) for s in log.samples or []]
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
            "config": {k: v for k, v in asdict(config).items() if k not in ("display",)},
            "corpus": corpus_stats(corpus),
            "inspect_log": str(Path(log.location).relative_to(stage)) if log.location else None,
            "samples": samples,
            "prompts": summarise_prompts(samples, {c.name: c.description for c in candidates}),
        }
        if not samples:
            raise RunFailed("inspect returned no scored samples")
        write_json_atomic(stage / RESULTS_FILE, results)
    return results
