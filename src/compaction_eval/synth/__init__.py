"""Deterministic generator of the labelled synthetic corpora (coding-agent traces).

Two corpora: `default` (SPECS, 11 traces of 12k-60k tokens: what `compaction-eval run`
evaluates, kept small so the main job stays fast) and `large` (LARGE_SPECS, 42 traces of
12k-200k tokens, padded with long reads and logs at varied places; run it with
`compaction-eval recall --traces fixtures/traces-large --labels labels/synth-large`).

`generate(seed, corpus=...)` returns the traces with their labels; `write(...)` writes
`<out-traces>/<id>.json.gz` and `<out-labels>/<id>.yaml`, byte-identical for the same seed.
Regenerate with
`python -m compaction_eval.synth --out-traces fixtures/traces --out-labels labels` and
`python -m compaction_eval.synth --corpus large --out-traces fixtures/traces-large --out-labels labels/synth-large`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from compaction_eval.contracts.tokens import count_many
from compaction_eval.contracts.traces import message_text
from compaction_eval.synth.build import SynthError, SynthTrace, TraceBuilder
from compaction_eval.synth.families import (
    ci_broken,
    dep_upgrade,
    pipeline_incident,
    refactor,
    support_thread,
)
from compaction_eval.synth.padding import make_plan

__all__ = ["CORPORA", "LARGE_SPECS", "SPECS", "Spec", "SynthError", "SynthTrace", "TraceBuilder", "build_spec",
           "generate", "write"]


@dataclass(frozen=True)
class Spec:
    """One trace of the corpus.

    Args:
        trace_id: the trace id, also the file names.
        build: the family's `build(variant, seed, trace_id)`.
        variant: index into the family's content variants.
        seed_offset: added to `base_seed * 100` to give the trace's own seed.
        target_tokens: pad the story with filler up to about this many tokens (None: as is).
        profile: where the filler goes (padding.PROFILES).
    """

    trace_id: str
    build: Callable[..., SynthTrace]
    variant: int
    seed_offset: int
    target_tokens: int | None = None
    profile: str = "uniform"


SPECS: tuple[Spec, ...] = (
    Spec("synth-ci-broken-001", ci_broken.build, 0, 1),
    Spec("synth-refactor-001", refactor.build, 0, 2),
    Spec("synth-pipeline-incident-001", pipeline_incident.build, 0, 3),
    Spec("synth-dep-upgrade-001", dep_upgrade.build, 0, 4),
    Spec("synth-support-thread-001", support_thread.build, 0, 5),
    Spec("synth-ci-broken-002", ci_broken.build, 1, 11),
    Spec("synth-pipeline-incident-002", pipeline_incident.build, 1, 13),
    Spec("synth-dep-upgrade-002", dep_upgrade.build, 1, 14),
    Spec("synth-refactor-002", refactor.build, 0, 22, 30_000, "back"),
    Spec("synth-support-thread-002", support_thread.build, 0, 25, 30_000, "front"),
    Spec("synth-ci-broken-003", ci_broken.build, 1, 21, 55_000, "middle"),
)

# The large corpus: every content variant of every family, at sizes from the bare story
# (12k-45k tokens) to 200k, with the filler placed so planted facts fall early, late or
# around the points. Seeds differ from the default corpus, so the filler does too.
_STORIES = (
    ("ci-broken", ci_broken.build, 0), ("ci-broken", ci_broken.build, 1), ("refactor", refactor.build, 0),
    ("pipeline-incident", pipeline_incident.build, 0), ("pipeline-incident", pipeline_incident.build, 1),
    ("dep-upgrade", dep_upgrade.build, 0), ("dep-upgrade", dep_upgrade.build, 1),
    ("support-thread", support_thread.build, 0),
)
_SIZES = (None, 40_000, 60_000, None, 40_000, 85_000, 60_000, 40_000, 120_000, 60_000, None, 85_000, 40_000, 60_000,
          170_000, 40_000, None, 60_000, 85_000, 40_000, 130_000, None, 60_000, 40_000, 85_000, 60_000, 185_000,
          None, 40_000, 60_000, 110_000, 40_000, None, 60_000, 40_000, 150_000, None, 60_000, 40_000, 85_000,
          None, 60_000)
_PROFILES = ("uniform", "front", "back", "middle")


def _large_specs() -> tuple[Spec, ...]:
    specs: list[Spec] = []
    counts: dict[str, int] = {}
    for k, size in enumerate(_SIZES):
        family, build, variant = _STORIES[k % len(_STORIES)]
        counts[family] = counts.get(family, 0) + 1
        specs.append(Spec(f"synth-large-{family}-{counts[family]:03d}", build, variant, 1000 + k, size,
                          _PROFILES[(k // len(_STORIES) + k) % len(_PROFILES)]))
    return tuple(specs)


LARGE_SPECS: tuple[Spec, ...] = _large_specs()
CORPORA: dict[str, tuple[Spec, ...]] = {"default": SPECS, "large": LARGE_SPECS}


def trace_seed(spec: Spec, base_seed: int) -> int:
    return base_seed * 100 + spec.seed_offset


def _tokens(st: SynthTrace) -> int:
    return sum(count_many([message_text(m) for m in st.trace["messages"]]))


def build_spec(spec: Spec, base_seed: int = 0) -> SynthTrace:
    """One trace of a corpus. A padded spec is built twice: the bare story tells how many
    calls it makes and how many tokens it has, which sizes the filler plan."""
    seed = trace_seed(spec, base_seed)
    bare = spec.build(spec.variant, seed, spec.trace_id)
    if spec.target_tokens is None:
        return bare
    n_calls = sum(1 for m in bare.trace["messages"] if m["role"] == "assistant"
                  for blk in m["content"] if blk["type"] == "tool_use")
    bare_tokens = _tokens(bare)
    budget = spec.target_tokens - bare_tokens
    tries: list[tuple[int, SynthTrace]] = []
    # Filler is sized by characters; one correction of the budget by the measured tokens
    # usually brings the trace near its target. The closer of the two tries wins.
    for _ in range(2):
        plan = make_plan(f"{spec.trace_id}:{seed}", n_calls, budget, spec.target_tokens, spec.profile)
        if plan is None:
            return bare
        padded = spec.build(spec.variant, seed, spec.trace_id, padding=plan)
        added = _tokens(padded) - bare_tokens
        tries.append((abs(added + bare_tokens - spec.target_tokens), padded))
        if added <= 0 or tries[-1][0] < 0.05 * spec.target_tokens:
            break
        budget = int(budget * (spec.target_tokens - bare_tokens) / added)
    return min(tries, key=lambda t: t[0])[1]


def generate(seed: int = 0, only: set[str] | None = None, corpus: str = "default") -> list[SynthTrace]:
    """The `corpus` ("default" or "large") for `seed` (or the traces named in `only`), in spec order."""
    return [build_spec(s, seed) for s in CORPORA[corpus] if not only or s.trace_id in only]


def write(out_traces: Path | str, out_labels: Path | str, seed: int = 0, only: set[str] | None = None,
          corpus: str = "default") -> list[tuple[Path, Path, SynthTrace]]:
    """Generate and write a corpus; returns (trace path, labels path, trace) per trace."""
    out_traces, out_labels = Path(out_traces), Path(out_labels)
    out_traces.mkdir(parents=True, exist_ok=True)
    out_labels.mkdir(parents=True, exist_ok=True)
    written = []
    for st in generate(seed, only, corpus):
        tp = out_traces / f"{st.id}.json.gz"
        lp = out_labels / f"{st.id}.yaml"
        tp.write_bytes(st.trace_bytes())
        lp.write_text(st.labels_text(), encoding="utf-8")
        written.append((tp, lp, st))
    return written
