"""horizon.measure on provider-reported usage: the cache hit rate's denominator is all input sent."""

from types import SimpleNamespace

import pytest

from compaction_eval.horizon.ledger import STORE_KEY
from compaction_eval.horizon.measure import config_summary, sample_record
from compaction_eval.horizon.prices import PRICES


def _usage(uncached: int, read: int, write: int, out: int) -> SimpleNamespace:
    return SimpleNamespace(input_tokens=uncached, input_tokens_cache_read=read, input_tokens_cache_write=write, output_tokens=out)


def _sample(reported: list[tuple[int, int, int, int]]) -> SimpleNamespace:
    """A sample as Anthropic reports it: `input_tokens` excludes cache reads and writes."""
    requests = [{"keys": [0, 1], "tokens": [u + r + w - 10, 10], "output": o, "input": u, "cache_read": r, "cache_write": w}
                for u, r, w, o in reported]
    events = [SimpleNamespace(event="model", output=SimpleNamespace(usage=_usage(*x))) for x in reported]
    return SimpleNamespace(store={STORE_KEY: {"requests": requests, "compactions": [], "window": 200_000}}, scores={},
                           metadata={"world": "w"}, events=events)


def test_cache_hit_rate_counts_reads_over_everything_sent():
    # mostly cache reads: uncached input alone (300) is far below the reads (15,000)
    reported = [(100, 0, 5000, 50), (100, 5000, 200, 50), (100, 10000, 300, 50)]
    s = sample_record(_sample(reported), PRICES["anthropic/claude-sonnet-4"], seconds_per_request=5.0)
    sent = sum(u + r + w for u, r, w, _ in reported)
    assert s["cost_source"] == "reported"
    assert s["input_tokens"] == sent and s["uncached_tokens"] == 300
    assert s["cache_hit_rate"] == pytest.approx(15000 / sent)
    summary = config_summary("full", [s, s])
    assert summary["cache_hit_rate"] == pytest.approx(15000 / sent) and 0 <= summary["cache_hit_rate"] <= 1
    assert sum(summary["cost_breakdown"].values()) == pytest.approx(summary["cost_usd"])
    assert s["step_tokens"] == [u + r + w for u, r, w, _ in reported]
