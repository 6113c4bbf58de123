"""`horizon`: long-horizon completion of every context configuration over every world."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from compaction_eval.cli.common import add_agent_model_arg, add_model_args, compaction_settings, run_dir, whole
from compaction_eval.cli.progress import emit_json, inspect_display, progress, wants_json, without_samples
from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import (
    DEFAULT_HORIZON_BUDGET,
    DEFAULT_HORIZON_PROMPT,
    HORIZON_COMPACTION,
)


def add_horizon_args(p: argparse.ArgumentParser, *, in_run: bool = False) -> None:
    """Options of the horizon suite; inside `run` they are prefixed `--horizon-`/kept distinct."""
    p.add_argument("--worlds", nargs="+", help="world ids (default: all 12)")
    p.add_argument("--size", choices=["small", "medium", "large"], default="small",
                   help="world size preset (default: small, fast; large has 2,000-line files)")
    from compaction_eval.horizon.policies.registry import (
        ALL_CONFIGS,
        RUN_CONFIGS,
        config_help,
    )

    default = RUN_CONFIGS if in_run else ALL_CONFIGS
    p.add_argument("--configs", nargs="+", default=list(default),
                   help=f"long-horizon configurations (default: {' '.join(default)}). {config_help()}")
    # `--model` is the compaction model in every command; the agent is `--agent-model`
    add_agent_model_arg(p, old=("--agent",) if in_run else ())
    if not in_run:
        add_model_args(p, old_model=("--compactor",))
        p.add_argument("--prompt", default=DEFAULT_HORIZON_PROMPT, help=f"candidate prompt used by `full` (default: {DEFAULT_HORIZON_PROMPT})")
        p.add_argument("--prompts-dir", default="prompts")
        p.add_argument("--budget", type=int, default=DEFAULT_HORIZON_BUDGET, help=f"summary budget of `full` in tokens (default: {DEFAULT_HORIZON_BUDGET})")
        p.add_argument("--out", default="results", help="parent directory of run directories (default: results)")
        p.add_argument("--run", help="run name (default: a timestamp)")
        from compaction_eval.cli.progress import add_output_args

        add_output_args(p)
    p.add_argument("--prices", help="JSON price table {provider/model: {input, output, ...}} (USD per Mtok) replacing the built-in one")
    p.add_argument("--price-model", help="price table entry to price the agent as (default: matched from the agent model; offline "
                                         "stand-ins: anthropic/claude-sonnet-4-5; a model not in the table: cost unknown)")
    p.add_argument("--max-samples", type=whole(1), help="concurrent samples per task")
    p.add_argument("--skip-horizon", action="store_true", help=argparse.SUPPRESS if not in_run else "run only the fact-recall suite")


def horizon_config(args: argparse.Namespace, *, in_run: bool = False):
    """The suite's configuration; inside `run` the compactor is run's `--model`."""
    from compaction_eval.horizon.prices import PRICES, load_prices, resolve_price
    from compaction_eval.horizon.runner import HorizonConfig

    prices = load_prices(args.prices) if args.prices else dict(PRICES)
    try:  # before anything runs: a --price-model the table does not price is bad input
        resolve_price(args.agent, prices, args.price_model)
    except ValueError as exc:
        raise ContractError([Problem("--price-model", "", str(exc).removeprefix(f"--price-model {args.price_model!r} "))]) from None
    return HorizonConfig(
        configs=list(args.configs),
        worlds=args.worlds,
        size=args.size,
        model=args.agent,
        compactor=args.model,
        prompt=_run_prompt(args) if in_run else args.prompt,
        prompts_dir=_run_prompts_dir(args) if in_run else args.prompts_dir,
        # inside `run`, --budget and friends are the recall suite's: `full` keeps its own
        compaction=HORIZON_COMPACTION if in_run else compaction_settings(args),
        prices=prices,
        price_model=args.price_model,
        display=inspect_display(args),
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
    return DEFAULT_HORIZON_PROMPT if DEFAULT_HORIZON_PROMPT in names else names[0]


def horizon_json(results: dict, out: Path) -> dict:
    """The horizon table as JSON: one row per configuration (samples stay in horizon.json)."""
    keep = ("agent", "offline_stand_in", "agent_note", "compactor", "size", "n_worlds", "worlds", "prompt", "cost_model", "ablation")
    return {**{k: results.get(k) for k in keep}, "configs": without_samples(results["configs"]),
            "files": {"horizon": str(out / "horizon.json")}}


def run_horizon_suite(config, out: Path, args: argparse.Namespace, *, existing: bool, bar=None) -> dict:
    """Run the suite with progress on stderr; raises HorizonFailed (bad configurations are
    a ContractError)."""
    from compaction_eval.horizon.policies.registry import known_config
    from compaction_eval.horizon.runner import run_horizon
    from compaction_eval.horizon.worlds import world_ids

    unknown = [c for c in config.configs if not known_config(c)]
    if unknown:
        raise ContractError([Problem("--configs", "", f"unknown configuration(s): {', '.join(unknown)}")])
    if not args.quiet:
        print(f"long horizon: agent {config.model}, {len(config.configs)} configuration(s) -> {out}", file=sys.stderr)
    with (contextlib.nullcontext(bar) if bar is not None else progress(args)) as bar:
        bar.expect(len(config.configs) * len(config.worlds or world_ids()), task="long_horizon")
        bar.set_phase("long horizon")
        return run_horizon(config, out, existing=existing)


def run_and_print(config, out: Path, args: argparse.Namespace, *, existing: bool) -> int:
    """Run the suite, print the table (or JSON) and where the results are; 0 ok, 1 failed."""
    from compaction_eval.horizon.runner import HorizonFailed
    from compaction_eval.report.horizon_table import format_horizon

    try:
        results = run_horizon_suite(config, out, args, existing=existing)
    except HorizonFailed as exc:
        print(f"compaction-eval: error: {exc}", file=sys.stderr)
        return 1
    if wants_json(args):
        emit_json({"command": "horizon", **horizon_json(results, out)})
        return 0
    print(format_horizon(results))
    print(f"horizon results: {out / 'horizon.json'}")
    return 0


def cmd_horizon(args: argparse.Namespace) -> int:
    return run_and_print(horizon_config(args), run_dir(args), args, existing=False)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("horizon", help="long-horizon completion of every configuration over every world; writes results/<run>/horizon.json")
    add_horizon_args(p)
    p.set_defaults(func=cmd_horizon)
