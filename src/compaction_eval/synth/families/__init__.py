"""Scenario families: one module per kind of agent session, each with `FAMILY`, `VARIANTS`
and `build(variant, seed, trace_id) -> SynthTrace`."""
