"""The options every command that calls a model shares, added in one place.

`add_session_flags` walks the parser built from `COMMANDS` and gives every subcommand with a
model option (`--model`, `--judge-model`, `--optimiser`) the session's flags it does not
define itself, so a command added later inherits them; `start_session` opens the one model
session (compaction.session) with them before the command runs:

- `--timeout` seconds per attempt, `--max-retries` (bounded), `--redact` (every request body);
- `--record FILE`: every answer a real provider gives is appended to FILE as it arrives
  (durable before the harness acts on it), for `recorded/FILE` to replay without a key;
- `--written-by TEXT`: who or what wrote the answers, stored with each recorded answer.
"""

from __future__ import annotations

import argparse

MODEL_OPTIONS = ("--model", "--judge-model", "--optimiser")
NOT_CALLING = ("requests",)  # `requests import --model` names who wrote answers: it calls nothing


def model_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each (sub)command that takes a model option: its name and its parser."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name in NOT_CALLING:
                    continue
                if any(opt in sub._option_string_actions for opt in MODEL_OPTIONS):
                    out[name] = sub
                for inner, deeper in model_commands(sub).items():
                    out[f"{name} {inner}"] = deeper
    return out


def add_session_flags(parser: argparse.ArgumentParser) -> None:
    from compaction_eval.cli.common import whole
    from compaction_eval.contracts.settings import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT

    for sub in model_commands(parser).values():
        known = sub._option_string_actions
        if "--timeout" not in known:
            sub.add_argument("--timeout", type=whole(1), default=DEFAULT_TIMEOUT, help=f"seconds per model request attempt (default: {DEFAULT_TIMEOUT})")
        if "--max-retries" not in known:
            sub.add_argument("--max-retries", type=whole(0), default=DEFAULT_MAX_RETRIES, help=f"retries per model call (default: {DEFAULT_MAX_RETRIES})")
        if "--redact" not in known:
            sub.add_argument("--redact", action="store_true", help="replace secret-looking strings in every request before it is sent to a model")
        if "--record" not in known:
            sub.add_argument("--record", metavar="FILE", help="append every answer of a real model to this recording as it arrives (replay it with --model recorded/FILE)")
            sub.add_argument("--written-by", help="who or what wrote the recorded answers (default: the model, through its API)")


def start_session(args: argparse.Namespace) -> None:
    """Apply the session flags of a parsed command (before it runs)."""
    from compaction_eval.compaction import recorded
    from compaction_eval.compaction.session import ModelSession, close_session, open_session

    recorded.stop_recording()
    close_session()
    if hasattr(args, "timeout") and hasattr(args, "record"):  # a command that calls a model
        open_session(ModelSession(timeout=args.timeout, max_retries=args.max_retries, redact=bool(getattr(args, "redact", False))))
    path = getattr(args, "record", None)
    if path:
        models = [getattr(args, name.lstrip("-").replace("-", "_"), None) for name in MODEL_OPTIONS]
        who = getattr(args, "written_by", None) or f"{', '.join(m for m in models if m)} through its API (compaction-eval --record)"
        recorded.start_recording(path, written_by=who)


DEFAULT_RECORDED = "fixtures/recorded"


def add_recorded_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--recorded", nargs="?", const=DEFAULT_RECORDED, metavar="MANIFEST",
                   help=f"reproduce a recorded LLM run offline: the corpus, prompts, settings and answers its manifest names (default: {DEFAULT_RECORDED})")


def end_session() -> None:
    from compaction_eval.compaction import recorded
    from compaction_eval.compaction.session import close_session

    recorded.stop_recording()
    close_session()


def apply_recorded_run(args: argparse.Namespace) -> None:
    """`run --recorded [MANIFEST]`: the run the manifest describes, answered by its recording
    (fact recall and the report; the recording holds no horizon or replay answers)."""
    if not getattr(args, "recorded", None):
        return
    from compaction_eval.compaction.recorded import read_manifest

    manifest = read_manifest(args.recorded)
    args.traces, args.labels, args.prompts = manifest.traces, manifest.labels, manifest.prompts
    args.points = manifest.points
    for name, value in manifest.settings.items():
        setattr(args, name, value)
    args.model = manifest.model
    args.judge_model = manifest.model if manifest.judge else None
    args.skip_horizon = args.skip_replay = True
