"""Is a candidate version worse than the baseline? Two-sample tests on evaluator results, in pure Python.

- `two_proportions`: pass rates compared with the pooled two-proportion z-test, and a confidence interval for
  their difference by Newcombe's hybrid score method (Newcombe 1998, method 10).
- `mann_whitney`: scores compared with the Mann-Whitney U test (normal approximation, tie and continuity
  corrections, as `scipy.stats.mannwhitneyu(method="asymptotic")` and R's `wilcox.test(exact=FALSE)`).
- `verdict`: -1 (worse), 0 or 1 (better) from both, with a minimum sample size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice, repeat
from operator import ne, sub
from statistics import NormalDist
from typing import Literal

NAN = float("nan")

VerdictValue = Literal[-1, 0, 1]
VerdictReason = Literal["worse", "better", "no_significant_difference", "insufficient_samples"]


def _two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z: erfc(|z| / sqrt 2)."""
    return min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1 (exclusive), got {alpha!r}")


def wilson_interval(passed: int, total: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson's score interval for one proportion x/n (Newcombe 1998, method 3), with z = z_{1-alpha/2}:

    (2x + z² ± z·sqrt(z² + 4x(n-x)/n)) / (2(n + z²)).   (NaN, NaN) when n is 0.
    """
    if total == 0:
        return NAN, NAN
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    centre = passed + z * z / 2.0
    half = z * math.sqrt(passed * (total - passed) / total + z * z / 4.0)
    denominator = total + z * z
    return max(0.0, (centre - half) / denominator), min(1.0, (centre + half) / denominator)


@dataclass(frozen=True, slots=True)
class ProportionTest:
    """Baseline and candidate pass rates compared. delta = cand_rate - base_rate; [ci_low, ci_high] is a
    (1 - alpha) interval for it; z and p_value are from the pooled two-proportion z-test (two-sided)."""

    base_passed: int
    base_total: int
    cand_passed: int
    cand_total: int
    base_rate: float
    cand_rate: float
    delta: float
    ci_low: float
    ci_high: float
    z: float
    p_value: float
    alpha: float


def two_proportions(
    base_passed: int, base_total: int, cand_passed: int, cand_total: int, alpha: float = 0.05
) -> ProportionTest:
    """Compare the pass rates p1 = x1/n1 (baseline) and p2 = x2/n2 (candidate).

    Test: the pooled two-proportion z-test, p̂ = (x1 + x2) / (n1 + n2),
    z = (p2 - p1) / sqrt(p̂(1 - p̂)(1/n1 + 1/n2)), p = 2(1 - Φ(|z|)) = erfc(|z|/√2). When the pooled variance
    is 0 (both sides all pass or all fail) z is 0 and p is 1: nothing tells the two apart.

    Interval: Newcombe's hybrid score interval (Newcombe 1998, "Interval estimation for the difference between
    independent proportions: comparison of eleven methods", Stat Med 17:873-890, method 10). With Wilson
    intervals (l1, u1) for p1 and (l2, u2) for p2:
    delta - sqrt((p2 - l2)² + (u1 - p1)²)  to  delta + sqrt((u2 - p2)² + (p1 - l1)²).
    Unlike the Wald interval it stays inside [-1, 1], is not degenerate at zero failures and keeps its
    coverage on small samples.

    A total of 0 gives NaN rates, delta and interval, z 0 and p 1. Raises ValueError for negative counts,
    passed > total, or alpha outside (0, 1).
    """
    _check_alpha(alpha)
    for name, passed, total in (("base", base_passed, base_total), ("cand", cand_passed, cand_total)):
        if passed < 0 or total < 0:
            raise ValueError(f"{name}_passed and {name}_total must be 0 or more, got {passed} and {total}")
        if passed > total:
            raise ValueError(f"{name}_passed ({passed}) is more than {name}_total ({total})")
    p1 = base_passed / base_total if base_total else NAN
    p2 = cand_passed / cand_total if cand_total else NAN
    delta = p2 - p1
    z, p_value = 0.0, 1.0
    ci_low = ci_high = NAN
    if base_total and cand_total:
        pooled = (base_passed + cand_passed) / (base_total + cand_total)
        variance = pooled * (1.0 - pooled) * (1.0 / base_total + 1.0 / cand_total)
        if variance > 0.0:
            z = delta / math.sqrt(variance)
            p_value = _two_sided_p(z)
        l1, u1 = wilson_interval(base_passed, base_total, alpha)
        l2, u2 = wilson_interval(cand_passed, cand_total, alpha)
        ci_low = max(-1.0, delta - math.hypot(p2 - l2, u1 - p1))
        ci_high = min(1.0, delta + math.hypot(u2 - p2, p1 - l1))
    return ProportionTest(
        base_passed, base_total, cand_passed, cand_total, p1, p2, delta, ci_low, ci_high, z, p_value, alpha
    )


@dataclass(frozen=True, slots=True)
class RankTest:
    """Mann-Whitney U test of the candidate's scores against the baseline's.

    u_candidate counts the (candidate, baseline) pairs where the candidate's score is higher, ties counting
    one half: R_c - n_c(n_c + 1)/2 with R_c the candidate's rank sum. u_baseline = n_b·n_c - u_candidate.
    z > 0 when the candidate's scores tend to be higher; p_value is two-sided.
    """

    u_candidate: float
    u_baseline: float
    n_baseline: int
    n_candidate: int
    z: float
    p_value: float

    @property
    def candidate_higher(self) -> float:
        """u_candidate / (n_b·n_c): the probability that a candidate score beats a baseline one (ties: half);
        NaN when a sample is empty."""
        pairs = self.n_baseline * self.n_candidate
        return self.u_candidate / pairs if pairs else NAN


def _floats(values: Iterable[float]) -> list[float]:
    """`values` as floats, NaN left out (a NaN has no rank)."""
    floats = list(values)
    if set(map(type, floats)) - {float}:  # ints, bools, numpy scalars: ranked as their float values
        floats = list(map(float, floats))
    if any(map(math.isnan, floats)):
        floats = [v for v in floats if v == v]
    return floats


def rank_terms(baseline: Sequence[float], candidate: Sequence[float]) -> tuple[int, int]:
    """2·U_c and the tie term Σ(t³ - t), exactly (integers), of two samples of floats without NaN (any order;
    ascending runs, e.g. each window's scores sorted, make the sort linear).

    With R_c the candidate's rank sum, 2·U_c = 2·R_c - n_c(n_c + 1). The pooled sample is sorted by index, so
    each sorted position knows its side; a value's rank is its position (+1), or with ties the average of its
    group's first and last positions. Every step runs in C (sort, map, compress, repeat): no Python loop per
    value, and no float hashing (slower than the sort)."""
    pooled = [*baseline, *candidate]
    n, n_b = len(pooled), len(baseline)
    n_c = n - n_b
    order = sorted(range(n), key=pooled.__getitem__)
    ordered = list(map(pooled.__getitem__, order))
    is_candidate = list(map(n_b.__le__, order))
    starts_group = list(map(ne, islice(ordered, 1, None), ordered))  # position i + 1 starts a new group
    if all(starts_group):  # no ties at all: the usual case for continuous scores
        return 2 * sum(compress(range(1, n + 1), is_candidate)) - n_c * (n_c + 1), 0
    starts = [0, *compress(range(1, n), starts_group)]
    ends = [*starts[1:], n]
    sizes = list(map(sub, ends, starts))
    first = chain.from_iterable(map(repeat, starts, sizes))  # each position's group's first position
    last = chain.from_iterable(map(repeat, map(sub, ends, repeat(1)), sizes))
    ranks = sum(compress(first, is_candidate)) + sum(compress(last, is_candidate))  # 2·R_c - 2·n_c
    return ranks - n_c * (n_c - 1), sum(map(pow, sizes, repeat(3))) - n


def mann_whitney(baseline: Sequence[float], candidate: Sequence[float]) -> RankTest:
    """The Mann-Whitney U test, two-sided, by the normal approximation (Mann & Whitney 1947).

    U_c = R_c - n_c(n_c + 1)/2 (see RankTest for which U is which), mean μ = n_b·n_c/2,
    tie-corrected variance σ² = n_b·n_c/12 · ((N + 1) - Σ(t³ - t) / (N(N - 1))), N = n_b + n_c,
    z = sign(U_c - μ) · max(|U_c - μ| - 1/2, 0) / σ (continuity correction), p = erfc(|z|/√2).
    These are the values of scipy.stats.mannwhitneyu(candidate, baseline, method="asymptotic").
    p is 1 (z 0) when a sample is empty or every value is tied (σ = 0). NaN scores are left out.
    """
    return mann_whitney_floats(_floats(baseline), _floats(candidate))


def mann_whitney_floats(baseline: Sequence[float], candidate: Sequence[float]) -> RankTest:
    """`mann_whitney` of samples the caller guarantees are floats without NaN (as windows keep scores); any
    order, but ascending runs (e.g. each window's scores sorted) make the pooled sort linear."""
    n_b, n_c = len(baseline), len(candidate)
    if n_b == 0 or n_c == 0:
        return RankTest(0.0, 0.0, n_b, n_c, 0.0, 1.0)
    return rank_test(n_b, n_c, *rank_terms(baseline, candidate))


def rank_test(n_b: int, n_c: int, twice_u: int, ties: int) -> RankTest:
    """The Mann-Whitney test of samples of sizes n_b (baseline) and n_c (candidate) from their `rank_terms`
    (2·U_c and the tie term), however those were obtained (e.g. kept up to date as windows change)."""
    if n_b == 0 or n_c == 0:
        return RankTest(0.0, 0.0, n_b, n_c, 0.0, 1.0)
    u_c = twice_u / 2.0
    u_b = n_b * n_c - u_c
    n = n_b + n_c
    variance = n_b * n_c / 12.0 * ((n + 1) - float(ties) / (n * (n - 1)))
    if variance <= 0.0:
        return RankTest(u_c, u_b, n_b, n_c, 0.0, 1.0)
    shift = u_c - n_b * n_c / 2.0
    z = math.copysign(max(abs(shift) - 0.5, 0.0), shift) / math.sqrt(variance)
    return RankTest(u_c, u_b, n_b, n_c, z, _two_sided_p(z))


@dataclass(frozen=True, slots=True)
class Verdict:
    """-1 (candidate worse), 0 (no decision) or 1 (candidate better), and why."""

    value: VerdictValue
    reason: VerdictReason


def verdict(test: ProportionTest, ranks: RankTest | None, alpha: float, min_samples: int) -> Verdict:
    """The candidate judged against the baseline at significance level alpha.

    1. insufficient_samples (0) when either side has fewer than min_samples scored results (base_total,
       cand_total): too few to decide either way.
    2. When the pass rates differ significantly (two-proportion p < alpha): worse (-1) when the candidate's
       rate is lower (delta < 0), better (1) when higher.
    3. Otherwise, when `ranks` is given and the Mann-Whitney p < alpha: worse when the candidate's scores are
       lower (u_candidate < u_baseline), better when higher. Scores can move while pass rates do not, e.g. a
       latency score sliding down while staying above its threshold.
    4. Otherwise no_significant_difference (0).
    """
    _check_alpha(alpha)
    if test.base_total < min_samples or test.cand_total < min_samples:
        return Verdict(0, "insufficient_samples")
    if test.p_value < alpha and test.delta != 0:
        return Verdict(-1, "worse") if test.delta < 0 else Verdict(1, "better")
    if ranks is not None and ranks.p_value < alpha and ranks.u_candidate != ranks.u_baseline:
        return Verdict(-1, "worse") if ranks.u_candidate < ranks.u_baseline else Verdict(1, "better")
    return Verdict(0, "no_significant_difference")


__all__ = [
    "ProportionTest",
    "RankTest",
    "Verdict",
    "VerdictReason",
    "VerdictValue",
    "mann_whitney",
    "mann_whitney_floats",
    "rank_terms",
    "rank_test",
    "two_proportions",
    "verdict",
    "wilson_interval",
]
