"""Offline inspect model providers.

`extractive/<variant>`: a deterministic extractive summariser that keeps conversation
sentences by kind (intent, constraint, decision, bug, artifact, number, attempt, next step)
within a token budget, honouring the preserve/discard directives of the compaction prompt.
It is a baseline that lets the whole pipeline run without an API key, not an LLM.

Providers are registered with inspect through the `inspect_ai` entry point
(`compaction_eval.standins.registry`).
"""
