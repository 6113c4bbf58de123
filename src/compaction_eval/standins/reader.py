"""`reader/<variant>`: an offline extractive *reader*, the stand-in that answers probes.

A probe is one user message: the compacted context inside `<context>` tags, then the probe
marker line, then the question. The reader answers only from that context: it returns the
context lines (sentences of long lines) that share the most distinctive words with the
question, in context order. It cannot know anything the context does not show, so its
accuracy measures what is *findable* in a compacted context. It is a deterministic
stand-in, not an LLM: results that use it say so (`offline_stand_in`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    GenerateConfig,
    ModelCall,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from compaction_eval.contracts.tokens import count_tokens, truncate_tokens
from compaction_eval.standins.local import LocalModelAPI

VARIANTS = ("default",)
PROBE_MARKER = "[Probe: answer the question below using only the context above. Quote names, paths, numbers and error text exactly.]"
CONTEXT_OPEN, CONTEXT_CLOSE = "<context>", "</context>"
DEFAULT_UNITS = 3
MAX_UNIT_WORDS = 60

_WORD = re.compile(r"[a-z0-9_][a-z0-9_./:-]*[a-z0-9_]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "by", "with", "from", "as", "is", "are", "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "what", "which", "who", "why", "how", "when", "where", "did", "do", "does", "done", "not", "no", "yes", "exactly", "exact", "quote", "question", "answer", "context", "above", "below", "using", "only", "your", "you", "we", "our", "i", "me", "my", "any", "all", "some", "there", "their", "they", "them", "then", "than", "so", "if", "else", "into", "out", "about", "after", "before"]
)


def probe_request(context: str, question: str) -> str:
    """The probe's user message: context, marker, question."""
    return f"{CONTEXT_OPEN}\n{context}\n{CONTEXT_CLOSE}\n\n{PROBE_MARKER}\n{question}"


def parse_probe(text: str) -> tuple[str, str] | None:
    """(context, question) of a probe message, or None when it is not one."""
    head, marker, question = text.rpartition(PROBE_MARKER)
    if not marker:
        return None
    start, end = head.find(CONTEXT_OPEN), head.rfind(CONTEXT_CLOSE)
    context = head[start + len(CONTEXT_OPEN):end] if 0 <= start < end else head
    return context.strip("\n"), question.strip()


# What an answer looks like, by what the question asks for: a unit of that shape is preferred.
_SHAPES = (
    (re.compile(r"\b(files?|paths?|symbols?|identifiers?)\b", re.IGNORECASE), re.compile(r"[\w.-]+/[\w./-]+|\b\w+\.(py|js|ts|go|rs|java|c|h|cpp|rb|json|ya?ml|toml|cfg|ini|txt|md|html|sh)\b|\w+\(\)|\b\w+_\w+\b")),
    (re.compile(r"\berror\b", re.IGNORECASE), re.compile(r"\b\w*(Error|Exception|Warning|Failure)\b|\bFAILED\b|\berror:", re.IGNORECASE)),
    (re.compile(r"\bnumber\b", re.IGNORECASE), re.compile(r"\d")),
)
SHAPE_BOOST = 1.5


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def _units(context: str) -> list[str]:
    units: list[str] = []
    for line in context.splitlines():
        line = line.strip()
        if not line or (line.startswith("[") and line.endswith("]") and len(line) < 80):
            continue  # role headers and labels carry no answer
        parts = _SENTENCE.split(line) if len(line.split()) > MAX_UNIT_WORDS else [line]
        units += [p for p in parts if p.strip()]
    return units


def read_answer(context: str, question: str, units: int = DEFAULT_UNITS) -> str:
    """The `units` context units that best match the question's distinctive words."""
    candidates = list(dict.fromkeys(_units(context)))
    asked = set(_words(question))
    shapes = [shape for wants, shape in _SHAPES if wants.search(question)]
    if not candidates or not asked:
        return "The context does not say."
    bags = [set(_words(u)) for u in candidates]
    df = Counter(w for bag in bags for w in bag)
    n = len(candidates)
    scores = []
    for i, bag in enumerate(bags):
        overlap = asked & bag
        score = sum(math.log(1 + n / df[w]) for w in overlap) / math.sqrt(1 + len(bag) / 20)
        if any(shape.search(candidates[i]) for shape in shapes):
            score *= SHAPE_BOOST
        scores.append((score, -i))
    ranked = sorted(range(n), key=lambda i: scores[i], reverse=True)
    chosen = sorted(i for i in ranked[:units] if scores[i][0] > 0)
    if not chosen:
        return "The context does not say."
    return "\n".join(candidates[i] for i in chosen)


class ExtractiveReader(LocalModelAPI):
    """Offline reader (see module docstring). Model arg `units`: context units per answer (3)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        if model_name not in VARIANTS:
            raise ValueError(f"unknown reader variant {model_name!r}: use one of {', '.join('reader/' + v for v in VARIANTS)}")
        unknown = sorted(set(model_args) - {"units"})
        if unknown:
            raise ValueError(f"unknown model arg(s) for reader: {', '.join(unknown)} (known: units)")
        self.units = int(model_args.get("units", DEFAULT_UNITS))
        if self.units < 1:
            raise ValueError(f"model arg units must be at least 1, got {self.units}")

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> tuple[ModelOutput, ModelCall]:
        last = next((m.text for m in reversed(input) if isinstance(m, ChatMessageUser)), "")
        probe = parse_probe(last)
        text = read_answer(*probe, units=self.units) if probe else "No probe found: the reader answers probes only."
        if config.max_tokens and count_tokens(text) > config.max_tokens:
            text = truncate_tokens(text, config.max_tokens)
        input_tokens = sum(count_tokens(m.text) for m in input)
        output = ModelOutput.from_content(model=f"reader/{self.model_name}", content=text)
        output.usage = ModelUsage(input_tokens=input_tokens, output_tokens=count_tokens(text), total_tokens=input_tokens + count_tokens(text))
        return output, ModelCall.create(request={"probe": probe is not None, "units": self.units}, response={"answer_tokens": count_tokens(text)})
