"""Bootstrap confidence intervals over samples.

Samples (trace x point) are the unit of resampling: facts within one sample are not
independent, so resampling facts would give intervals that are too narrow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20261129
RESAMPLE_BLOCK = 100


def bootstrap_mean_ci(
    values: Sequence[float], *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean. A single value gives a zero-width interval.

    Args:
        values: one value per sample (the unit of resampling).
        level: the interval's coverage.
        resamples: bootstrap resamples.
        seed: the resampling seed (fixed, so a rerun gives the same interval).

    >>> bootstrap_mean_ci([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> lo, hi = bootstrap_mean_ci([0.0, 0.5, 1.0, 1.0])
    >>> 0.0 <= lo < 0.625 < hi <= 1.0
    True
    """
    # Sorted, so the interval does not depend on the order the samples arrived in.
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0])) if x.size == 1 else (float(x.mean()), float(x.mean()))
    rng = np.random.default_rng(seed)
    # A block of resamples at a time: all at once is two resamples x samples matrices (80 MB
    # at 2,500 samples, growing with the run). The generator's draws continue from block to
    # block, so the means are the ones a single draw gives.
    means = np.concatenate([x[rng.integers(0, x.size, size=(min(RESAMPLE_BLOCK, resamples - start), x.size))].mean(axis=1)
                            for start in range(0, resamples, RESAMPLE_BLOCK)])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def bootstrap_groups_ci(
    groups: Sequence[Any],
    statistic: Callable[[list[Any]], Sequence[float | None]],
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = DEFAULT_SEED,
) -> list[tuple[float, float] | None]:
    """Percentile bootstrap intervals of one or more statistics of pooled groups.

    Groups (e.g. all judged items of one trace) are resampled with replacement; `statistic`
    gets the resampled groups, pooled (their items concatenated in resample order), and returns
    one value per statistic (None where it is undefined on that resample, e.g. a kappa with
    one class: such resamples are left out of that statistic's interval). Returns one
    (lo, hi) per statistic, None when no resample defined it. Groups are sorted by their
    repr first, so the interval does not depend on the order they arrived in.

    >>> bootstrap_groups_ci([[1.0], [1.0]], lambda xs: [sum(xs) / len(xs)])
    [(1.0, 1.0)]
    """
    ordered = sorted(groups, key=repr)
    if not ordered:
        return []
    rng = np.random.default_rng(seed)
    draws: list[list[float]] | None = None
    for _ in range(resamples):
        pick = rng.integers(0, len(ordered), size=len(ordered))
        values = statistic([x for i in pick for x in ordered[i]])
        if draws is None:
            draws = [[] for _ in values]
        for d, v in zip(draws, values, strict=True):
            if v is not None and not math.isnan(v):
                d.append(float(v))
    alpha = (1 - level) / 2
    out: list[tuple[float, float] | None] = []
    for d in draws or []:
        if not d:
            out.append(None)
            continue
        lo, hi = np.quantile(np.asarray(d), [alpha, 1 - alpha])
        out.append((float(lo), float(hi)))
    return out


def mean(values: Sequence[float]) -> float:
    """The mean, NaN for no values.

    >>> mean([0.5, 1.0]), str(mean([]))
    (0.75, 'nan')
    """
    # fsum is exact, so the mean does not depend on the order of the values either
    return math.fsum(values) / len(values) if len(values) else float("nan")
