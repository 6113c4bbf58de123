"""`compaction-eval replay | decay | probes`: what an agent still knows after compaction.

Each command writes its file (`replay.json`, `decay.json`, `probes.json`) into a new run
directory `--out/--run`, or adds it to an existing run directory with `--into DIR`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compaction_eval.cli.common import DEFAULT_LABELS, DEFAULT_PROMPTS, DEFAULT_TRACES, add_model_args, run_dir, whole
from compaction_eval.contracts.settings import DEFAULT_BUDGET, DEFAULT_KEEP_LAST, HORIZON_COMPACTION

COMMANDS = {
    "replay": "replay recorded traces under context policies at several windows: visible facts, tokens, compactions, cost",
    "decay": "chains of K compactions (each summarising the previous summary plus what followed): survival per category",
    "probes": "ask questions generated from the labels with only the compacted context; grade with the recall matchers",
}


def register(sub: argparse._SubParsersAction) -> None:
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--traces", nargs="+", default=DEFAULT_TRACES, help=f"trace files or directories (default: {' '.join(DEFAULT_TRACES)})")
        p.add_argument("--labels", nargs="+", default=DEFAULT_LABELS, help=f"labels files or directories (default: {' '.join(DEFAULT_LABELS)})")
        p.add_argument("--prompts", nargs="+", default=DEFAULT_PROMPTS, help="candidate prompts (files or directories)")
        add_model_args(p)
        p.add_argument("--max-traces", type=whole(1), help="use only the first N labelled traces")
        p.add_argument("--max-retries", type=whole(0), default=4)
        p.add_argument("--timeout", type=whole(1), default=120)
        p.add_argument("--out", default="results", help="parent directory of run directories (default: results)")
        p.add_argument("--run", help="run name (default: a timestamp)")
        p.add_argument("--into", help="add the file to this existing run directory instead of creating one")
        p.add_argument("--force", action="store_true", help="with --into: replace the file if the run directory has it already")
        if name == "replay":
            p.add_argument("--policies", nargs="+", default=["baseline", "eviction", "full"],
                           help="context policies: baseline, eviction, full, inspect-*, module:Class")
            p.add_argument("--windows", nargs="+", type=whole(1), default=[12000, 24000], help="context windows in tokens")
            p.add_argument("--prompt", default="handoff", help="candidate prompt of `full`")
            p.add_argument("--budget", type=int, default=HORIZON_COMPACTION.budget, help=f"summary budget of `full` (default: {HORIZON_COMPACTION.budget})")
            p.add_argument("--price-model", help="entry of the price table (default: matched from --model)")
        elif name == "decay":
            p.add_argument("--k", type=whole(1), default=5, help="compactions in each chain (default 5)")
            p.add_argument("--budget", type=int, default=HORIZON_COMPACTION.budget, help=f"summary budget of each compaction (default: {HORIZON_COMPACTION.budget})")
            p.add_argument("--only-prompts", nargs="+", help="prompt names to run (default: all)")
        else:
            p.add_argument("--reader", help="model answering the probes (default: reader/default offline, else --model)")
            p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"summary budget of the compaction (default: {DEFAULT_BUDGET})")
            p.add_argument("--keep-last", type=int, default=DEFAULT_KEEP_LAST, help=f"messages kept verbatim at the end (default: {DEFAULT_KEEP_LAST})")
            p.add_argument("--only-prompts", nargs="+", help="prompt names to run (default: all)")
        from compaction_eval.cli.progress import add_output_args

        add_output_args(p, display=False)
        p.set_defaults(func=cmd_replay, mode=name)


def config_from(args: argparse.Namespace):
    from compaction_eval.cli.common import compaction_settings
    from compaction_eval.replay.run import ReplayRunConfig

    config = ReplayRunConfig(traces=args.traces, labels=args.labels, prompts=args.prompts, model=args.model,
                             compaction=compaction_settings(args), max_traces=args.max_traces, max_retries=args.max_retries,
                             timeout=args.timeout)
    if args.mode == "replay":
        config.policies, config.windows = list(args.policies), list(args.windows)
        config.policy_prompt, config.price_model = args.prompt, args.price_model
    elif args.mode == "decay":
        config.k, config.decay_prompts = args.k, args.only_prompts
    else:
        config.reader, config.probe_prompts = args.reader, args.only_prompts
    return config


def cmd_replay(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.problems import ContractError
    from compaction_eval.replay.run import FILES, run_modes

    config = config_from(args)
    out = Path(args.into) if args.into else run_dir(args)
    if not args.quiet:
        print(f"{args.mode}: model {config.model} -> {out}", file=sys.stderr)
    try:
        results = run_modes(config, out, (args.mode,), existing=bool(args.into), force=args.force)
    except ContractError:
        raise
    except (RuntimeError, ValueError) as exc:
        print(f"compaction-eval: error: {exc}", file=sys.stderr)
        return 1
    data = results[args.mode]
    if getattr(args, "format", "text") == "json":
        from compaction_eval.cli.progress import emit_json, without_samples

        rows = "policies" if args.mode == "replay" else "prompts"
        head = {k: v for k, v in data.items() if k not in (rows, "traces", "synthetic_traces")}
        emit_json({"command": args.mode, **head, "traces": data.get("traces"),
                   rows: without_samples(data[rows], ("samples", "traces")), "files": {args.mode: str(out / FILES[args.mode])}})
        return 0
    from compaction_eval.report.replay_view import format_mode

    print(format_mode(args.mode, data))
    print(f"{args.mode} results: {out / FILES[args.mode]}")
    return 0
