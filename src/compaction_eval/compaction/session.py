"""One model session for every command that calls a model.

Why: limits and redaction were added per command, and each command added later came without
them (a `decay --timeout 5` still waiting at 150 s, an unredacted trace sent by the small
replay of `run --redact`). The session is applied where every call passes, inspect's
`Model.generate`, so a command inherits it by calling a model at all:

- `--timeout` seconds per attempt and at most `--max-retries` retries (inspect's own retry
  loop, bounded: `contracts.runfiles.request_limits`);
- `--redact`: every text of every request (messages, tool-call arguments) is redacted before
  it leaves for a provider, whatever built it; the recorded request is the redacted one;
- an answer larger than `max_answer_chars` is refused (an endpoint ignoring `max_tokens`
  cannot fill memory or a results file);
- `--record FILE` (compaction.recorded): each answer appended to FILE as it arrives;
- the answer journal (compaction.journal) for the calls that use the generate cache.

Offline stand-ins are left alone (they send nothing and cost nothing); `recorded/` models are
treated like providers (a recording made with `--redact` replays with `--redact`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import is_stand_in

MAX_ANSWER_CHARS = 1_000_000  # a summary, a verdict list or an agent turn is kilobytes
_HOOKED = "_compaction_eval_session"


@dataclass(frozen=True)
class ModelSession:
    """The limits of every model call of one command (None: the caller's own)."""

    timeout: int | None = None
    max_retries: int | None = None
    redact: bool = False
    max_answer_chars: int = MAX_ANSWER_CHARS

    def __post_init__(self) -> None:
        for flag, value, low in (("--timeout", self.timeout, 1), ("--max-retries", self.max_retries, 0),
                                 ("max_answer_chars", self.max_answer_chars, 1)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
                raise ContractError([Problem(flag, "", f"{value!r} is not valid: must be an integer, at least {low}")])


SESSION: ModelSession | None = None
REDACTIONS: Counter = Counter()  # what the session's redaction replaced, by kind


def open_session(session: ModelSession) -> ModelSession:
    """Apply `session` to every model call from now on (until `close_session`)."""
    global SESSION
    SESSION = session
    REDACTIONS.clear()
    install()
    return session


def close_session() -> None:
    global SESSION
    SESSION = None


class AnswerTooLarge(RuntimeError):
    """A model answer beyond the session's cap."""


def redact_messages(input: list[Any]) -> list[Any]:
    """Copies of the messages with every text and tool-call argument redacted."""
    from compaction_eval.corpus.redact import redact_json, redact_text

    out = []
    for message in input:
        update: dict[str, Any] = {}
        content = message.content
        if isinstance(content, str):
            update["content"] = redact_text(content, REDACTIONS)
        else:
            update["content"] = [b.model_copy(update={"text": redact_text(b.text, REDACTIONS)}) if getattr(b, "type", None) == "text" else b
                                 for b in content]
        calls = getattr(message, "tool_calls", None)
        if calls:
            update["tool_calls"] = [c.model_copy(update={"arguments": redact_json(c.arguments, REDACTIONS)}) for c in calls]
        out.append(message.model_copy(update=update))
    return out


def install() -> None:
    """Wrap inspect's `Model.generate` once (the session and `--record` read module state, so
    one wrapper serves every command in the process)."""
    from inspect_ai.model import ChatMessageUser, GenerateConfig, Model

    if getattr(Model, _HOOKED, False):
        return
    original = Model.generate

    async def generate(self: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        from compaction_eval.compaction import recorded

        session = SESSION
        if recorded.RECORDER is not None:
            recorded.install_recorder(self)
        if session is None or is_stand_in(str(self)):
            return await original(self, input, *args, **kwargs)
        if session.redact:
            messages = [ChatMessageUser(content=input)] if isinstance(input, str) else list(input)
            input = redact_messages(messages)
        if session.timeout is not None or session.max_retries is not None:
            from compaction_eval.contracts.runfiles import request_limits

            limits: dict[str, Any] = {}
            if session.max_retries is not None:
                limits["max_retries"] = session.max_retries
            if session.timeout is not None:
                limits.update(request_limits(session.timeout, session.max_retries or 0))
            if len(args) >= 3:  # config given positionally (input, tools, tool_choice, config)
                args = (*args[:2], args[2].merge(GenerateConfig(**limits)), *args[3:])
            else:
                kwargs["config"] = (kwargs.get("config") or GenerateConfig()).merge(GenerateConfig(**limits))
        output = await original(self, input, *args, **kwargs)
        size = len(output.completion or "")
        if size > session.max_answer_chars:
            raise AnswerTooLarge(f"{self} answered {size} characters: more than the cap of {session.max_answer_chars} (does it ignore max_tokens?)")
        return output

    Model.generate = generate  # type: ignore[method-assign]
    setattr(Model, _HOOKED, True)
