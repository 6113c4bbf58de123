"""`recorded/<file or directory>`: answers written once (by any model, a batch API or a
person) replayed by request content, offline and deterministic.

Not a stand-in: the answers are a model's (or a person's), and results say who wrote them
(`compaction.recorded.provenance`). The key, the file format and what happens to a request
with no answer are described in `compaction.recorded`.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from compaction_eval.compaction import recorded
from compaction_eval.standins.local import LocalModelAPI


class RecordedModel(LocalModelAPI):
    """Replays the answers of the recording named by the model name (`recorded/PATH`)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], GenerateConfig() if config is None else config)
        if model_args:
            raise ValueError(f"recorded/ takes no model args (got {', '.join(sorted(model_args))})")
        recorded.recording(model_name)  # a missing or malformed recording fails before anything runs

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        request = recorded.canonical_request(input, tools, tool_choice)
        key, rec = recorded.lookup(self.model_name, request, max_tokens=config.max_tokens)
        model = f"{recorded.PROVIDER}{self.model_name}"
        if rec is None:
            return ModelOutput.from_content(model=model, content=recorded.placeholder(key))
        if rec.get("output"):
            output = ModelOutput.model_validate(rec["output"])
            output.model = model
        else:
            output = ModelOutput.from_content(model=model, content=rec["text"], stop_reason=rec.get("stop_reason") or "stop")
        usage = rec.get("usage") or {}
        if usage:
            inp, out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
            output.usage = ModelUsage(input_tokens=inp, output_tokens=out, total_tokens=inp + out,
                                      input_tokens_cache_read=usage.get("input_tokens_cache_read"),
                                      input_tokens_cache_write=usage.get("input_tokens_cache_write"))
        return output
