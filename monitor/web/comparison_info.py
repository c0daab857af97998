"""The live variant comparisons (metrics.variant_compare) as the review API and page show them."""

from __future__ import annotations

import math
from collections.abc import Callable

from monitor.metrics.variant_compare import ComparisonState
from monitor.metrics.windows import WindowSnapshot
from monitor.review.models import PairwiseCounts, VariantComparison, VariantSide

# (baseline, candidate) → the pairwise judges' counts of those two variants (empty when none is configured)
PairwiseSource = Callable[[str, str], list[PairwiseCounts]]


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _side(variant: str, window: WindowSnapshot) -> VariantSide:
    return VariantSide(variant=variant, passed=window.passed, total=window.verdicts, pass_ratio=window.pass_ratio)


def comparison_info(state: ComparisonState, pairwise: PairwiseSource | None = None) -> VariantComparison:
    spec, test = state.spec, state.proportions
    both = test.base_total > 0 and test.cand_total > 0
    return VariantComparison(
        evaluator=spec.evaluator,
        baseline=_side(spec.baseline, state.baseline),
        candidate=_side(spec.candidate, state.candidate),
        window=spec.window_seconds,
        min_samples=spec.min_samples,
        alpha=spec.alpha,
        delta=_finite(test.delta),
        delta_lower=_finite(test.ci_low),
        delta_upper=_finite(test.ci_high),
        p_value_pass_rate=test.p_value if both else None,
        p_value_scores=state.ranks.p_value if state.ranks is not None else None,
        verdict=state.verdict.value,
        reason=state.verdict.reason,
        pairwise=pairwise(spec.baseline, spec.candidate) if pairwise is not None else [],
    )


def comparison_infos(
    states: Callable[[], list[ComparisonState]], pairwise: PairwiseSource | None = None
) -> Callable[[], list[VariantComparison]]:
    """A callable of every configured comparison now, in configured order."""
    return lambda: [comparison_info(state, pairwise) for state in states()]
