"""Run replay, decay and probes over a labelled corpus; write `replay.json`, `decay.json`,
`probes.json` into a run directory (built atomically, or added atomically to an existing one).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from compaction_eval.contracts.paths import DEFAULTS
from compaction_eval.contracts.runfiles import (
    PID_FILE,
    staged_run_dir,
    write_json_atomic,
)
from compaction_eval.contracts.settings import HORIZON_COMPACTION, CompactionSettings
from compaction_eval.stats.bootstrap import bootstrap_mean_ci

REPLAY_FILE, DECAY_FILE, PROBES_FILE = "replay.json", "decay.json", "probes.json"
SCHEMAS = {"replay": "compaction-eval/replay@1", "decay": "compaction-eval/decay@1", "probes": "compaction-eval/probes@1"}
FILES = {"replay": REPLAY_FILE, "decay": DECAY_FILE, "probes": PROBES_FILE}
MODES = ("replay", "decay", "probes")
# each mode's compaction when a config names none: replay and decay compact like the
# long-horizon worlds (small windows), probes like the recall suite
MODE_COMPACTION = {"replay": HORIZON_COMPACTION, "decay": HORIZON_COMPACTION, "probes": CompactionSettings()}
STAND_IN_NOTE = ("offline stand-ins, not LLMs: extractive/default summarises by sentence selection; reader/default answers "
                 "probes by picking the context lines that best match the question")


@dataclass
class ReplayRunConfig:
    """What to run.

    Args:
        traces, labels, prompts: files or directories (any labelled corpus).
        model: the compaction model (`extractive/default` offline; `anthropic/<name>` real).
        reader: the model that answers probes (default: `reader/default` with an offline
            compaction model, else `model`).
        compaction: how each compaction is made (budget, keep_last, shape, focus), one value
            for every mode run; None: each mode's default (`settings_for`): the replay and
            decay budget of the long-horizon worlds (600), the recall suite's for probes (800).
        policies, windows, policy_prompt: replay (see replay.ReplaySettings).
        k: decay chain length.
        decay_prompts, probe_prompts: restrict to these prompt names (None: every prompt).
        max_traces: use only the first N labelled traces (None: all).
        max_retries, timeout: bounded retries for real providers.
        price_model: entry of the price table for replay costs (default: matched from `model`).
    """

    traces: list[str] = field(default_factory=lambda: list(DEFAULTS["traces"]))
    labels: list[str] = field(default_factory=lambda: list(DEFAULTS["labels"]))
    prompts: list[str] = field(default_factory=lambda: list(DEFAULTS["prompts"]))
    model: str = "extractive/default"
    reader: str | None = None
    policies: list[str] = field(default_factory=lambda: ["baseline", "eviction", "full"])
    windows: list[int] = field(default_factory=lambda: [12000, 24000])
    policy_prompt: str = "handoff"
    compaction: CompactionSettings | None = None
    k: int = 5
    decay_prompts: list[str] | None = None
    probe_prompts: list[str] | None = None
    max_traces: int | None = None
    max_retries: int = 4
    timeout: int = 120
    price_model: str | None = None

    def settings_for(self, mode: str) -> CompactionSettings:
        """The compaction settings `mode` runs with."""
        return self.compaction or MODE_COMPACTION[mode]

    @property
    def reader_model(self) -> str:
        from compaction_eval.contracts.settings import is_stand_in

        return self.reader or ("reader/default" if is_stand_in(self.model) else self.model)


def _header(mode: str, config: ReplayRunConfig, corpus: Any) -> dict[str, Any]:
    from compaction_eval.contracts.settings import is_stand_in

    models = [config.model] + ([config.reader_model] if mode == "probes" else [])
    offline = all(is_stand_in(m) for m in models)
    return {
        "schema": SCHEMAS[mode],
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "model": config.model,
        **({"reader": config.reader_model} if mode == "probes" else {}),
        "offline_stand_in": offline,
        # replay, decay and probes score with the offline matcher only (they take no judge)
        "tier": "matcher",
        "stand_in_note": STAND_IN_NOTE if any(is_stand_in(m) for m in models) else None,
        # the traces this mode used (--max-traces, the run's small configuration), not the corpus
        "traces": _trace_ids(config, corpus),
        "synthetic_traces": [t for t in _trace_ids(config, corpus) if corpus.labels[t].labelled_by == "generator"],
    }


def _ci(values: list[float]) -> list[float]:
    lo, hi = bootstrap_mean_ci(values)
    return [round(lo, 4), round(hi, 4)]


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


# ------------------------------------------------------------------------------ replay


def summarise_replay(runs: list[tuple[str, int, Any]]) -> list[dict[str, Any]]:
    """Per (policy, window): visible recall with its interval, by category, request kept."""
    grouped: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for policy, window, replayed in runs:
        grouped[(policy, window)].append(replayed)
    out = []
    for (policy, window), replays in grouped.items():
        samples = [s for r in replays for s in r.samples]
        recalls = [s["visible_recall"] for s in samples]
        by_cat: dict[str, list[float]] = defaultdict(list)
        for s in samples:
            for c, v in s["recall_by_category"].items():
                by_cat[c].append(v)
        out.append({
            "policy": policy, "window": window,
            "visible_recall": _mean(recalls), "visible_recall_ci": _ci(recalls) if recalls else None,
            "by_category": {c: _mean(v) for c, v in by_cat.items()},
            "request_visible": _mean([float(s["request_visible"]) for s in samples]),
            "overflow_samples": sum(s["overflow"] for s in samples),
            "compactions": _mean([float(r.totals["compactions"]) for r in replays]),
            "compaction_calls": sum(r.totals["compaction_calls"] for r in replays),
            "overflow_requests": sum(r.totals["overflows"] for r in replays),
            "pairing_problems": sum(len(r.totals["pairing_problems"]) for r in replays),
            "context_tokens": _mean([float(s["context_tokens"]) for s in samples]),
            "cost_usd": (None if any(r.totals["cost"]["cost_usd"] is None for r in replays)
                         else round(sum(r.totals["cost"]["cost_usd"] for r in replays), 6)),
            "cache_hit_rate": _mean([r.totals["cost"]["cache_hit_rate"] for r in replays]),
            "traces": [r.totals for r in replays],
            "samples": samples,
        })
    return out


async def _replay_all(config: ReplayRunConfig, corpus: Any, model: Any) -> list[tuple[str, int, Any]]:
    from compaction_eval.horizon.prices import resolve_price
    from compaction_eval.replay.replay import ReplaySettings, replay_trace

    prompts_dir = _prompts_dir(config)
    settings = ReplaySettings(policies=tuple(config.policies), windows=tuple(config.windows), prompt=config.policy_prompt,
                              prompts_dir=prompts_dir, compaction=config.settings_for("replay"))
    price = resolve_price(config.model, price_model=config.price_model).price  # None: unknown, costs null
    jobs = [(p, w, tid) for p in config.policies for w in config.windows for tid in _trace_ids(config, corpus)]
    results = await asyncio.gather(*[replay_trace(corpus.traces[t], corpus.labels[t], p, w, model, settings, price) for p, w, t in jobs])
    return [(p, w, r) for (p, w, _), r in zip(jobs, results, strict=True)]


# ------------------------------------------------------------------------------- decay


def summarise_decay(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per prompt: survival after k compactions with intervals over traces, by category,
    half-lives, and re-derivations counted apart."""
    from compaction_eval.replay.decay import trace_curve

    by_prompt: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_prompt[r["prompt"]].append(r)
    out = []
    for prompt, recs in by_prompt.items():
        recs = [r for r in recs if r["facts"]]
        k_max = max((r["k"] for r in recs), default=0)
        survival, by_category = [], defaultdict(list)
        for k in range(1, k_max + 1):
            at_k = [r for r in recs if r["k"] >= k]
            surv = [trace_curve(r, "survived")[k - 1] for r in at_k]
            present = [trace_curve(r, "kept")[k - 1] for r in at_k]
            redo = [x for r in at_k for f in r["facts"] for x in f["rederived"] if x["k"] == k]
            survival.append({"k": k, "survival": _mean(surv), "ci": _ci(surv), "present": _mean(present), "traces": len(at_k),
                             "facts": sum(len(r["facts"]) for r in at_k), "rederived": len(redo),
                             "rederived_from_tail": sum(x["from_tail"] for x in redo)})
            cats: dict[str, list[tuple[float, bool]]] = defaultdict(list)
            for r in at_k:
                for f in r["facts"]:
                    cats[f["category"]].append((f["weight"], f["survived"][k - 1]))
            for c, items in cats.items():
                total = sum(w for w, _ in items)
                by_category[c].append({"k": k, "survival": round(sum(w for w, s in items if s) / total, 4) if total else None,
                                       "facts": len(items)})
        curve = [s["survival"] for s in survival]
        out.append({
            "prompt": prompt, "traces": len(recs), "k_max": k_max,
            "survival": survival,
            "by_category": dict(by_category),
            "half_life": {c: _half_life([p["survival"] for p in pts]) for c, pts in by_category.items()},
            "overall_half_life": _half_life(curve),
            "monotone": all(b <= a for a, b in pairwise(curve)),
            "model_calls": sum(r["model_calls"] for r in recs),
            "samples": recs,
        })
    return out


def _half_life(curve: list[float | None]) -> int | None:
    """The number of compactions after which at most half is left (None: never reached)."""
    return next((k for k, v in enumerate(curve, start=1) if v is not None and v <= 0.5), None)


async def _decay_all(config: ReplayRunConfig, corpus: Any, candidates: list[Any], model: Any) -> list[dict[str, Any]]:
    from compaction_eval.replay.decay import DecaySettings, decay_chain

    settings = DecaySettings(k=config.k, compaction=config.settings_for("decay"))
    jobs = [(c, t) for c in _chosen(candidates, config.decay_prompts) for t in _trace_ids(config, corpus)]
    return list(await asyncio.gather(*[decay_chain(corpus.traces[t], corpus.labels[t], c, model, settings) for c, t in jobs]))


# ------------------------------------------------------------------------------ probes


def summarise_probes(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per prompt: probe accuracy with its interval over samples, by probe type, and by
    category beside summary and context recall (unweighted shares of facts)."""
    from compaction_eval.replay.probes import PROBE_TYPES

    by_prompt: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        by_prompt[s["prompt"]].append(s)
    out = []
    for prompt, recs in by_prompt.items():
        accs = [s["accuracy"] for s in recs if s["accuracy"] is not None]
        probes = [p for s in recs for p in s["probes"]]
        by_type = {t: _mean([float(p["correct"]) for p in probes if p["type"] == t]) for t in PROBE_TYPES}
        by_category = {}
        for c in dict.fromkeys(p["category"] for p in probes):
            items = [p for p in probes if p["category"] == c]
            by_category[c] = {"probe_accuracy": _mean([float(p["correct"]) for p in items]),
                              "summary_recall": _mean([float(p["in_summary"]) for p in items]),
                              "context_recall": _mean([float(p["in_context"]) for p in items]), "probes": len(items)}
        out.append({
            "prompt": prompt, "accuracy": _mean(accs), "accuracy_ci": _ci(accs) if accs else None,
            "by_type": by_type, "by_category": by_category,
            "summary_recall": _mean([s["summary_recall"] for s in recs]),
            "context_recall": _mean([s["context_recall"] for s in recs]),
            "usable_given_in_context": _mean([float(p["correct"]) for p in probes if p["in_context"]]),
            "probes": len(probes), "samples": recs,
        })
    return out


async def _probes_all(config: ReplayRunConfig, corpus: Any, candidates: list[Any], model: Any, reader: Any) -> list[dict[str, Any]]:
    from compaction_eval.replay.probes import ProbeSettings, probe_sample

    settings = ProbeSettings(compaction=config.settings_for("probes"))
    ids = set(_trace_ids(config, corpus))
    jobs = [(c, t, at) for c in _chosen(candidates, config.probe_prompts) for t, at in corpus.samples() if t in ids]
    return list(await asyncio.gather(*[probe_sample(corpus.traces[t], corpus.labels[t], at, c, model, reader, settings) for c, t, at in jobs]))


# -------------------------------------------------------------------------------- run


def _trace_ids(config: ReplayRunConfig, corpus: Any) -> list[str]:
    ids = sorted(corpus.labels)
    return ids[: config.max_traces] if config.max_traces else ids


def _chosen(candidates: list[Any], names: list[str] | None) -> list[Any]:
    return [c for c in candidates if names is None or c.name in names]


def _prompts_dir(config: ReplayRunConfig) -> str:
    for p in config.prompts:
        return str(Path(p).resolve() if Path(p).is_dir() else Path(p).resolve().parent)
    return "prompts"


def _check(config: ReplayRunConfig, modes: tuple[str, ...]) -> tuple[Any, list[Any]]:
    """Load and check every input before anything runs (ContractError naming file and place)."""
    from compaction_eval.contracts.problems import ContractError, Problem
    from compaction_eval.contracts.prompts import load_candidates, require_span
    from compaction_eval.corpus.load import load_corpus
    from compaction_eval.horizon.policies.registry import known_config

    bad = [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}: use {', '.join(MODES)}")
    for mode in set(modes) & {"replay", "decay"}:  # their compactions render the span inline
        config.settings_for(mode).require_inline(mode)
    corpus = load_corpus(config.traces, config.labels)
    candidates = load_candidates(config.prompts)
    if "decay" in modes:  # inline (checked above): each compaction must put the history in
        require_span(_chosen(candidates, config.decay_prompts), "inline")
    problems = []
    where = ", ".join(config.prompts)
    known = ", ".join(sorted(c.name for c in candidates))
    # the flags the user typed: `--only-prompts` (decay, probes), `--prompt` (replay's `full`)
    for names in (config.decay_prompts, config.probe_prompts):
        for n in names or []:
            if n not in {c.name for c in candidates}:
                problems.append(Problem("--only-prompts", "", f"no prompt named {n!r} in --prompts {where} (prompts: {known})"))
    if "replay" in modes:
        problems += [Problem("--policies", p, "unknown context policy") for p in config.policies if not known_config(p)]
        problems += [Problem("--windows", str(w), "a window must be at least 2,000 tokens") for w in config.windows if w < 2000]
        in_dir = {c.name for c in load_candidates([_prompts_dir(config)])}
        if "full" in config.policies and config.policy_prompt not in in_dir:
            problems.append(Problem("--prompt", "",
                                    f"no prompt named {config.policy_prompt!r} in --prompts {_prompts_dir(config)} "
                                    f"(prompts: {', '.join(sorted(in_dir))}): choose the `full` policy's prompt with --prompt NAME"))
    if config.k < 1:
        problems.append(Problem("--k", str(config.k), "at least one compaction"))
    if problems:
        raise ContractError(problems)
    return corpus, candidates


def compute(config: ReplayRunConfig, modes: tuple[str, ...] = MODES) -> dict[str, dict[str, Any]]:
    """Run `modes`; the content of each file by mode (nothing written)."""
    corpus, candidates = _check(config, modes)
    from compaction_eval.contracts.heap import fix_mmap_threshold
    from compaction_eval.replay.common import open_model

    fix_mmap_threshold()  # freed buffers go back to the system (contracts.heap)

    model = open_model(config.model, max_retries=config.max_retries, timeout=config.timeout)
    reader = open_model(config.reader_model, max_retries=config.max_retries, timeout=config.timeout) if "probes" in modes else None

    async def run_all() -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for mode in modes:
            started = time.perf_counter()
            head = _header(mode, config, corpus)
            body: dict[str, Any]
            if mode == "replay":
                from compaction_eval.horizon.prices import resolve_price

                body = {"policies": summarise_replay(await _replay_all(config, corpus, model)),
                        "cost_model": resolve_price(config.model, price_model=config.price_model).to_json(),
                        "settings": {"policies": config.policies, "windows": config.windows, "prompt": config.policy_prompt,
                                     **_mode_settings(config, "replay", "budget")}}
            elif mode == "decay":
                body = {"prompts": summarise_decay(await _decay_all(config, corpus, candidates, model)),
                        "settings": {"k": config.k, **_mode_settings(config, "decay", "budget")}}
            else:
                body = {"prompts": summarise_probes(await _probes_all(config, corpus, candidates, model, reader)),
                        "settings": _mode_settings(config, "probes", "budget", "keep_last")}
            out[mode] = {**head, **body, "seconds": round(time.perf_counter() - started, 2)}
        return out

    return asyncio.run(run_all())


def run_modes(config: ReplayRunConfig, out_dir: Path, modes: tuple[str, ...] = MODES, *, existing: bool = False,
              force: bool = False) -> dict[str, dict[str, Any]]:
    """Compute `modes` and write their files into `out_dir`: a new run directory that appears
    only when everything succeeded, or (`existing`) an existing run directory, each file
    atomically; a file already there is replaced only with `force`."""
    from dataclasses import replace

    from compaction_eval.contracts.paths import resolve_inputs

    # default names (`prompts`, `fixtures/traces`, ...) mean the project's or the package's data
    resolved = {kind: [str(p) for p in resolve_inputs(getattr(config, kind), kind)] for kind in ("traces", "labels", "prompts")}
    config = replace(config, traces=resolved["traces"], labels=resolved["labels"], prompts=resolved["prompts"])
    out_dir = Path(out_dir)
    if existing:
        if not out_dir.is_dir():
            from compaction_eval.contracts.problems import ContractError, Problem

            raise ContractError([Problem(str(out_dir), "", "run directory does not exist")])
        from compaction_eval.contracts.runfiles import RESULTS_FILE, check_overwrite, check_run_path

        check_run_path(out_dir)
        if not any((out_dir / name).is_file() for name in (RESULTS_FILE, "horizon.json", *FILES.values())):
            from compaction_eval.contracts.problems import ContractError, Problem

            raise ContractError([Problem(str(out_dir), "--into", "not a run directory (no results.json, horizon.json or replay file)")])
        for mode in modes:
            check_overwrite(out_dir / FILES[mode], force=force, flag="--into")
        results = compute(config, modes)
        for mode, data in results.items():
            data.update(_recorded())
            write_json_atomic(out_dir / FILES[mode], {**data, "config": _config_json(config)})
        return results
    with staged_run_dir(out_dir) as stage:
        (stage / PID_FILE).write_text(str(os.getpid()))
        results = compute(config, modes)
        for mode, data in results.items():
            data.update(_recorded())
            write_json_atomic(stage / FILES[mode], {**data, "config": _config_json(config)})
        (stage / PID_FILE).unlink()
    return results


def _recorded() -> dict[str, Any]:
    """`recorded_answers` when a `recorded/` model answered: who wrote the answers."""
    from compaction_eval.compaction.recorded import provenance

    found = provenance()
    return {"recorded_answers": found} if found else {}


def _mode_settings(config: ReplayRunConfig, mode: str, *flat: str) -> dict[str, Any]:
    """A file's `settings`: the keys it always had (`budget`, ...), then the whole
    `compaction` (optional)."""
    settings = config.settings_for(mode).to_json()
    return {**{k: settings[k] for k in flat}, "compaction": settings}


def _config_json(config: ReplayRunConfig) -> dict[str, Any]:
    """The files' `config`: the fields of `config`, plus each mode's compaction budget under
    the names the files always had (`policy_budget`, `decay_budget`, `probe_budget`, `keep_last`)."""
    out = asdict(config)
    out.update(policy_budget=config.settings_for("replay").budget, decay_budget=config.settings_for("decay").budget,
               probe_budget=config.settings_for("probes").budget, keep_last=config.settings_for("probes").keep_last)
    return out


SMALL: dict[str, Any] = {"policies": ["baseline", "eviction", "full"], "windows": [12000], "k": 5, "max_traces": 2}


def run_small(run_dir: Path, *, traces: list[str], labels: list[str], prompts: list[str], model: str = "extractive/default",
              prompt: str = "handoff") -> dict[str, dict[str, Any]]:
    """The small replay + decay configuration of `compaction-eval run`: the first two
    labelled traces, baseline/eviction/full at one 12k window, and a chain of 5 compactions
    with one prompt (`prompt` when the run has it, else the run's first prompt: a run of
    your own prompts alone has no `handoff`); written into the existing run directory `run_dir`."""
    from compaction_eval.contracts.paths import resolve_inputs
    from compaction_eval.contracts.prompts import load_candidates

    names = [c.name for c in load_candidates(resolve_inputs(prompts, "prompts"))]
    prompt = prompt if prompt in names else names[0]
    config = ReplayRunConfig(traces=list(traces), labels=list(labels), prompts=list(prompts), model=model,
                             policy_prompt=prompt, decay_prompts=[prompt], **SMALL)
    return run_modes(config, Path(run_dir), ("replay", "decay"), existing=True)
