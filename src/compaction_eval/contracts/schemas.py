"""One definition of the file contracts (trace@1, labels@1, results@1) as pydantic models, and
the JSON Schemas generated from them (`compaction-eval schema trace|labels|results`; the same
documents ship as docs/schemas/*.schema.json, checked equal by the tests).

What a schema can say per value is said here: types, required keys, enumerations, ranges, id
spellings. Unknown keys are allowed everywhere (the contracts grow by optional keys). What no
JSON Schema can say stays in the located validators (contracts/traces.py `validate_trace`,
contracts/labels.py, contracts/runfiles.py `validate_results`), which also name the file and
place of every problem: a tool_use answered by exactly one tool_result in the next message,
unique fact ids and points, labels checked against their trace. tests/contracts/test_schemas.py
checks that both agree on every shipped trace and labels file and on broken ones.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

from compaction_eval.contracts.labels import AVOID_REASONS, CATEGORIES, LABELLERS
from compaction_eval.contracts.labels import SCHEMA as LABELS_SCHEMA
from compaction_eval.contracts.runfiles import SCHEMA as RESULTS_SCHEMA
from compaction_eval.contracts.traces import SCHEMA as TRACE_SCHEMA

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Text = Annotated[StrictStr, Field(pattern=r"\S")]  # not empty, not only whitespace
Index = Annotated[StrictInt, Field(ge=0)]  # a 0-based message index
# a recall, precision or probability; integers count as numbers, booleans, NaN and infinities do not
Share = Annotated[float, Field(ge=0.0, le=1.0, strict=True, allow_inf_nan=False)]
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]


class _Open(BaseModel):
    """Unknown keys allowed (added freely by later versions), values never coerced."""

    model_config = ConfigDict(extra="allow", strict=True)


# ------------------------------------------------------------------------------ trace@1


class TextBlock(_Open):
    type: Literal["text"]
    text: StrictStr


class ThinkingBlock(_Open):
    type: Literal["thinking"]


class ToolUseBlock(_Open):
    type: Literal["tool_use"]
    id: NonEmpty = Field(description="answered by exactly one tool_result in the next message")
    name: StrictStr
    input: Any = None


class ToolResultBlock(_Open):
    type: Literal["tool_result"]
    tool_use_id: Any = Field(description="the id of a tool_use of the previous message")
    content: Any = None
    is_error: StrictBool | None = None


Block = Annotated[TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock, Field(discriminator="type")]


class Message(_Open):
    role: Literal["user", "assistant"] = Field(description="tool_use blocks only in assistant messages, tool_result only in user ones")
    content: StrictStr | list[Block]


class Tool(_Open):
    name: Any


class TraceFile(_Open):
    """A recorded agent conversation in Anthropic Messages shape; labels refer to messages by
    their 0-based index in `messages`."""

    model_config = ConfigDict(title="compaction-eval/trace@1")
    schema_: Literal["compaction-eval/trace@1"] = Field(alias="schema")
    id: NonEmpty
    source: dict[str, Any] = Field(default_factory=dict, description="where the trace came from: kind, path, license")
    system: StrictStr = ""
    tools: list[Tool] = Field(default_factory=list)
    messages: list[Message] = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)


# ------------------------------------------------------------------------------ labels@1

FactId = Annotated[StrictStr, Field(pattern=r"^[a-z0-9_-]+$", description="unique in the file (facts and avoid together)")]


class Point(_Open):
    at: Annotated[StrictInt, Field(ge=1, description="messages[0:at] is the history being compacted; unique in the file")]


class Fact(_Open):
    # a fact needs at least one key: in `keys` or in one `alt_keys` set
    model_config = ConfigDict(json_schema_extra={"anyOf": [{"required": ["keys"], "properties": {"keys": {"minItems": 1}}},
                                                           {"required": ["alt_keys"], "properties": {"alt_keys": {"minItems": 1}}}]})
    id: FactId
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    text: Text
    keys: list[Text] = Field(default_factory=list, description="literal anchors: all must appear (or all of one alt_keys set)")
    alt_keys: list[Annotated[list[Text], Field(min_length=1)]] = Field(default_factory=list)
    source: list[Index] = Field(min_length=1, description="message indices that establish the fact")
    weight: Annotated[float, Field(gt=0, strict=True, allow_inf_nan=False)] = 1.0
    critical: StrictBool = False
    valid_until: Index | None = Field(default=None, description="index where the fact is superseded")

    @model_validator(mode="after")
    def _has_a_key(self) -> Fact:
        if not self.keys and not self.alt_keys:
            raise ValueError("a fact needs at least one key")
        return self


class AvoidItem(_Open):
    id: FactId
    reason: Literal[AVOID_REASONS]  # type: ignore[valid-type]
    text: Text
    keys: list[Text] = Field(default_factory=list)
    source: list[Index] = Field(min_length=1)


class LabelsFile(_Open):
    """The compaction points of one trace and the facts a summary at each point must keep
    (YAML; the schema describes the mapping the YAML holds)."""

    model_config = ConfigDict(title="compaction-eval/labels@1")
    schema_: Literal["compaction-eval/labels@1"] = Field(alias="schema")
    trace: NonEmpty
    labelled_by: Literal[LABELLERS]  # type: ignore[valid-type]
    points: list[Point] = Field(min_length=1)
    facts: list[Fact] = Field(min_length=1, description="each fact needs keys or alt_keys")
    avoid: list[AvoidItem] | None = None


# ------------------------------------------------------------------------------ results@1

Interval = Annotated[list[Number], Field(min_length=2, max_length=2, description="[low, high]")]


class FactVerdict(_Open):
    id: NonEmpty
    kept: StrictBool
    category: StrictStr | None = None
    critical: StrictBool | None = None
    probability: Share | None = None


class Sample(_Open):
    trace: NonEmpty
    point: Index
    prompt: NonEmpty
    epoch: Annotated[StrictInt, Field(ge=1)] = 1
    recall: Share
    precision: Share | None = None
    context_recall: Share | None = None
    recall_by_category: dict[str, Share] = Field(default_factory=dict)
    facts: list[FactVerdict]
    avoid: list[Any] = Field(default_factory=list)


class PromptRow(_Open):
    model_config = ConfigDict(json_schema_extra={"patternProperties": {"_ci$": {"anyOf": [
        {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}, {"type": "null"}]}}})
    prompt: NonEmpty
    recall: Share | None = None
    precision: Share | None = None

    @model_validator(mode="after")
    def _intervals(self) -> PromptRow:
        for key, value in (self.model_extra or {}).items():
            if key.endswith("_ci") and value is not None and not (
                    isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                raise ValueError(f"{key} must be [low, high], two numbers")
        return self


class ResultsFile(_Open):
    """A fact-recall run (`results/<run>/results.json`)."""

    model_config = ConfigDict(title="compaction-eval/results@1")
    schema_: Literal["compaction-eval/results@1"] = Field(alias="schema")
    model: StrictStr | None = None
    config: dict[str, Any] | None = None
    corpus: dict[str, Any] | None = None
    samples: list[Sample]
    prompts: list[PromptRow] = Field(default_factory=list)


MODELS: dict[str, type[BaseModel]] = {"trace": TraceFile, "labels": LabelsFile, "results": ResultsFile}
SCHEMA_IDS = {"trace": TRACE_SCHEMA, "labels": LABELS_SCHEMA, "results": RESULTS_SCHEMA}


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of `kind` (trace, labels or results)."""
    schema = MODELS[kind].model_json_schema(by_alias=True, mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"https://compaction-eval/schemas/{SCHEMA_IDS[kind].replace('compaction-eval/', '')}.json",
            **schema}


def schema_text(kind: str) -> str:
    """`json_schema(kind)` as the text shipped in docs/schemas/."""
    return json.dumps(json_schema(kind), indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def schema_file_name(kind: str) -> str:
    return f"{kind}.schema.json"
