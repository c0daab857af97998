"""How often reviewers agree with each evaluator, from the reviews in force (monitor/store/reviews.py).

Per evaluator: `alarm_precision`, the share of its reviewed failures that reviewers confirmed (agreed with: the
precision of its alarms), and `pass_confirmation`, the share of its reviewed passes they confirmed; each with its
counts and a 95% Wilson score interval (`evaluators.sdk.significance.wilson_interval`, the project's own, also
behind the variant comparisons). Reviewed skips have no verdict to confirm: they are counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from evaluators.sdk.significance import wilson_interval
from monitor.review.api_model import ApiModel
from monitor.store.reviews import StoredReview

CONFIDENCE = 0.95


class ReviewedShare(ApiModel):
    """`confirmed` of `reviewed` verdicts agreed with; `ratio` and its 95% Wilson interval (None: none reviewed)."""

    confirmed: int
    reviewed: int
    ratio: float | None = None
    lower: float | None = None
    upper: float | None = None


class EvaluatorAgreement(ApiModel):
    """Reviewers' agreement with one evaluator, over the reviews in force."""

    reviews: int  # reviews in force of its results: failures, passes and skips
    alarm_precision: ReviewedShare  # failures reviewed, of which confirmed (disagreed with: false alarms)
    pass_confirmation: ReviewedShare  # passes reviewed, of which confirmed (disagreed with: misses)
    skips_reviewed: int = 0  # skips reviewed: no verdict, not in either share
    last_reviewed_at: float | None = None  # Unix seconds of the newest review


def share(confirmed: int, reviewed: int) -> ReviewedShare:
    """`confirmed` of `reviewed`, with the ratio and its 95% Wilson score interval."""
    if reviewed == 0:
        return ReviewedShare(confirmed=0, reviewed=0)
    lower, upper = wilson_interval(confirmed, reviewed, 1.0 - CONFIDENCE)
    return ReviewedShare(
        confirmed=confirmed,
        reviewed=reviewed,
        ratio=confirmed / reviewed,
        lower=lower if math.isfinite(lower) else None,
        upper=upper if math.isfinite(upper) else None,
    )


def agreement_by_evaluator(reviews: Iterable[StoredReview]) -> dict[str, EvaluatorAgreement]:
    """The agreement figures of every evaluator with a review among `reviews` (the reviews in force)."""
    counts: dict[str, list[int]] = {}  # evaluator -> [failures, confirmed, passes, confirmed, skips]
    latest: dict[str, float] = {}
    for review in reviews:
        tally = counts.setdefault(review.evaluator, [0, 0, 0, 0, 0])
        agreed = int(review.agreement == "agree")
        if review.verdict_passed is False:
            tally[0] += 1
            tally[1] += agreed
        elif review.verdict_passed is True:
            tally[2] += 1
            tally[3] += agreed
        else:
            tally[4] += 1
        latest[review.evaluator] = max(latest.get(review.evaluator, review.created_at), review.created_at)
    return {
        name: EvaluatorAgreement(
            reviews=failures + passes + skips,
            alarm_precision=share(failed_confirmed, failures),
            pass_confirmation=share(passed_confirmed, passes),
            skips_reviewed=skips,
            last_reviewed_at=latest[name],
        )
        for name, (failures, failed_confirmed, passes, passed_confirmed, skips) in counts.items()
    }
