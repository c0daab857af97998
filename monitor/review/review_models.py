"""Reviewers' verdicts as the review API, page and CLI show them: the review in force next to a verdict
(`ReviewBrief`), a stored review (`ReviewRecord`), a list of them and one result's audit trail, and the body of
`POST /api/v1/reviews` (`ReviewRequest`). The store's own row type is `monitor.store.reviews.StoredReview`;
`review_record` and `brief_of` turn one into these."""

from __future__ import annotations

import math
from typing import Literal, Protocol

from pydantic import Field, field_validator

from monitor.review.api_model import ApiModel
from monitor.store.reviews import MAX_LABEL, MAX_NOTE, ResultKey, ReviewInput, StoredReview

Agreement = Literal["agree", "disagree"]
VerdictName = Literal["pass", "fail", "skip"]
TRACE_ID_PATTERN = "^[0-9a-fA-F]{32}$"
MAX_CORRECTED_LABEL = 200
MAX_KEY_CHARS = 200  # evaluator, level and span id of a review's key


class ReviewBrief(ApiModel):
    """The review in force of one verdict, as shown next to it (`ResultItem.review`)."""

    agreement: Agreement
    reviewer: str
    corrected_score: float | None = None
    corrected_label: str | None = None
    note: str | None = None
    created_at: float


class ReviewRecord(ApiModel):
    """One stored review: the result it names, the evaluator's verdict as the reviewer saw it, the reviewer's
    verdict; `superseded_at` is None while it is in force (else when a later review replaced it)."""

    review_id: str
    trace_id: str
    evaluator: str
    level: str
    span_id: str = ""  # "" when the result names no span
    session_id: str | None = None
    service: str | None = None
    verdict: VerdictName  # the evaluator's: fail, pass, or skip
    verdict_score: float | None = None
    verdict_signature: str | None = None
    agreement: Agreement
    false_alarm: bool  # a failing verdict the reviewer disagrees with
    miss: bool  # a passing verdict the reviewer disagrees with
    reviewer: str
    corrected_score: float | None = None
    corrected_label: str | None = None
    note: str | None = None
    created_at: float
    superseded_at: float | None = None


class ReviewsPage(ApiModel):
    """Reviews in force, newest first."""

    items: list[ReviewRecord]


class ReviewHistory(ApiModel):
    """Every review of one result, newest first (the one in force first, if any)."""

    trace_id: str
    evaluator: str
    level: str
    span_id: str = ""
    items: list[ReviewRecord]


class ReviewFilter(ApiModel):
    """Which reviews in force to list; None means any. `since` is inclusive, on the review's time."""

    evaluator: str | None = None
    trace_id: str | None = None
    reviewer: str | None = None
    agreement: Agreement | None = None
    since: float | None = None


class ReviewRequest(ApiModel):
    """The body of `POST /api/v1/reviews`: the result (trace, evaluator, level, span when it names one) and the
    reviewer's verdict on it."""

    trace_id: str = Field(pattern=TRACE_ID_PATTERN, description="The trace's W3C id: 32 hex characters.")
    evaluator: str = Field(min_length=1, max_length=MAX_KEY_CHARS, description="The evaluator's metric label.")
    level: str = Field(
        default="trace", min_length=1, max_length=MAX_KEY_CHARS, description="trace, agent, llm or session."
    )
    span_id: str | None = Field(
        default=None,
        max_length=MAX_KEY_CHARS,
        description="The result's span: needed only when the evaluator has results on several spans of that level.",
    )
    agreement: Agreement
    reviewer: str = Field(min_length=1, max_length=MAX_LABEL, description="Who reviewed it (1 to 200 characters).")
    corrected_score: float | None = Field(default=None, description="The score the reviewer would give.")
    corrected_label: str | None = Field(default=None, max_length=MAX_CORRECTED_LABEL)
    note: str | None = Field(default=None, max_length=MAX_NOTE)

    @field_validator("reviewer")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("reviewer must not be blank")
        return value.strip()

    @field_validator("corrected_score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("corrected_score must be a finite number")
        return value

    def as_input(self) -> ReviewInput:
        key = ResultKey(self.trace_id.lower(), self.evaluator, self.level, self.span_id or "")
        return ReviewInput(key, self.agreement, self.reviewer, self.corrected_score, self.corrected_label, self.note)


class ReviewsReader(Protocol):
    """The reviews reads of the review reader (monitor/review/review_reads.py)."""

    def reviews_of_trace(self, trace_id: str) -> list[StoredReview]: ...

    def reviews_of_traces(self, trace_ids: list[str]) -> list[StoredReview]: ...

    def find_reviews(self, where: ReviewFilter, limit: int) -> list[StoredReview]: ...

    def review_history(self, key: ResultKey) -> list[StoredReview]: ...


def verdict_name(passed: bool | None) -> VerdictName:
    return "skip" if passed is None else "pass" if passed else "fail"


def review_record(review: StoredReview) -> ReviewRecord:
    return ReviewRecord(
        review_id=review.review_id,
        trace_id=review.trace_id,
        evaluator=review.evaluator,
        level=review.level,
        span_id=review.span_id,
        session_id=review.session_id,
        service=review.service,
        verdict=verdict_name(review.verdict_passed),
        verdict_score=review.verdict_score,
        verdict_signature=review.verdict_signature,
        agreement=review.agreement,
        false_alarm=review.false_alarm,
        miss=review.miss,
        reviewer=review.reviewer,
        corrected_score=review.corrected_score,
        corrected_label=review.corrected_label,
        note=review.note,
        created_at=review.created_at,
        superseded_at=review.superseded_at,
    )


def brief_of(review: StoredReview) -> ReviewBrief:
    return ReviewBrief(
        agreement=review.agreement,
        reviewer=review.reviewer,
        corrected_score=review.corrected_score,
        corrected_label=review.corrected_label,
        note=review.note,
        created_at=review.created_at,
    )
