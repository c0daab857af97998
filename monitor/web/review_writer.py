"""Reviewers' verdicts written through the daemon's result store (the one write the review API and page take; reads go
through the review reader, monitor/review/review_reads.py). Each review is one transaction of its own
(monitor/store/reviews.py), run off the event loop; `on_reviewed` hears every review written (the metrics count it).
Two replicas on one PostgreSQL store see the same reviews; two reviews of one result at the same moment: one is
refused (Conflict), to be sent again.

Raises the review's errors: NotFound (no stored result has that key), BadRequest (the database refuses this review's
row: that review's problem, the store's health untouched), Unavailable (no store, or it failed: the store's `review`
operation fails, until the next review written), Conflict.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from monitor.review.api_params import BadRequest, NotFound, ReviewError, Unavailable
from monitor.store.errors import is_unique_violation
from monitor.store.health import StoreUnavailable
from monitor.store.reviews import ResultNotFound, ReviewInput, StoredReview, write_review
from monitor.store.writer import QueuedResultStore

OnReviewed = Callable[[StoredReview], None]
REVIEW_OPERATION = "review"  # the store health's operation of review writes (agent_monitor_store_errors_total)


class Conflict(ReviewError):
    """Another review of the same result was written at the same moment."""

    status = 409


class ReviewWriter:
    """Write reviews to `store` (None: the store is disabled, every write Unavailable)."""

    def __init__(
        self,
        store: QueuedResultStore | None,
        on_reviewed: OnReviewed | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.on_reviewed = on_reviewed
        self.clock = clock

    @property
    def available(self) -> bool:
        return self.store is not None and self.store.available

    async def review(self, review: ReviewInput) -> StoredReview:
        """Record `review` (superseding the one in force on its result); the stored review."""
        store = self.store
        if store is None:
            raise Unavailable("review unavailable: the result store is disabled (store.enabled: false)")
        now = self.clock()
        failures: tuple[type[Exception], ...] = (StoreUnavailable, *store.DATABASE_ERRORS)
        try:
            stored = await asyncio.to_thread(store.transaction, lambda db: write_review(db, review, now))
        except ResultNotFound as exc:
            raise NotFound(str(exc)) from exc
        except failures as exc:
            if is_unique_violation(exc):  # reviews_in_force: another review of the result came first
                raise Conflict(f"{review.key.evaluator} on trace {review.key.trace_id} was reviewed at the same "
                               "moment by someone else: send it again") from exc  # fmt: skip
            if isinstance(exc, store.ROW_ERRORS):
                raise BadRequest(f"the result store refuses this review: {type(exc).__name__}: {exc}") from exc
            store.health.failed(REVIEW_OPERATION, exc)
            raise Unavailable(f"review unavailable: {type(exc).__name__}: {exc}") from exc
        except store.ROW_ERRORS as exc:  # a value the driver refuses before the database sees it (not a DB error)
            raise BadRequest(f"the result store refuses this review: {type(exc).__name__}: {exc}") from exc
        store.health.succeeded(REVIEW_OPERATION)
        if self.on_reviewed is not None:
            self.on_reviewed(stored)
        return stored
