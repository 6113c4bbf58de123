"""Deterministic generator of the default labelled corpus (synthetic coding-agent traces).

`generate(seed)` returns the 8 traces of the corpus with their labels; `write(...)` writes
`fixtures/traces/<id>.json.gz` and `labels/<id>.yaml`, byte-identical for the same seed.
Run it as `python -m compaction_eval.synth --out-traces fixtures/traces --out-labels labels`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .build import SynthError, SynthTrace, TraceBuilder
from .families import ci_broken, dep_upgrade, pipeline_incident, refactor, support_thread

__all__ = ["SPECS", "Spec", "SynthError", "SynthTrace", "TraceBuilder", "generate", "write"]


@dataclass(frozen=True)
class Spec:
    """One trace of the corpus.

    Args:
        trace_id: the trace id, also the file names.
        build: the family's `build(variant, seed, trace_id)`.
        variant: index into the family's content variants.
        seed_offset: added to `base_seed * 100` to give the trace's own seed.
    """

    trace_id: str
    build: Callable[[int, int, str], SynthTrace]
    variant: int
    seed_offset: int


SPECS: tuple[Spec, ...] = (
    Spec("synth-ci-broken-001", ci_broken.build, 0, 1),
    Spec("synth-refactor-001", refactor.build, 0, 2),
    Spec("synth-pipeline-incident-001", pipeline_incident.build, 0, 3),
    Spec("synth-dep-upgrade-001", dep_upgrade.build, 0, 4),
    Spec("synth-support-thread-001", support_thread.build, 0, 5),
    Spec("synth-ci-broken-002", ci_broken.build, 1, 11),
    Spec("synth-pipeline-incident-002", pipeline_incident.build, 1, 13),
    Spec("synth-dep-upgrade-002", dep_upgrade.build, 1, 14),
)


def trace_seed(spec: Spec, base_seed: int) -> int:
    return base_seed * 100 + spec.seed_offset


def generate(seed: int = 0, only: set[str] | None = None) -> list[SynthTrace]:
    """The corpus for `seed` (or the traces named in `only`), in SPECS order."""
    return [s.build(s.variant, trace_seed(s, seed), s.trace_id) for s in SPECS if not only or s.trace_id in only]


def write(out_traces: Path | str, out_labels: Path | str, seed: int = 0, only: set[str] | None = None) -> list[tuple[Path, Path, SynthTrace]]:
    """Generate and write the corpus; returns (trace path, labels path, trace) per trace."""
    out_traces, out_labels = Path(out_traces), Path(out_labels)
    out_traces.mkdir(parents=True, exist_ok=True)
    out_labels.mkdir(parents=True, exist_ok=True)
    written = []
    for st in generate(seed, only):
        tp = out_traces / f"{st.id}.json.gz"
        lp = out_labels / f"{st.id}.yaml"
        tp.write_bytes(st.trace_bytes())
        lp.write_text(st.labels_text(), encoding="utf-8")
        written.append((tp, lp, st))
    return written
