"""Builder of one synthetic trace and its labels, with the checks the contracts demand.

A family module writes the conversation step by step (`request`, `call`, `say`, `user`),
marks compaction points where they fall in the story (`point`) and declares facts and avoid
items against the message indices the builder handed back. `build` checks what the labels
contract needs (keys readable where the fact is expected, all categories, a point at the start
of an assistant turn) and fails loudly, so a template edit cannot silently yield bad labels.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from compaction_eval.contracts.labels import CATEGORIES, labels_yaml
from compaction_eval.contracts.labels import SCHEMA as LABELS_SCHEMA
from compaction_eval.contracts.traces import SCHEMA as TRACE_SCHEMA
from compaction_eval.contracts.traces import fold, message_text
from compaction_eval.synth.padding import PaddingPlan, filler
from compaction_eval.synth.tooloutput import Vocab

GENERATOR = "compaction_eval.synth"

SYSTEM_PROMPT = (
    "You are a coding agent working in a checkout of the user's repository. Use the tools to "
    "inspect files, search, run commands and tests, and edit files. Think before each action "
    "and say briefly what you are about to do and why. Never print or copy secrets. Follow "
    "the user's constraints exactly; when a constraint and a shortcut conflict, the constraint "
    "wins. When you are done, answer in the format the user asked for."
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a text file; returns its lines numbered like `cat -n`. Optional 1-based line range.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer"},
                "end_line": {"type": "integer"},
            },
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Search files for a regular expression; returns path:line:text for each hit.",
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "glob": {"type": "string"},
            },
            "required": ["pattern"],
        },
    },
    {
        "name": "bash",
        "description": "Run a shell command in the repository root; returns stdout and stderr.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
    {
        "name": "run_tests",
        "description": "Run pytest on a target (file, directory or node id) with optional extra arguments.",
        "input_schema": {
            "type": "object",
            "properties": {"target": {"type": "string"}, "args": {"type": "string"}},
            "required": ["target"],
        },
    },
    {
        "name": "list_dir",
        "description": "List a directory; sub-directories end in '/'.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "edit_file",
        "description": "Replace an exact snippet of a file with new text; returns the resulting diff.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old": {"type": "string"},
                "new": {"type": "string"},
            },
            "required": ["path", "old", "new"],
        },
    },
]
TOOL_NAMES = frozenset(t["name"] for t in TOOLS)


_SECRETISH = re.compile(r"sk-live-|AKIA[0-9A-Z]{8}|SECRET|PASSWORD|TOKEN=")


class SynthError(Exception):
    """A family produced a trace or labels that break the contracts (a generator bug)."""


@dataclass(frozen=True)
class Step:
    """Indices of one tool round trip: the assistant call and the user message with its result."""

    assistant: int
    result: int


@dataclass
class _Item:
    id: str
    text: str
    keys: list[str]
    source: list[int]
    category: str = ""
    reason: str = ""
    alt_keys: list[list[str]] = field(default_factory=list)
    critical: bool = False
    valid_until: int | None = None

    def expected_at(self, at: int) -> bool:
        if self.reason:  # avoid items: in scope once established
            return any(s < at for s in self.source)
        return any(s < at for s in self.source) and (self.valid_until is None or self.valid_until >= at)


@dataclass(frozen=True)
class SynthTrace:
    """One generated trace and its labels, ready to serialise."""

    id: str
    trace: dict[str, Any]
    labels: dict[str, Any]
    header: str

    def trace_bytes(self) -> bytes:
        """The trace as gzip'd JSON, byte-identical on every run (mtime 0, fixed key order)."""
        raw = (json.dumps(self.trace, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        return gzip.compress(raw, compresslevel=9, mtime=0)

    def labels_text(self) -> str:
        return labels_yaml(self.labels, self.header)


class TraceBuilder:
    """Writes one conversation and its labels.

    Args:
        trace_id: the trace id (`synth-ci-broken-001`).
        family: the scenario family name, recorded in metadata.
        variant: which content variant of the family, recorded in metadata.
        seed: the per-trace seed, recorded in `source.seed`.
        system: the system prompt.
    """

    def __init__(self, trace_id: str, *, family: str, variant: int, seed: int, system: str = SYSTEM_PROMPT,
                 padding: PaddingPlan | None = None, vocab: Vocab | None = None):
        """`padding` (with the family's `vocab`) inserts fact-free filler round trips before
        the family's tool calls (see padding.py); None writes the story as is."""
        if padding is not None and vocab is None:
            raise SynthError("padding needs the family's vocab")
        self.trace_id = trace_id
        self.padding = padding
        self.vocab = vocab
        self._filler_rng = random.Random(padding.seed) if padding else None
        self._reads: list[tuple[dict[str, Any], str]] = []
        self.family = family
        self.variant = variant
        self.seed = seed
        self.system = system
        self.messages: list[dict[str, Any]] = []
        self.points: list[int] = []
        self._facts: list[_Item] = []
        self._avoid: list[_Item] = []
        self._near_misses: list[dict[str, str]] = []
        # Tool-use ids come from their own stream so that story edits do not reshuffle them.
        self._ids = random.Random(f"{trace_id}:{seed}:tool-use-ids")
        self._n_calls = 0

    # ----------------------------------------------------------------- conversation

    @property
    def next_index(self) -> int:
        """Index the next message will get."""
        return len(self.messages)

    def _expect_role(self, role: str) -> None:
        last = self.messages[-1]["role"] if self.messages else "assistant"
        if last == role:
            raise SynthError(f"{self.trace_id}: two {role} messages in a row at {self.next_index}")

    def request(self, text: str) -> int:
        """messages[0]: the user's request."""
        if self.messages:
            raise SynthError("the request must be the first message")
        return self.user(text)

    def user(self, text: str) -> int:
        """A plain user message (the human speaking); must follow an assistant message."""
        self._expect_role("user")
        self.messages.append({"role": "user", "content": text})
        return len(self.messages) - 1

    def say(self, text: str) -> int:
        """An assistant message without a tool call (a question, an update, the final answer)."""
        self._expect_role("assistant")
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        return len(self.messages) - 1

    def call(self, thought: str, tool: str, args: dict[str, Any], output: str, *, is_error: bool = False) -> Step:
        """An assistant turn (reasoning + one tool call) and the user message with the result."""
        if tool not in TOOL_NAMES:
            raise SynthError(f"unknown tool {tool!r}")
        self._expect_role("assistant")
        if self.padding is not None:
            # __init__ refuses padding without a vocab and makes the filler rng with the padding
            assert self._filler_rng is not None and self.vocab is not None
            for size in self.padding.before_call(self._n_calls):
                self._append_call(*filler(self._filler_rng, self.vocab, size, self._reads), is_error=False)
        self._n_calls += 1
        # Files the agent may re-read as filler: whole reads, secret-free, not edited since
        # (a re-read must not show stale content).
        if tool == "read_file" and "start_line" not in args and not _SECRETISH.search(output):
            self._reads.append((args, output))
        if tool == "edit_file":
            self._reads = [r for r in self._reads if r[0].get("path") != args.get("path")]
        return self._append_call(thought, tool, args, output, is_error=is_error)

    def _append_call(self, thought: str, tool: str, args: dict[str, Any], output: str, *, is_error: bool) -> Step:
        tid = "toolu_01" + "".join(self._ids.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(22))
        self.messages.append({
            "role": "assistant",
            "content": [
                {"type": "text", "text": thought},
                {"type": "tool_use", "id": tid, "name": tool, "input": args},
            ],
        })
        self.messages.append({
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tid, "content": output, "is_error": is_error}],
        })
        return Step(len(self.messages) - 2, len(self.messages) - 1)

    def point(self) -> int:
        """Mark a compaction point here: the next message (an assistant turn) starts after it."""
        self.points.append(self.next_index)
        return self.next_index

    # ----------------------------------------------------------------------- labels

    def fact(
        self,
        id: str,
        category: str,
        text: str,
        keys: list[str],
        source: list[int],
        *,
        alt_keys: list[list[str]] | None = None,
        critical: bool = False,
        valid_until: int | None = None,
    ) -> None:
        """Declare a must-keep fact (see DESIGN.md 4 for the fields)."""
        if category not in CATEGORIES:
            raise SynthError(f"{id}: unknown category {category!r}")
        self._facts.append(_Item(id=id, text=text, keys=list(keys), source=sorted(set(source)), category=category,
                                 alt_keys=[list(a) for a in alt_keys or []], critical=critical,
                                 valid_until=valid_until))

    def supersede(self, fact_id: str, at: int) -> None:
        """The fact stops being expected after message `at` (where it was superseded)."""
        self._find(fact_id).valid_until = at

    def avoid(self, id: str, reason: str, text: str, keys: list[str], source: list[int]) -> None:
        """Declare content that must not survive compaction (secret, superseded plan, noise)."""
        self._avoid.append(_Item(id=id, text=text, keys=list(keys), source=sorted(set(source)), reason=reason))

    def near_miss(self, fact_id: str, text: str) -> None:
        """Record a planted distractor close to a fact's key (347 vs 374); kept in metadata."""
        self._near_misses.append({"fact": fact_id, "text": text})

    def _find(self, fact_id: str) -> _Item:
        for f in self._facts:
            if f.id == fact_id:
                return f
        raise SynthError(f"no fact {fact_id!r}")

    # ------------------------------------------------------------------------ build

    def build(self) -> SynthTrace:
        """Check everything and return the serialisable trace and labels."""
        self._check()
        trace = {
            "schema": TRACE_SCHEMA,
            "id": self.trace_id,
            "source": {"kind": "synthetic", "generator": GENERATOR, "seed": self.seed, "license": "MIT"},
            "system": self.system,
            "tools": TOOLS,
            "messages": self.messages,
            "metadata": {
                "family": self.family,
                "variant": self.variant,
                "near_misses": self._near_misses,
                **({"padding": self.padding.describe()} if self.padding else {}),
            },
        }
        labels = {
            "schema": LABELS_SCHEMA,
            "trace": self.trace_id,
            "labelled_by": "generator",
            "points": [{"at": at} for at in self.points],
            "facts": [_fact_dict(f) for f in sorted(self._facts, key=lambda f: (min(f.source), f.id))],
            "avoid": [_avoid_dict(a) for a in sorted(self._avoid, key=lambda a: (min(a.source), a.id))],
        }
        header = (
            f"# Generated by {GENERATOR} (family {self.family}, variant {self.variant}, seed {self.seed}).\n"
            "# Do not edit by hand; regenerate with python -m compaction_eval.synth (see the synth package docstring).\n"
        )
        return SynthTrace(self.trace_id, trace, labels, header)

    def _check(self) -> None:
        n = len(self.messages)
        texts = [fold(message_text(m)) for m in self.messages]
        bad: list[str] = []
        if not self.messages or not isinstance(self.messages[0]["content"], str):
            bad.append("messages[0] must be the user's request")
        if len(self.points) != 2 or self.points != sorted(set(self.points)):
            bad.append(f"need two increasing points, got {self.points}")
        for at in self.points:
            if not 0 < at < n or self.messages[at]["role"] != "assistant":
                bad.append(f"point {at} is not the start of an assistant turn")
        ids = [i.id for i in self._facts + self._avoid]
        if len(ids) != len(set(ids)):
            bad.append("duplicate fact/avoid ids")
        for item in self._facts + self._avoid:
            if any(s >= n for s in item.source):
                bad.append(f"{item.id}: source past the end")
                continue
            here = "\n".join(texts[s] for s in item.source)
            key_sets = ([item.keys] if item.keys else []) + item.alt_keys
            for keyset in key_sets:
                for key in keyset:
                    # Facts: the key is in the messages that establish it. Avoid items (a
                    # superseded plan) may be established later than their words first appear.
                    if not item.reason and fold(key) not in here:
                        bad.append(f"{item.id}: key {key!r} not in its source messages {item.source}")
            in_scope = [at for at in self.points if item.expected_at(at)]
            if not in_scope:
                bad.append(f"{item.id}: not expected at any point {self.points}")
                continue
            history = "\n".join(texts[: min(in_scope)])
            for keyset in key_sets:
                for key in keyset:
                    if fold(key) not in history:
                        bad.append(f"{item.id}: key {key!r} not in messages[0:{min(in_scope)}]")
        cats = {f.category for f in self._facts}
        if cats != set(CATEGORIES):
            bad.append(f"categories missing: {sorted(set(CATEGORIES) - cats)}")
        if not 10 <= len(self._facts) <= 14:
            bad.append(f"{len(self._facts)} facts (want 10-14)")
        if not 2 <= sum(f.critical for f in self._facts) <= 3:
            bad.append("want 2-3 critical facts")
        if not 1 <= len(self._avoid) <= 3:
            bad.append("want 1-3 avoid items")
        whole = "\n".join(texts)
        for nm in self._near_misses:
            fact = self._find(nm["fact"])
            if fold(nm["text"]) not in whole:
                bad.append(f"near miss {nm['text']!r} not in the trace")
            if any(fold(nm["text"]) == fold(k) for k in fact.keys):
                bad.append(f"near miss {nm['text']!r} equals a key of {fact.id}")
        if bad:
            raise SynthError(f"{self.trace_id}: " + "; ".join(bad))


def _fact_dict(f: _Item) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "category": f.category, "text": f.text, "keys": f.keys}
    if f.alt_keys:
        out["alt_keys"] = f.alt_keys
    out["source"] = f.source
    if f.critical:
        out["critical"] = True
    if f.valid_until is not None:
        out["valid_until"] = f.valid_until
    return out


def _avoid_dict(a: _Item) -> dict[str, Any]:
    return {"id": a.id, "reason": a.reason, "text": a.text, "keys": a.keys, "source": a.source}

