"""Run the long-horizon suite through inspect and write `results/<run>/horizon.json`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compaction_eval.contracts.paths import resolve_input
from compaction_eval.contracts.runfiles import (
    PID_FILE,
    adopt_log,
    clear_interrupted,
    kept_log_dir,
    request_limits,
    staged_run_dir,
    write_json_atomic,
)
from compaction_eval.contracts.settings import (
    DEFAULT_AGENT,
    DEFAULT_MODEL,
    HORIZON_COMPACTION,
    CompactionSettings,
    is_stand_in,
)
from compaction_eval.horizon.ablation import cache_ablation
from compaction_eval.horizon.measure import config_summary, sample_record
from compaction_eval.horizon.policies.registry import ALL_CONFIGS
from compaction_eval.horizon.prices import PRICES, PriceTable, resolve_price
from compaction_eval.horizon.worlds import world_ids

if TYPE_CHECKING:
    from inspect_ai.util import DisplayType  # inspect is imported only when something runs

SCHEMA = "compaction-eval/horizon@1"
HORIZON_FILE = "horizon.json"
LOG_SUBDIR = "horizon-logs"


class HorizonFailed(RuntimeError):
    """An inspect task of the suite ended with an error status."""


@dataclass
class HorizonConfig:
    """What to run.

    Args:
        configs: configuration names (see policies.resolve).
        worlds: world ids (None: all).
        size: world size preset.
        model: the agent model.
        compactor: model of the `compactor` role (summaries of `full` and `inspect-summary`).
        prompt, prompts_dir, output_reserve: see horizon.task.long_horizon.
        compaction: how `full` compacts (budget, keep_last, focus; the span is rendered
            inline, so `shape: messages` is refused).
        prices: price table; price_model: its entry (default: matched from `model`; offline
            stand-ins are priced as the reference model; a model the table does not price
            has cost None, "unknown").
        seconds_per_request: simulated time between requests for the cache TTL.
        display: inspect display; max_samples: concurrent samples per task.
    """

    configs: list[str] = field(default_factory=lambda: list(ALL_CONFIGS))
    worlds: list[str] | None = None
    size: str = "small"
    model: str = DEFAULT_AGENT
    compactor: str = DEFAULT_MODEL
    prompt: str = "handoff"
    prompts_dir: str = "prompts"
    compaction: CompactionSettings = HORIZON_COMPACTION
    output_reserve: int = 512
    prices: dict[str, PriceTable] = field(default_factory=lambda: dict(PRICES))
    price_model: str | None = None
    seconds_per_request: float = 5.0
    display: DisplayType = "plain"
    max_samples: int | None = None

    def __post_init__(self) -> None:
        self.compaction.require_inline("the long-horizon suite")


def run_horizon(config: HorizonConfig, out: Path, *, existing: bool = False) -> dict[str, Any]:
    """Run every configuration over every world; write `out/horizon.json` and the logs.

    Args:
        out: the run directory; built atomically unless `existing` (then it must exist and
            the file is added to it atomically, as `compaction-eval run` does).
    """
    if existing:
        return _run_into(config, Path(out), Path(out))
    with staged_run_dir(Path(out)) as staging:
        (staging / PID_FILE).write_text(str(os.getpid()))
        # A killed earlier attempt: redo it; its completed calls come from the generate cache.
        if clear_interrupted(Path(out), keep=staging):
            print(f"note: resuming {Path(out).name}: finished model calls come from the cache", file=sys.stderr)
        result = _run_into(config, staging, Path(out))
        (staging / PID_FILE).unlink(missing_ok=True)
        return result


def _run_into(config: HorizonConfig, directory: Path, final: Path) -> dict[str, Any]:
    from compaction_eval.compaction.session import bounded_model, eval_or_interrupt  # inspect's eval, Ctrl-C kept
    from compaction_eval.horizon.task import horizon_task_settings, long_horizon

    ids = config.worlds or world_ids()
    tasks = [
        long_horizon(config=c, worlds=ids, size=config.size, prompt=config.prompt, prompts_dir=str(resolve_input(config.prompts_dir).resolve()),
                     output_reserve=config.output_reserve, compactor=config.compactor, **horizon_task_settings(config.compaction))
        for c in config.configs
    ]
    # inspect's logs are written where they stay, failed or not (as the recall suite does), so
    # `inspect view` and `inspect eval-retry` find them; a run that succeeds also holds them
    # in its run directory (hard-linked where possible).
    log_dir = kept_log_dir(final) / LOG_SUBDIR
    logs = eval_or_interrupt(
        tasks, model=bounded_model(config.model), model_roles={"compactor": bounded_model(config.compactor)}, log_dir=str(log_dir),
        display=config.display, max_samples=config.max_samples, max_tasks=1, fail_on_error=True, score_display=False,
        # inspect retries forever by default: a real provider's outage must end the run
        max_retries=4, **request_limits(120, 4), retry_on_error=1,
    )
    failed = [f"{log.eval.task}: {log.status} ({_first_line(log.error.message) if log.error else 'no error message'})"
              for log in logs if log.status != "success"]
    if failed:
        kept = [str(log.location) for log in logs if log.location]
        where = f"; inspect logs kept in {log_dir} (inspect view --log-dir {log_dir}; inspect eval-retry LOG)" if kept else ""
        raise HorizonFailed("long-horizon task(s) did not finish: " + "; ".join(failed) + where)
    pricing = resolve_price(config.model, config.prices, config.price_model)
    price = pricing.price
    summaries = []
    for name, log in zip(config.configs, logs, strict=True):
        samples = [sample_record(s, price, seconds_per_request=config.seconds_per_request) for s in log.samples or []]
        samples.sort(key=lambda s: s["world"] or "")
        summary = config_summary(name, samples)
        summary["inspect_log"] = str(Path(LOG_SUBDIR) / adopt_log(log.location, directory / LOG_SUBDIR).name)
        summary["inspect_log_kept"] = str(Path(str(log.location).removeprefix("file://")).resolve())
        summaries.append(summary)
    offline = is_stand_in(config.model)
    results = {
        "schema": SCHEMA,
        "suite": "long_horizon",
        "agent": config.model,
        "offline_stand_in": offline,
        "agent_note": "scripted agent, not an LLM: it follows the reference plan and answers only from what is visible in its window" if offline else None,
        "compactor": config.compactor,
        "size": config.size,
        "n_worlds": len(ids),
        "worlds": ids,
        "prompt": config.prompt,
        "compaction": config.compaction.to_json(),  # optional (horizon@1): how `full` compacted
        "cost_model": {
            **pricing.to_json(), "seconds_per_request": config.seconds_per_request,
            "source": "simulated from the request sequence" if all(s["cost_source"] == "simulated" for c in summaries for s in c["samples"]) else "provider-reported cache usage",
        },
        "configs": summaries,
        "ablation": cache_ablation(summaries),
    }
    write_json_atomic(directory / HORIZON_FILE, results)
    return results


def _first_line(message: str) -> str:
    return next((line.strip() for line in (message or "").splitlines() if line.strip()), "")[:400]
