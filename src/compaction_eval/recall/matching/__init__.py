"""Fact matchers: literal (exact categories), semantic (meaning categories), LLM judge.

`normalize` holds the canonical text form and the tokenisers they share. The judge imports
inspect and is not imported here: `from compaction_eval.recall.matching.judge import judge_facts`.
(The function `normalize.normalize` is not re-exported: its name would shadow the module.)
"""

from compaction_eval.recall.matching.literal import (
    Distortion,
    SourceIndex,
    SummaryText,
    find_key,
    find_keys,
    literal_match,
    source_index,
)
from compaction_eval.recall.matching.normalize import canonical_number, split_units
from compaction_eval.recall.matching.semantic import SemanticIndex, semantic_match

__all__ = [
    "Distortion",
    "SemanticIndex",
    "SourceIndex",
    "SummaryText",
    "canonical_number",
    "find_key",
    "find_keys",
    "literal_match",
    "semantic_match",
    "source_index",
    "split_units",
]
