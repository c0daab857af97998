"""`mann_whitney` (binary search over sorted samples) against the implementation it replaced (average ranks of
the pooled sample, one Python loop per value), kept here as the oracle: the same U, z and p-value, bit for bit,
on random samples with and without ties, and so the same verdicts."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.sdk.significance import (
    RankTest,
    mann_whitney,
    mann_whitney_floats,
    rank_terms,
    two_proportions,
    verdict,
)


def _oracle_ranks(values: Sequence[float]) -> tuple[list[float], float]:
    """1-based ranks (ties get their average rank) and the tie term sum(t³ - t) over groups of t ties."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        average = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = average
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    return ranks, ties


def oracle_mann_whitney(baseline: Sequence[float], candidate: Sequence[float]) -> RankTest:
    """The Mann-Whitney U test as evaluators.sdk.significance computed it before the rank sums were counted by
    binary search."""
    n_b, n_c = len(baseline), len(candidate)
    if n_b == 0 or n_c == 0:
        return RankTest(0.0, 0.0, n_b, n_c, 0.0, 1.0)
    ranks, ties = _oracle_ranks([float(v) for v in candidate] + [float(v) for v in baseline])
    u_c = sum(ranks[:n_c]) - n_c * (n_c + 1) / 2.0
    u_b = n_b * n_c - u_c
    n = n_b + n_c
    variance = n_b * n_c / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0.0:
        return RankTest(u_c, u_b, n_b, n_c, 0.0, 1.0)
    shift = u_c - n_b * n_c / 2.0
    z = math.copysign(max(abs(shift) - 0.5, 0.0), shift) / math.sqrt(variance)
    return RankTest(u_c, u_b, n_b, n_c, z, min(1.0, math.erfc(abs(z) / math.sqrt(2.0))))


# Scores as evaluators give them: continuous, on a coarse grid (many ties), signed zeros, the ends of [0, 1],
# integers and booleans (ranked as floats), and extreme magnitudes.
GRID = [0.0, -0.0, 0.25, 0.5, 0.75, 1.0, 1, 0, True]
score = (
    st.sampled_from(GRID)
    | st.floats(0, 1)
    | st.floats(allow_nan=False)
    | st.integers(-3, 3)
    | st.sampled_from([math.inf, -math.inf, 1e-300, 5e-324])
)
sample = st.lists(score, max_size=60)


@settings(max_examples=400, deadline=None)
@given(sample, sample)
def test_same_test_as_the_ranking_oracle(baseline: list[float], candidate: list[float]) -> None:
    assert mann_whitney(baseline, candidate) == oracle_mann_whitney(baseline, candidate)


def _window(rng: random.Random, size: int, shift: float, decimals: int | None) -> list[float]:
    values = [min(1.0, max(0.0, rng.gauss(0.7 + shift, 0.2))) for _ in range(size)]
    return values if decimals is None else [round(v, decimals) for v in values]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 3000),
    st.integers(1, 3000),
    st.sampled_from([0.0, 0.005, 0.02, -0.02, 0.1]),
    st.sampled_from([None, 1, 2, 3]),
    st.sampled_from([30, 100, 1000]),
)
def test_same_verdicts_on_random_windows(
    seed: int, n_base: int, n_cand: int, shift: float, decimals: int | None, min_samples: int
) -> None:
    """Windows as the live comparisons see them: scores clipped to [0, 1] (piles of ties at the ends), rounded
    to a few decimals or not, the candidate shifted a little or not at all; pass = score >= 0.5."""
    rng = random.Random(seed)
    base, cand = _window(rng, n_base, 0.0, decimals), _window(rng, n_cand, shift, decimals)
    ranks, expected = mann_whitney(base, cand), oracle_mann_whitney(base, cand)
    assert ranks == expected
    test = two_proportions(sum(v >= 0.5 for v in base), n_base, sum(v >= 0.5 for v in cand), n_cand)
    for alpha in (0.01, 0.05):
        assert verdict(test, ranks, alpha, min_samples) == verdict(test, expected, alpha, min_samples)


@settings(max_examples=200, deadline=None)
@given(sample, sample)
def test_rank_terms_are_exact_integers(baseline: list[float], candidate: list[float]) -> None:
    cand = list(map(float, candidate))
    twice_u, ties = rank_terms(list(map(float, baseline)), cand)
    assert isinstance(twice_u, int) and isinstance(ties, int)
    if baseline and candidate:
        expected = oracle_mann_whitney(baseline, candidate)
        assert twice_u / 2.0 == expected.u_candidate
        assert ties == _oracle_ranks(cand + list(map(float, baseline)))[1]


@settings(max_examples=200, deadline=None)
@given(sample, sample, st.booleans())
def test_the_floats_entry_point_on_floats_in_any_order(
    baseline: list[float], candidate: list[float], runs: bool
) -> None:
    """As the live comparisons call it: floats, each side ascending (one window) or in arrival order."""
    b, c = list(map(float, baseline)), list(map(float, candidate))
    if runs:
        b.sort()
        c.sort()
    assert mann_whitney_floats(b, c) == oracle_mann_whitney(baseline, candidate)


def test_nan_scores_are_left_out() -> None:
    """A NaN has no rank (the old ranking put it wherever the sort left it, changing every rank after it)."""
    base, cand = [0.2, 0.4, 0.6, 0.8], [0.5, 0.7, 0.9]
    assert mann_whitney([0.2, math.nan, 0.4, 0.6, 0.8], [math.nan, 0.5, 0.7, 0.9]) == mann_whitney(base, cand)
