"""The reviews reads of the store's review reader (a mixin of `sqlite_reader.StoreReviewReader`, so both databases
answer alike): the reviews in force of a trace, of an evaluator or since a time (or matching a ReviewFilter), and
one result's audit trail.
A database from before schema version 7 has no reviews: every read is empty."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monitor.review.review_models import ReviewFilter
from monitor.review.sql import Columns
from monitor.store import reviews
from monitor.store.reviews import ResultKey, StoredReview


class ReviewReads:
    """`reviews_of_trace(s)`, `reviews_in_force`, `find_reviews` and `review_history` over `_run(read)` and
    `_columns_of(db)`."""

    _run: Callable[..., Any]
    _columns_of: Callable[[Any], Columns]

    def reviews_of_trace(self, trace_id: str) -> list[StoredReview]:
        return self._reviews(lambda db: reviews.reviews_of_trace(db, trace_id))

    def reviews_of_traces(self, trace_ids: list[str]) -> list[StoredReview]:
        return self._reviews(lambda db: reviews.reviews_of_traces(db, trace_ids))

    def reviews_in_force(
        self, evaluator: str | None = None, since: float | None = None, limit: int = 100_000
    ) -> list[StoredReview]:
        return self._reviews(lambda db: reviews.reviews_in_force(db, evaluator, since, limit))

    def find_reviews(self, where: ReviewFilter, limit: int) -> list[StoredReview]:
        """The reviews in force matching `where`, newest first."""
        filters = where.model_dump()
        return self._reviews(lambda db: reviews.find_reviews(db, limit, **filters))

    def review_history(self, key: ResultKey) -> list[StoredReview]:
        return self._reviews(lambda db: reviews.history(db, key))

    def _reviews(self, read: Callable[[Any], list[StoredReview]]) -> list[StoredReview]:
        return self._run(lambda db: read(db) if self._columns_of(db).reviews else [])
