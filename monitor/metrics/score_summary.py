"""Exact statistics of a set of scores: mean, population standard deviation and quantiles."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

QUANTILES: tuple[float, ...] = (0.05, 0.5, 0.95, 0.99)


def sorted_quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of ascending values by linear interpolation (numpy's default method)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


@dataclass(frozen=True, slots=True)
class ScoreStats:
    """Mean, population standard deviation (numpy's default, ddof=0) and quantiles of a set of scores."""

    count: int
    mean: float
    stddev: float
    quantiles: dict[float, float]


def score_stats(scores: Iterable[float], quantiles: Sequence[float] = QUANTILES) -> ScoreStats | None:
    """Exact statistics of `scores`; None when there are none."""
    return ascending_stats(sorted(scores), quantiles)


def ascending_stats(values: Sequence[float], quantiles: Sequence[float] = QUANTILES) -> ScoreStats | None:
    """`score_stats` of values already ascending (an ordered window snapshot's scores)."""
    if not values:
        return None
    n = len(values)
    mean = math.fsum(values) / n
    # E[x²] − mean², summed exactly (fsum) over C-level iterators: no Python loop per value.
    variance = max(math.fsum(map(operator.mul, values, values)) / n - mean * mean, 0.0)
    return ScoreStats(n, mean, math.sqrt(variance), {q: sorted_quantile(values, q) for q in quantiles})
