"""The tests from moments: p-values in [0, 1], the chi-square as scipy's `chi2_contingency` computes it, Fisher's
exact test for small tables, Welch's t-test from stats, and Benjamini–Hochberg q-values."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency, fisher_exact, ttest_ind

from monitor.detection.model import Moments
from monitor.detection.statistics import adjusted, mean_p_value, ratio_p_value

from .builders import ratio, sample


@st.composite
def proportions(draw: st.DrawFn) -> Moments:
    n = draw(st.integers(min_value=0, max_value=100_000))
    return ratio(n, draw(st.integers(min_value=0, max_value=n)))


@st.composite
def samples(draw: st.DrawFn) -> Moments:
    n = draw(st.integers(min_value=0, max_value=10_000))
    mean = draw(st.floats(min_value=0, max_value=1e6))
    sd = draw(st.floats(min_value=0, max_value=1e5))
    return sample(n, mean, sd) if n else Moments()


@settings(max_examples=200)
@given(proportions(), proportions())
def test_a_ratio_p_value_is_a_probability(baseline: Moments, recent: Moments) -> None:
    p = ratio_p_value(baseline, recent)
    if baseline.n == 0 or recent.n == 0:
        assert p is None
    else:
        assert p is not None and 0.0 <= p <= 1.0


@settings(max_examples=200)
@given(samples(), samples())
def test_a_mean_p_value_is_a_probability(baseline: Moments, recent: Moments) -> None:
    p = mean_p_value(baseline, recent)
    if baseline.n < 2 or recent.n < 2:
        assert p is None
    else:
        assert p is not None and 0.0 <= p <= 1.0


@settings(max_examples=100)
@given(st.one_of(proportions(), samples()))
def test_identical_windows_give_one(window: Moments) -> None:
    if window.n >= 2:
        assert mean_p_value(window, window) == pytest.approx(1.0)
        if window.total == int(window.total) and window.total <= window.n:
            assert ratio_p_value(window, window) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "table",
    [((60, 2040), (30, 270)), ((500, 9500), (700, 9300)), ((1000, 0), (990, 10)), ((40, 60), (45, 55))],
)
def test_large_tables_are_scipys_chi_square_with_yates_correction(table: tuple[tuple[int, int], ...]) -> None:
    (a, b), (c, d) = table
    expected = chi2_contingency([[a, b], [c, d]]).pvalue
    assert ratio_p_value(ratio(a + b, a), ratio(c + d, c)) == pytest.approx(expected, rel=1e-9)


def test_small_tables_use_fishers_exact_test() -> None:
    """Error rate 1 % → 5 % at 2100 vs 300 traces: an expected count of 4.5 recent errors."""
    assert ratio_p_value(ratio(2100, 21), ratio(300, 15)) == pytest.approx(fisher_exact([[21, 2079], [15, 285]])[1])


def test_no_hit_or_no_miss_in_either_window_is_no_difference() -> None:
    assert ratio_p_value(ratio(500, 0), ratio(300, 0)) == 1.0
    assert ratio_p_value(ratio(500, 500), ratio(300, 300)) == 1.0


def test_welch_from_moments_is_welch_from_values() -> None:
    baseline = [1.0, 2.0, 3.5, 4.0, 2.5, 3.0]
    recent = [5.0, 6.5, 4.0, 7.0]
    moments = [Moments(n=len(v), total=sum(v), squares=sum(x * x for x in v)) for v in (baseline, recent)]
    expected = ttest_ind(baseline, recent, equal_var=False).pvalue
    assert mean_p_value(*moments) == pytest.approx(expected, rel=1e-9)


def test_no_spread_in_either_window() -> None:
    assert mean_p_value(sample(50, 3.0, 0.0), sample(40, 3.0, 0.0)) == 1.0
    assert mean_p_value(sample(50, 3.0, 0.0), sample(40, 4.0, 0.0)) == 0.0
    assert mean_p_value(sample(1, 3.0, 0.0), sample(40, 4.0, 1.0)) is None


def test_no_spread_in_one_window_is_still_tested() -> None:
    p = mean_p_value(sample(100, 0.0, 0.0), sample(50, 2.0, 1.0))
    assert p is not None and p < 1e-10


@settings(max_examples=200)
@given(st.lists(st.floats(min_value=0, max_value=1), max_size=300))
def test_q_values_are_at_least_their_p_values(p_values: list[float]) -> None:
    q_values = adjusted(p_values)
    assert len(q_values) == len(p_values)
    assert all(p <= q <= 1.0 for p, q in zip(p_values, q_values))
    ranked = sorted(zip(p_values, q_values))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(ranked))  # the order of the p-values is kept


def test_benjamini_hochberg() -> None:
    assert adjusted([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert adjusted([]) == []


@pytest.mark.integration
def test_scipy_is_imported_only_when_a_test_runs() -> None:
    """The daemon pays scipy's import only once drift runs: the detector's modules do not import it."""
    probe = "import sys, monitor.detection.detect, monitor.detection.moments; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
