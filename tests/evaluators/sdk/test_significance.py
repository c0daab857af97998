"""evaluators.sdk.significance against published values, its edge cases and its invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluators.sdk.significance import (
    ProportionTest,
    RankTest,
    Verdict,
    mann_whitney,
    two_proportions,
    verdict,
    wilson_interval,
)

# --- two proportions: published values ------------------------------------------------------------------

# Newcombe RG (1998), "Interval estimation for the difference between independent proportions: comparison of
# eleven methods", Statistics in Medicine 17:873-890, Table II, method 10 (hybrid score), 95%, 4 decimals.
# Examples (a) and (b) are also the reference values of the propint R package's tests (m-Py/propint).
# Table II gives p1 - p2 for x1/n1 and x2/n2: here x1/n1 is the candidate and x2/n2 the baseline.
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),  # (a)
    ((9, 10, 3, 10), (0.1705, 0.8090)),  # (b)
    ((5, 56, 0, 29), (-0.0381, 0.1926)),  # (d)
    ((0, 10, 0, 20), (-0.1611, 0.2775)),  # (e)
    ((0, 10, 0, 10), (-0.2775, 0.2775)),  # (f)
    ((10, 10, 0, 20), (0.6791, 1.0000)),  # (g)
    ((10, 10, 0, 10), (0.6075, 1.0000)),  # (h)
]


@pytest.mark.parametrize("counts, interval", NEWCOMBE_TABLE_II)
def test_newcombe_hybrid_score_interval(counts: tuple[int, int, int, int], interval: tuple[float, float]) -> None:
    x1, n1, x2, n2 = counts
    test = two_proportions(x2, n2, x1, n1)
    assert test.delta == pytest.approx(x1 / n1 - x2 / n2)
    assert (round(test.ci_low, 4), round(test.ci_high, 4)) == interval


def test_pooled_z_test_textbook_example() -> None:
    # Prentice Hall TI-83 companion, "Two Proportion Population Test": n1 = 200, p1 = .22 (44), n2 = 300,
    # p2 = .18 (54); 2-PropZTest p-value .270 (two-sided).
    test = two_proportions(54, 300, 44, 200)
    assert round(test.p_value, 3) == 0.270
    # z by hand: pooled 98/500 = .196, SE = sqrt(.196 * .804 * (1/200 + 1/300)) = .036238
    assert test.z == pytest.approx(0.04 / math.sqrt(0.196 * 0.804 * (1 / 200 + 1 / 300)))
    assert round(test.z, 4) == 1.1038


def test_pooled_z_test_library_example() -> None:
    # stat-tests (yang-zhang/stat-tests) README, two_sample_proportion_test(x1=20, n1=300, x2=21, n2=298):
    # z = -0.18400991456652802, p = 0.85400567703455788 (z of sample 1 minus sample 2).
    test = two_proportions(21, 298, 20, 300)
    assert test.z == pytest.approx(-0.18400991456652802, rel=1e-12)
    assert test.p_value == pytest.approx(0.85400567703455788, rel=1e-12)


def test_wilson_interval() -> None:
    # Newcombe RG (1998), "Two-sided confidence intervals for the single proportion: comparison of seven
    # methods", Stat Med 17:857-872, Table I, method 3 (score): 81/263 -> 0.2553 to 0.3662; 0/20 -> 0 to 0.1611
    assert tuple(round(v, 4) for v in wilson_interval(81, 263)) == (0.2553, 0.3662)
    assert tuple(round(v, 4) for v in wilson_interval(0, 20)) == (0.0, 0.1611)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


# --- two proportions: edge cases ------------------------------------------------------------------------


def test_zero_failures_on_both_sides() -> None:
    test = two_proportions(50, 50, 50, 50)
    assert (test.base_rate, test.cand_rate, test.delta, test.z, test.p_value) == (1.0, 1.0, 0.0, 0.0, 1.0)
    assert -0.08 < test.ci_low < 0 < test.ci_high < 0.08  # not degenerate, unlike the Wald interval


def test_all_failing_on_both_sides() -> None:
    test = two_proportions(0, 30, 0, 40)
    assert (test.z, test.p_value) == (0.0, 1.0)
    assert test.ci_low < 0 < test.ci_high


def test_one_sample_each() -> None:
    test = two_proportions(1, 1, 0, 1)
    assert test.delta == -1.0 and test.p_value == pytest.approx(math.erfc(math.sqrt(2) / math.sqrt(2)))
    assert -1.0 <= test.ci_low < test.ci_high < 1.0
    assert verdict(test, None, 0.05, 1) == Verdict(0, "no_significant_difference")


def test_empty_totals() -> None:
    test = two_proportions(0, 0, 3, 10)
    assert math.isnan(test.base_rate) and test.cand_rate == 0.3
    assert math.isnan(test.delta) and math.isnan(test.ci_low) and math.isnan(test.ci_high)
    assert (test.z, test.p_value) == (0.0, 1.0)
    assert verdict(test, None, 0.05, 0).reason == "no_significant_difference"


@pytest.mark.parametrize(
    "counts", [(-1, 10, 1, 10), (1, -10, 1, 10), (11, 10, 1, 10), (1, 10, 11, 10), (1, 10, -1, 10)]
)
def test_invalid_counts(counts: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError):
        two_proportions(*counts)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 2.0])
def test_invalid_alpha(alpha: float) -> None:
    with pytest.raises(ValueError):
        two_proportions(1, 2, 1, 2, alpha=alpha)


def test_alpha_widens_the_interval() -> None:
    wide, narrow = two_proportions(40, 50, 30, 50, alpha=0.01), two_proportions(40, 50, 30, 50, alpha=0.1)
    assert wide.ci_low < narrow.ci_low < narrow.ci_high < wide.ci_high
    assert wide.p_value == narrow.p_value


# --- Mann-Whitney ---------------------------------------------------------------------------------------


def test_mann_whitney_scipy_docstring_example() -> None:
    # scipy.stats.mannwhitneyu docs, example (Conover-style age of onset): males [19, 22, 16, 29, 24],
    # females [20, 11, 17, 12]: U1 = 17 for the males; method="asymptotic" p = 0.11134688653314041.
    test = mann_whitney([20, 11, 17, 12], [19, 22, 16, 29, 24])
    assert (test.u_candidate, test.u_baseline) == (17.0, 3.0)
    assert test.p_value == pytest.approx(0.11134688653314041, rel=1e-12)
    assert test.z > 0 and test.candidate_higher == pytest.approx(17 / 20)


def test_mann_whitney_with_ties_clickhouse_reference() -> None:
    # ClickHouse tests/queries/0_stateless/01560_mann_whitney.sql: mannWhitneyUTest (two-sided, continuity
    # correction, tie correction; values from scipy): U = 223.0, p = 0.5426959774289482. Ties: 530, 180, 111, 261.
    left = [310, 195, 530, 155, 530, 245, 385, 450, 465, 545, 170, 180, 125, 180, 230, 75, 430, 480, 495, 295]
    right = [116, 171, 176, 421, 111, 326, 481, 111, 346, 441, 261, 411, 206, 521, 456, 446, 296, 51, 426, 261]
    test = mann_whitney(right, left)
    assert (test.u_candidate, test.u_baseline) == (223.0, 177.0)
    assert test.p_value == pytest.approx(0.5426959774289482, rel=1e-12)


def test_mann_whitney_with_many_ties_nag_example() -> None:
    # NAG C Library nag_mann_whitney (g08amc) example: groups of 16 and 23 with many ties; test statistic
    # 86.0000 (U of group 1), normal statistic -2.8039, approximate (one-)tail probability 0.0025.
    group1 = [13, 6, 12, 7, 12, 7, 10, 7, 10, 7, 16, 7, 10, 8, 9, 8]
    group2 = [17, 6, 10, 8, 15, 8, 15, 10, 15, 10, 14, 10, 14, 11, 14, 11, 13, 12, 13, 12, 13, 12, 12]
    test = mann_whitney(group2, group1)
    assert test.u_candidate == 86.0 and round(test.z, 4) == -2.8039
    assert round(test.p_value / 2, 4) == 0.0025


def test_mann_whitney_edge_cases() -> None:
    assert mann_whitney([], [1.0, 2.0]) == RankTest(0.0, 0.0, 0, 2, 0.0, 1.0)
    assert mann_whitney([1.0], []).p_value == 1.0
    tied = mann_whitney([1.0] * 20, [1.0] * 30)
    assert (tied.u_candidate, tied.u_baseline, tied.z, tied.p_value) == (300.0, 300.0, 0.0, 1.0)
    single = mann_whitney([0.0], [1.0])
    assert (single.u_candidate, single.u_baseline) == (1.0, 0.0) and 0 < single.p_value <= 1
    same = mann_whitney([0.1, 0.5, 0.9], [0.1, 0.5, 0.9])
    assert same.p_value == 1.0 and same.z == 0.0


# --- verdict --------------------------------------------------------------------------------------------


def test_verdict_rule() -> None:
    worse = two_proportions(50, 50, 30, 50)
    better = two_proportions(30, 50, 50, 50)
    same = two_proportions(45, 50, 45, 50)
    assert verdict(worse, None, 0.05, 30) == Verdict(-1, "worse")
    assert verdict(better, None, 0.05, 30) == Verdict(1, "better")
    assert verdict(same, None, 0.05, 30) == Verdict(0, "no_significant_difference")
    assert verdict(worse, None, 0.05, 51) == Verdict(0, "insufficient_samples")
    assert verdict(worse, None, 1e-9, 30) == Verdict(0, "no_significant_difference")
    # the pass rates do not decide: the scores do
    lower = mann_whitney([0.9] * 40, [0.7] * 40)
    higher = mann_whitney([0.7] * 40, [0.9] * 40)
    assert verdict(same, lower, 0.05, 30) == Verdict(-1, "worse")
    assert verdict(same, higher, 0.05, 30) == Verdict(1, "better")
    # the pass rates decide first, even against the scores
    assert verdict(worse, higher, 0.05, 30) == Verdict(-1, "worse")


def test_identical_variants() -> None:
    scores = [i / 10 for i in range(11)] * 4
    test, ranks = two_proportions(30, 44, 30, 44), mann_whitney(scores, scores)
    assert (test.p_value, ranks.p_value) == (1.0, 1.0)
    assert verdict(test, ranks, 0.05, 30) == Verdict(0, "no_significant_difference")


# --- invariants -----------------------------------------------------------------------------------------

counts = st.integers(min_value=1, max_value=400).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
)


@given(counts, counts, st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_proportion_invariants(base: tuple[int, int], cand: tuple[int, int], alpha: float) -> None:
    test = two_proportions(*base, *cand, alpha=alpha)
    swapped = two_proportions(*cand, *base, alpha=alpha)
    assert -1.0 <= test.ci_low <= test.delta <= test.ci_high <= 1.0
    assert 0.0 <= test.p_value <= 1.0
    assert swapped.delta == -test.delta
    assert swapped.p_value == pytest.approx(test.p_value, abs=1e-12)
    assert swapped.z == pytest.approx(-test.z, abs=1e-12)
    assert (swapped.ci_low, swapped.ci_high) == pytest.approx((-test.ci_high, -test.ci_low), abs=1e-12)
    assert isinstance(test, ProportionTest)


scores = st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1), max_size=40)


@given(scores, scores)
def test_rank_invariants(baseline: list[float], candidate: list[float]) -> None:
    test = mann_whitney(baseline, candidate)
    swapped = mann_whitney(candidate, baseline)
    assert 0.0 <= test.p_value <= 1.0
    assert test.u_candidate + test.u_baseline == len(baseline) * len(candidate)
    assert (swapped.u_candidate, swapped.u_baseline) == (test.u_baseline, test.u_candidate)
    assert swapped.p_value == pytest.approx(test.p_value, abs=1e-12)
    assert swapped.z == pytest.approx(-test.z, abs=1e-12)
