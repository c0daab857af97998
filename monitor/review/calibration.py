"""Which threshold of a scored evaluator matches its reviewers best (`agent-monitor calibrate`).

Each review in force of a scored result gives the truth about that result, "should fail" or not: a corrected score
decides by the configured threshold (below it: should fail); otherwise the reviewer's agreement does (agreeing with
a failure or disagreeing with a pass: should fail). A candidate threshold t fails the results scored below t (the
SDK's rule: a result passes at score >= threshold). Candidates are the distinct reviewed scores and the configured
threshold; for each: the agreement with the reviewers (share of results it decides as they did), the precision and
recall of its failures, and the counts. The suggestion is the candidate of the highest agreement (ties go to the
configured threshold, then to the candidate nearest it, then to the lower), refused with fewer than `min_reviews`
scored reviews. Skips and results without a score are left out (counted).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from monitor.config.review import MIN_REVIEWS
from monitor.review.api_model import ApiModel
from monitor.store.reviews import StoredReview


class Judged(NamedTuple):
    """One reviewed result: its score and whether reviewers say it should fail."""

    score: float
    should_fail: bool


class ThresholdRow(ApiModel):
    threshold: float
    configured: bool  # the configured threshold
    agreement: float  # (tp + tn) / reviews
    precision: float | None  # tp / (tp + fp): failures reviewers would fail; None without failures
    recall: float | None  # tp / (tp + fn): what reviewers would fail that fails; None when they fail nothing
    fails: int  # results it fails (tp + fp)
    tp: int  # fails, reviewers would fail
    fp: int  # fails, reviewers would pass (false alarms)
    fn: int  # passes, reviewers would fail (misses)
    tn: int  # passes, reviewers would pass


class Calibration(ApiModel):
    evaluator: str
    configured_threshold: float
    since: float | None
    reviews: int  # scored reviews used
    skips: int = 0  # reviews of skips: left out
    unscored: int = 0  # reviews of results without a score: left out
    min_reviews: int = MIN_REVIEWS
    rows: list[ThresholdRow]  # by threshold, ascending
    suggested: ThresholdRow | None = None  # None: too few reviews (see `note`)
    note: str


def truth(review: StoredReview, threshold: float) -> bool:
    """Whether reviewers say the result should fail: by its corrected score when given, else by the agreement."""
    if review.corrected_score is not None:
        return review.corrected_score < threshold
    failed = review.verdict_passed is False
    return failed if review.agreement == "agree" else not failed


def judged(reviews: Iterable[StoredReview], threshold: float) -> tuple[list[Judged], int, int]:
    """The scored reviews as Judged, and how many were skips and unscored results (left out)."""
    found: list[Judged] = []
    skips = unscored = 0
    for review in reviews:
        if review.verdict_passed is None:
            skips += 1
        elif review.verdict_score is None:
            unscored += 1
        else:
            found.append(Judged(review.verdict_score, truth(review, threshold)))
    return found, skips, unscored


def row(items: list[Judged], threshold: float, configured: float) -> ThresholdRow:
    """How the candidate `threshold` decides `items` against the reviewers."""
    tp = sum(1 for i in items if i.score < threshold and i.should_fail)
    fp = sum(1 for i in items if i.score < threshold and not i.should_fail)
    fn = sum(1 for i in items if i.score >= threshold and i.should_fail)
    tn = len(items) - tp - fp - fn
    return ThresholdRow(
        threshold=threshold,
        configured=threshold == configured,
        agreement=(tp + tn) / len(items) if items else 0.0,
        precision=tp / (tp + fp) if tp + fp else None,
        recall=tp / (tp + fn) if tp + fn else None,
        fails=tp + fp,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
    )


def calibrate(
    evaluator: str,
    reviews: Iterable[StoredReview],
    configured: float,
    since: float | None = None,
    min_reviews: int = MIN_REVIEWS,
) -> Calibration:
    """The calibration table of `evaluator` over its reviews in force, and the suggested threshold."""
    items, skips, unscored = judged(reviews, configured)
    candidates = sorted({*(i.score for i in items), configured})
    rows = [row(items, t, configured) for t in candidates]
    suggested = None
    if not items:
        note = "no scored review: nothing to calibrate"
    elif len(items) < min_reviews:
        note = f"no suggestion: {len(items)} scored reviews, fewer than the minimum {min_reviews} (--min-reviews)"
    else:
        suggested = min(
            rows, key=lambda r: (-r.agreement, not r.configured, abs(r.threshold - configured), r.threshold)
        )
        current = next(r for r in rows if r.configured)
        backing = f"agreement {suggested.agreement:.1%} on {len(items)} reviews"
        if suggested.configured:
            note = f"the configured threshold {configured:g} matches reviewers best: {backing}"
        else:
            note = (f"suggested threshold {suggested.threshold:g} matches reviewers best: {backing} "
                    f"(the configured {configured:g}: {current.agreement:.1%})")  # fmt: skip
    return Calibration(
        evaluator=evaluator,
        configured_threshold=configured,
        since=since,
        reviews=len(items),
        skips=skips,
        unscored=unscored,
        min_reviews=min_reviews,
        rows=rows,
        suggested=suggested,
        note=note,
    )
