"""Arguments and command body of `compaction-eval horizon` (kept out of cli.py, which is shared)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compaction_eval.horizon.runner import DEFAULT_ALL_CONFIGS, HorizonConfig

# `run` keeps to the configurations that finish fast offline; `horizon` runs all of them.
RUN_CONFIGS = ("baseline", "eviction", "full", "baseline-mutated", "inspect-edit", "inspect-trim")


def add_horizon_args(p: argparse.ArgumentParser, *, in_run: bool = False) -> None:
    """Options of the horizon suite; inside `run` they are prefixed `--horizon-`/kept distinct."""
    p.add_argument("--worlds", nargs="+", help="world ids (default: all 12)")
    p.add_argument("--size", choices=["small", "medium", "large"], default="small",
                   help="world size preset (default: small, fast; large has 2,000-line files)")
    default = RUN_CONFIGS if in_run else DEFAULT_ALL_CONFIGS
    p.add_argument("--configs", nargs="+", default=list(default),
                   help=f"long-horizon configurations (default: {' '.join(default)}); also module:Class")
    p.add_argument("--agent" if in_run else "--model", dest="agent", default="scripted/default",
                   help="the agent model (default: the offline scripted agent, not an LLM)")
    if not in_run:
        p.add_argument("--compactor", default="extractive/default", help="model of the compactor role (default: the offline extractive summariser)")
        p.add_argument("--prompt", default="handoff", help="candidate prompt used by `full` (default: handoff)")
        p.add_argument("--prompts-dir", default="prompts")
        p.add_argument("--budget", type=int, default=600, help="summary budget of `full` in tokens")
        p.add_argument("--out", default="results", help="parent directory of run directories (default: results)")
        p.add_argument("--run", help="run name (default: a timestamp)")
        p.add_argument("--display", default="plain", choices=["none", "plain", "rich", "full", "conversation"])
    p.add_argument("--prices", help="JSON price table {model: {input, output, ...}} (USD per Mtok)")
    p.add_argument("--price-model", help="entry of the price table to use (default: matched from the agent model)")
    p.add_argument("--max-samples", type=int, help="concurrent samples per task")
    p.add_argument("--skip-horizon", action="store_true", help=argparse.SUPPRESS if not in_run else "run only the fact-recall suite")


def horizon_config(args: argparse.Namespace, *, in_run: bool = False) -> HorizonConfig:
    """The suite's configuration; inside `run` the compactor is run's `--model`."""
    from compaction_eval.horizon.prices import PRICES, load_prices

    prices = load_prices(args.prices) if args.prices else dict(PRICES)
    if args.price_model and args.price_model not in prices:
        raise ValueError(f"--price-model {args.price_model!r} is not in the price table ({', '.join(prices)})")
    return HorizonConfig(
        configs=list(args.configs),
        worlds=args.worlds,
        size=args.size,
        model=args.agent,
        compactor=args.model if in_run else args.compactor,
        prompt=_run_prompt(args) if in_run else args.prompt,
        prompts_dir=_run_prompts_dir(args) if in_run else args.prompts_dir,
        budget=600 if in_run else args.budget,
        prices=prices,
        price_model=args.price_model,
        display=args.display,
        max_samples=args.max_samples,
    )


def _run_prompts_dir(args: argparse.Namespace) -> str:
    """Inside `run`, the candidate prompts are run's `--prompts` (first directory given)."""
    for p in getattr(args, "prompts", None) or []:
        return str(Path(p) if Path(p).is_dir() else Path(p).parent)
    return "prompts"


def _run_prompt(args: argparse.Namespace) -> str:
    """`handoff` when the prompts offer it, else the first candidate."""
    from compaction_eval.contracts.prompts import load_candidates

    names = [c.name for c in load_candidates([Path(_run_prompts_dir(args))])]
    return "handoff" if "handoff" in names else names[0]


def run_and_print(config: HorizonConfig, out: Path, *, existing: bool) -> int:
    """Run the suite, print the table and where the results are; 0 ok, 1 failed."""
    from compaction_eval.horizon.policies.resolve import known_config
    from compaction_eval.horizon.runner import HorizonFailed, run_horizon
    from compaction_eval.report.horizon_table import format_horizon

    unknown = [c for c in config.configs if not known_config(c)]
    if unknown:
        print(f"compaction-eval: error: unknown configuration(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    print(f"long horizon: agent {config.model}, {len(config.configs)} configuration(s) -> {out}", file=sys.stderr)
    try:
        results = run_horizon(config, out, existing=existing)
    except HorizonFailed as exc:
        print(f"compaction-eval: error: {exc}", file=sys.stderr)
        return 1
    print(format_horizon(results))
    print(f"horizon results: {out / 'horizon.json'}")
    return 0
