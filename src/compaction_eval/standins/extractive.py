"""`extractive/<variant>`: the offline extractive summariser as an inspect model provider.

A deterministic stand-in for an LLM compactor (a baseline, not an LLM): it copies sentences,
commands and distinctive tool-output lines of the conversation into a summary, chosen by the
kinds of fact the compaction prompt asks to preserve, within `config.max_tokens` tokens.
See `summarise` for the selection, `directives` for how a prompt is read and `transcript` for
the two input shapes it accepts.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelCall,
    ModelInfo,
    ModelOutput,
    ModelUsage,
    set_model_info,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from compaction_eval.compaction.transcript import split_request
from compaction_eval.contracts.chat_tokens import message_tokens
from compaction_eval.contracts.tokens import count_tokens
from compaction_eval.standins.local import LocalModelAPI
from compaction_eval.standins.summarise import Options, summarise

VARIANTS = ("default",)
DEFAULT_BUDGET = 1024
CONTEXT_WINDOW = 200_000

# -M arguments: name -> (type, lowest allowed value).
_ARGS: dict[str, tuple[type, int]] = {
    "default_budget": (int, 1),
    "raw_lines_per_result": (int, 0),
    "recent_turns": (int, 0),
    "max_unit_tokens": (int, 8),
}


class ExtractiveSummariser(LocalModelAPI):
    """Offline extractive summariser.

    Model args (`-M key=value`):
        default_budget: the budget when a request sets no `max_tokens` (1024).
        raw_lines_per_result: non-distinctive tool-output lines kept per result (3).
        recent_turns: assistant turns at the end that describe the current state (3).
        max_unit_tokens: longer units are cut to this many tokens (80).
    """

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], GenerateConfig() if config is None else config)
        if model_name not in VARIANTS:
            raise ValueError(
                f"unknown extractive variant {model_name!r}: use one of {', '.join('extractive/' + v for v in VARIANTS)}"
            )
        args = _validated(model_args)
        self.default_budget: int = args.pop("default_budget", DEFAULT_BUDGET)
        self.options = Options(**args)
        # Context-window-aware code (compaction thresholds) looks the model up by name.
        set_model_info(
            f"extractive/{model_name}",
            ModelInfo(
                organization="compaction-eval",
                model=f"extractive/{model_name} (offline extractive baseline, not an LLM)",
                context_length=CONTEXT_WINDOW,
                output_tokens=CONTEXT_WINDOW,
            ),
        )

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> tuple[ModelOutput, ModelCall]:
        budget = config.max_tokens if config.max_tokens is not None else self.default_budget
        request = split_request(input)
        summary = summarise(request.conversation, request.instruction, budget, self.options)

        input_tokens = sum(message_tokens(m) for m in input)
        output_tokens = count_tokens(summary.text)
        output = ModelOutput.from_content(
            model=f"extractive/{self.model_name}",
            content=summary.text,
            stop_reason="max_tokens" if summary.cut else "stop",
        )
        output.usage = ModelUsage(
            input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
        )
        d = summary.directives
        call = ModelCall.create(
            request={
                "shape": request.shape,
                "budget": budget,
                "preserve": list(d.preserve),
                "discard": sorted(d.discard),
                "sections": [s.heading for s in d.sections],
                "focus": sorted(d.focus),
                "max_units": d.max_units,
                "exclusive": d.exclusive,
            },
            response={"candidates": summary.candidates, "selected": len(summary.units), "output_tokens": output_tokens},
        )
        return output, call

    def max_tokens(self) -> int | None:
        return self.default_budget


def _validated(model_args: dict[str, Any]) -> dict[str, int]:
    unknown = sorted(set(model_args) - set(_ARGS))
    if unknown:
        raise ValueError(
            f"unknown model arg(s) for extractive: {', '.join(unknown)} (known: {', '.join(sorted(_ARGS))})"
        )
    out: dict[str, int] = {}
    for name, value in model_args.items():
        kind, lowest = _ARGS[name]
        try:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            number = kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"model arg {name} must be an integer, got {value!r}") from None
        if number < lowest:
            raise ValueError(f"model arg {name} must be at least {lowest}, got {number}")
        out[name] = number
    return out
