"""Registers the offline providers with inspect (loaded through the `inspect_ai` entry point).

inspect imports this module whenever it looks up a model name it does not know, so it must
stay cheap: each provider's module is imported only when that provider is first used.
"""

from __future__ import annotations

from inspect_ai.model import ModelAPI, modelapi


@modelapi(name="extractive")
def extractive() -> type[ModelAPI]:
    from compaction_eval.standins.extractive import ExtractiveSummariser

    return ExtractiveSummariser


@modelapi(name="scripted")
def scripted() -> type[ModelAPI]:
    from compaction_eval.standins.scripted import ScriptedAgent

    return ScriptedAgent


@modelapi(name="reader")
def reader() -> type[ModelAPI]:
    from compaction_eval.standins.reader import ExtractiveReader

    return ExtractiveReader


@modelapi(name="recorded")
def recorded() -> type[ModelAPI]:
    from compaction_eval.standins.recorded import RecordedModel

    return RecordedModel
