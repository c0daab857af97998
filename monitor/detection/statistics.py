"""The tests of one signal's recent window against its baseline, from the windows' moments alone, and the
Benjamini–Hochberg adjustment over all the signals of a report.

scipy is imported inside the functions: the daemon pays its import (about a second) only once drift runs.

Proportions: the Pearson chi-square test of the 2×2 table with Yates' continuity correction, as
`scipy.stats.chi2_contingency` computes it (a test checks that they agree), its tail from `scipy.special.chdtrc`;
Fisher's exact test (`scipy.stats.fisher_exact`) when an expected count is under 5, where the chi-square
approximation fails. Measured on this host: `fisher_exact` takes 0.3–3.5 ms a table (it grows with the counts),
`chi2_contingency` 0.3 ms, the statistic computed here with `chdtrc` a few µs; a report tests thousands of ratios
a minute (200 agents × tools, evaluators and endings), so the exact test is kept for the small tables only.

Means: Welch's t-test from the windows' counts, means and sample variances (`ttest_ind_from_stats`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .model import Moments

EXACT_BELOW = 5.0  # the smallest expected count of a 2×2 table the chi-square approximation is used for


def _table(baseline: Moments, recent: Moments) -> tuple[float, float, float, float]:
    """(baseline hits, baseline misses, recent hits, recent misses), each within [0, n]."""
    b = min(max(baseline.total, 0.0), baseline.n)
    r = min(max(recent.total, 0.0), recent.n)
    return b, baseline.n - b, r, recent.n - r


def _chi2_yates(table: tuple[float, float, float, float]) -> float:
    """The p-value of the 2×2 table's chi-square test with Yates' correction (scipy's `chi2_contingency`)."""
    from scipy.special import chdtrc

    a, b, c, d = table
    n = a + b + c + d
    rows, cols = (a + b, c + d), (a + c, b + d)
    statistic = 0.0
    for i, observed in enumerate(table):
        expected = rows[i // 2] * cols[i % 2] / n
        deviation = abs(observed - expected)
        deviation -= min(0.5, deviation)  # scipy: the correction never moves a count past its expectation
        statistic += deviation * deviation / expected
    return float(chdtrc(1, statistic))


def ratio_p_value(baseline: Moments, recent: Moments) -> float | None:
    """The two-sided p-value of "the recent proportion equals the baseline's" (None: a window is empty)."""
    if baseline.n <= 0 or recent.n <= 0:
        return None
    table = _table(baseline, recent)
    a, b, c, d = table
    n = a + b + c + d
    hits, misses = a + c, b + d
    if hits == 0 or misses == 0:
        return 1.0  # all hits or all misses in both windows: nothing differs
    if min(min(a + b, c + d) * min(hits, misses) / n, n) < EXACT_BELOW:
        from scipy.stats import fisher_exact

        counts = [[round(a), round(b)], [round(c), round(d)]]
        return _unit(float(fisher_exact(counts).pvalue))
    return _unit(_chi2_yates(table))


def _variance(m: Moments) -> float:
    """The sample variance (n − 1) from the moments; rounding noise of equal values counts as 0."""
    mean = m.total / m.n
    spread = m.squares - m.n * mean * mean
    if spread <= 1e-12 * m.squares:  # within the sums' rounding (and never negative)
        return 0.0
    return spread / (m.n - 1)


def mean_p_value(baseline: Moments, recent: Moments) -> float | None:
    """The two-sided p-value of Welch's t-test of "the recent mean equals the baseline's" (None: a window holds
    fewer than 2 items). With no spread in either window, equal means give 1 and different ones 0."""
    if baseline.n < 2 or recent.n < 2:
        return None
    b_mean, r_mean = baseline.total / baseline.n, recent.total / recent.n
    b_var, r_var = _variance(baseline), _variance(recent)
    if b_var == 0 and r_var == 0:
        return 1.0 if math.isclose(b_mean, r_mean, rel_tol=1e-9, abs_tol=1e-12) else 0.0
    from scipy.stats import ttest_ind_from_stats

    result = ttest_ind_from_stats(
        b_mean, math.sqrt(b_var), baseline.n, r_mean, math.sqrt(r_var), recent.n, equal_var=False
    )
    p = float(result.pvalue)
    return 1.0 if math.isnan(p) else _unit(p)


def adjusted(p_values: Sequence[float]) -> list[float]:
    """The Benjamini–Hochberg q-values of a family of p-values (`scipy.stats.false_discovery_control`), in their
    order; each at least its p-value and at most 1."""
    if not p_values:
        return []
    from scipy.stats import false_discovery_control

    q_values = false_discovery_control(list(p_values), method="bh")
    return [_unit(max(float(q), p)) for q, p in zip(q_values, p_values)]


def _unit(p: float) -> float:
    return min(max(p, 0.0), 1.0)


__all__ = ["EXACT_BELOW", "adjusted", "mean_p_value", "ratio_p_value"]
