"""Reviewers' verdicts, `agent_eval_reviews_total{evaluator, verdict, agreement}`: one per review written by this
process (a changed review counts again), by the evaluator's verdict reviewed (pass, fail, skip) and the
reviewer's agreement (agree, disagree). Counters of several replicas add up; the agreement figures themselves are
computed from the reviews in the store, not from these counts."""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Counter

from monitor.metrics.labels import sanitize_label_value

AGREEMENTS = ("agree", "disagree")


class Reviewed(Protocol):
    """What the count reads of a review written (monitor.store.reviews.StoredReview)."""

    @property
    def evaluator(self) -> str: ...
    @property
    def verdict_passed(self) -> bool | None: ...
    @property
    def agreement(self) -> str: ...


class ReviewMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reviewed = Counter(
            "agent_eval_reviews",
            "Reviews of evaluation verdicts written by this process, by the evaluator's verdict (pass, fail, skip) "
            "and the reviewer's agreement with it (agree, disagree); a changed review counts again.",
            ["evaluator", "verdict", "agreement"],
            registry=registry,
        )

    def count(self, review: Reviewed) -> None:
        """One review written (`on_reviewed` of monitor.web.review_writer.ReviewWriter)."""
        if review.agreement not in AGREEMENTS:
            return
        passed = review.verdict_passed
        verdict = "skip" if passed is None else "pass" if passed else "fail"
        self.reviewed.labels(sanitize_label_value(review.evaluator), verdict, review.agreement).inc()
