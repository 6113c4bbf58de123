"""One model session for every command that calls a model.

Why: limits and redaction were added per command, and each command added later came without
them (a `decay --timeout 5` still waiting at 150 s, an unredacted trace sent by the small
replay of `run --redact`). The session is applied where every call passes, inspect's
`Model.generate`, so a command inherits it by calling a model at all:

- `--timeout` seconds per attempt and at most `--max-retries` retries (inspect's own retry
  loop, bounded: `contracts.runfiles.request_limits`);
- `--redact`: every text of every request (messages, tool-call arguments) is redacted before
  it leaves for a model, whatever built it (the recorded request is the redacted one), every
  answer is redacted where the provider hands it over (before inspect's cache, log and the
  answer journal see it), and every file the command writes through `contracts.runfiles`;
- always, with or without `--redact`: the values of the credentials in the environment
  (`contracts.credentials`) are replaced in requests, answers and written files, so an
  answer that echoes the API key stores nothing of it;
- an answer larger than `max_answer_chars` is refused (an endpoint ignoring `max_tokens`
  cannot fill memory or a results file);
- `--record FILE` (compaction.recorded): each answer appended to FILE as it arrives;
- the answer journal (compaction.journal) for every cached call (compaction, the judge, the
  optimiser, the agent);
- Ctrl-C: inspect swallows the interrupt and returns no log; `eval_or_interrupt` turns that
  back into KeyboardInterrupt, which the CLI reports in one line with exit 130.

Offline stand-ins get no limits (they send nothing and cost nothing) but the same redaction:
what they write is as clean as a provider's. `recorded/` models are treated like providers
(a recording made with `--redact` replays with `--redact`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.settings import is_stand_in

MAX_ANSWER_CHARS = 1_000_000  # a summary, a verdict list or an agent turn is kilobytes
_HOOKED = "_compaction_eval_session"
_GUARDED = "_compaction_eval_guarded"  # set on a provider whose answers are cleaned


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
    """Apply `session` to every model call and every file written from now on (until
    `close_session`)."""
    from compaction_eval.contracts.runfiles import set_write_redaction
    from compaction_eval.corpus.redact import redact_json, redact_text

    global SESSION
    SESSION = session
    REDACTIONS.clear()
    set_write_redaction(redact_text, redact_json) if session.redact else set_write_redaction(None, None)
    install()
    return session


def provider_args(name: str, model_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """`model_args` for the model `name`, with the provider SDK's own retries off where it has
    them: the Anthropic SDK retries twice by default under inspect's retries, so
    `--max-retries 2` made 9 tries. Retrying is left to inspect alone.

    >>> provider_args("anthropic/claude-sonnet-4-5"), provider_args("openai/gpt-4o", {"seed": 1})
    ({'max_retries': 0}, {'seed': 1})
    """
    args = dict(model_args or {})
    if name.startswith("anthropic/"):
        args.setdefault("max_retries", 0)
    return args


def bounded_model(name: str | None, **model_args: Any) -> Any:
    """`name` as inspect takes it (a name, or a Model when it needs `provider_args`)."""
    if name is None:
        return None
    args = provider_args(name, model_args)
    if not args:
        return name
    from inspect_ai.model import get_model

    return get_model(name, **args)


def redacting() -> bool:
    """Whether the open session redacts (`--redact`): inputs a command reads for a model are
    redacted as well, so that what inspect logs of them holds no secret either."""
    return SESSION is not None and SESSION.redact


def close_session() -> None:
    from compaction_eval.contracts.runfiles import set_write_redaction

    global SESSION
    SESSION = None
    set_write_redaction(None, None)


def eval_or_interrupt(tasks: Any, **kwargs: Any) -> list[Any]:
    """Run inspect's `eval`, with Ctrl-C kept: inspect catches the interrupt, cancels the run and
    returns no log (or a cancelled one); then this raises KeyboardInterrupt, for the CLI's
    one line and exit 130, instead of the caller failing on a missing log."""
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(tasks, **kwargs)
    if not logs or any(log.status == "cancelled" for log in logs):
        raise KeyboardInterrupt
    return list(logs)


class AnswerTooLarge(RuntimeError):
    """A model answer beyond the session's cap."""


def clean_messages(input: list[Any], redact: bool) -> list[Any]:
    """The messages with the environment's credential values replaced, and every text and
    tool-call argument redacted when `redact`; a message is copied only when it changes."""
    from compaction_eval.contracts.credentials import credential_values, scrub_credentials
    from compaction_eval.corpus.redact import redact_text

    creds = bool(credential_values())
    if not (redact or creds):
        return input

    def text(t: str) -> str:
        t = redact_text(t, REDACTIONS) if redact else t
        return scrub_credentials(t) if creds else t

    def data(d: Any) -> Any:
        return _clean_json(d, redact)

    out = []
    for message in input:
        update: dict[str, Any] = {}
        content = message.content
        if isinstance(content, str):
            cleaned: Any = text(content)
        else:
            cleaned = [b.model_copy(update={"text": text(b.text)}) if getattr(b, "type", None) == "text" else b for b in content]
        if cleaned != content:
            update["content"] = cleaned
        calls = getattr(message, "tool_calls", None)
        if calls:
            new_calls = [dataclasses.replace(c, arguments=data(c.arguments)) for c in calls]  # ToolCall: a dataclass
            if new_calls != calls:
                update["tool_calls"] = new_calls
        out.append(message.model_copy(update=update) if update else message)
    return out


def _clean_json(data: Any, redact: bool) -> Any:
    """JSON data with secret shapes redacted (when `redact`) and credential values replaced."""
    from compaction_eval.contracts.credentials import scrub_data
    from compaction_eval.corpus.redact import redact_json

    return scrub_data(redact_json(data, REDACTIONS) if redact else data)


def clean_output(output: Any, redact: bool) -> Any:
    """`output` (a ModelOutput) with credentials replaced, and secret shapes too when `redact`;
    the same object when nothing changes."""
    from inspect_ai.model import ModelOutput

    from compaction_eval.contracts.credentials import credential_values

    if not isinstance(output, ModelOutput) or not (redact or credential_values()):
        return output
    data = output.model_dump(mode="json")
    cleaned = _clean_json(data, redact)
    return output if cleaned == data else ModelOutput.model_validate(cleaned)


def clean_call(call: Any, redact: bool) -> Any:
    """A provider's raw call record (`ModelCall`: the request and response JSON inspect writes
    to its log) cleaned like an answer."""
    from inspect_ai.model import ModelCall

    from compaction_eval.contracts.credentials import credential_values

    if not isinstance(call, ModelCall) or not (redact or credential_values()):
        return call
    update = {}
    for name in ("request", "response"):
        value = getattr(call, name)
        cleaned = _clean_json(value, redact)
        if cleaned != value:
            update[name] = cleaned
    return call.model_copy(update=update) if update else call


def wrap_provider(model: Any, marker: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace `model`'s provider `generate` by `wrap(generate)`, once per provider (`marker`
    names the wrapper). The answer guard (`guard_provider`) is always installed first, so it is
    the innermost wrapper: inspect's cache and log, the answer journal and a `--record`
    recording only ever see the cleaned answer, whichever wrapper a command installs first.

    inspect 0.3.285 (pinned) calls `model.api.generate(input=, tools=, tool_choice=, config=)`
    from one place, right after its own cache lookup missed."""
    api = getattr(model, "api", None)
    if api is None:
        return
    if marker != _GUARDED:
        guard_provider(model)
    if getattr(api, marker, False):
        return
    api.generate = wrap(api.generate)
    setattr(api, marker, True)


def guard_provider(model: Any) -> None:
    """Clean every answer of `model` (`clean_output`, `clean_call`) the moment its provider
    returns it."""

    def wrap(provider_generate: Callable[..., Any]) -> Callable[..., Any]:
        async def guarded_generate(input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
            result = await provider_generate(input=input, tools=tools, tool_choice=tool_choice, config=config)
            redact = redacting()
            if isinstance(result, tuple):  # (output, the raw call record inspect logs)
                return (clean_output(result[0], redact), *(clean_call(c, redact) for c in result[1:]))
            return clean_output(result, redact)

        return guarded_generate

    wrap_provider(model, _GUARDED, wrap)


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
        guard_provider(self)  # first, so that it is the innermost wrapper of the provider
        if recorded.RECORDER is not None:
            recorded.install_recorder(self)
        messages = [ChatMessageUser(content=input)] if isinstance(input, str) else list(input)
        cleaned = clean_messages(messages, redact=bool(session and session.redact))
        input = input if cleaned is messages else cleaned
        if session is None or is_stand_in(str(self)):
            return await original(self, input, *args, **kwargs)
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
        output = await original(self, input, *args, **kwargs)  # cleaned by the provider's guard
        size = len(output.completion or "")
        if size > session.max_answer_chars:
            raise AnswerTooLarge(f"{self} answered {size} characters: more than the cap of {session.max_answer_chars} (does it ignore max_tokens?)")
        return output

    Model.generate = generate  # type: ignore[method-assign]
    setattr(Model, _HOOKED, True)
