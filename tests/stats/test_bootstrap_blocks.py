"""The bootstrap draws its resamples a block at a time (issue 25): the same intervals as one
draw of them all, without a resamples x samples matrix in memory."""

from __future__ import annotations

import random
import tracemalloc

import numpy as np

from compaction_eval.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_mean_ci


def one_draw(values: list[float], resamples: int = DEFAULT_RESAMPLES) -> tuple[float, float]:
    """The interval as it was computed before: every resample drawn at once."""
    x = np.sort(np.asarray(values, dtype=float))
    rng = np.random.default_rng(DEFAULT_SEED)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    alpha = (1 - 0.95) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def test_blocks_of_resamples_give_the_interval_of_one_draw():
    rng = random.Random(7)
    for n in (2, 5, 101, 2500):
        values = [rng.random() if rng.random() < 0.7 else float(rng.randint(0, 3)) for _ in range(n)]
        for resamples in (1, 99, 100, 150, DEFAULT_RESAMPLES):
            assert bootstrap_mean_ci(values, resamples=resamples) == one_draw(values, resamples), (n, resamples)


def test_the_bootstrap_of_a_large_run_does_not_hold_every_resample():
    values = [random.Random(3).random() for _ in range(2500)]  # one prompt of a 10,000-sample run
    tracemalloc.start()
    try:
        bootstrap_mean_ci(values)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # one draw of them all held 2 x 2,000 x 2,500 x 8 bytes: 80 MB
    assert peak < 10 * 2**20
