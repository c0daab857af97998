"""The agreement figures for a polled endpoint: computed from the reviews in force at most every `ttl` seconds, on
a worker thread, never on the caller's (the event loop serving /api/v1/evaluators and /review must not wait on the
store). A caller gets the figures last computed and, when they are older than `ttl`, starts one recomputation:
the first call after start-up (or after `invalidate`) answers the previous figures (none at first) and the next
ones the new. A failed read is logged and the previous figures are kept."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from monitor.review.agreement import EvaluatorAgreement, agreement_by_evaluator
from monitor.store.reviews import StoredReview

log = logging.getLogger(__name__)

TTL = 5.0  # seconds the figures are served before they are computed again


class AgreementCache:
    """`current()`: the agreement per evaluator, refreshed in the background from `read()` (the reviews in force)."""

    def __init__(
        self,
        read: Callable[[], Iterable[StoredReview]],
        ttl: float = TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read = read
        self.ttl = ttl
        self.clock = clock
        self._figures: dict[str, EvaluatorAgreement] = {}
        self._computed_at: float | None = None  # None: never computed, or invalidated
        self._refreshing = False
        self._generation = 0  # bumped by invalidate: a refresh begun before it leaves the figures stale
        self._failing = False
        self._lock = threading.Lock()

    def current(self) -> Mapping[str, EvaluatorAgreement]:
        """The figures last computed; starts a recomputation on a worker thread when they are stale."""
        with self._lock:
            stale = self._computed_at is None or self.clock() - self._computed_at >= self.ttl
            start = stale and not self._refreshing
            if start:
                self._refreshing = True
            figures = self._figures
        if start:
            threading.Thread(target=self._refresh, name="agreement-figures", daemon=True).start()
        return figures

    def invalidate(self) -> None:
        """A review was written: the next `current()` recomputes."""
        with self._lock:
            self._computed_at = None
            self._generation += 1

    def refresh(self) -> Mapping[str, EvaluatorAgreement]:
        """Compute the figures now, on the caller's thread (the CLI, tests); the figures."""
        with self._lock:
            self._refreshing = True
        self._refresh()
        return self._figures

    def _refresh(self) -> None:
        with self._lock:
            started, generation = self.clock(), self._generation
        try:
            figures = agreement_by_evaluator(self.read())
        except Exception as exc:
            if not self._failing:
                log.warning("agreement figures: reading the reviews failed (the last figures are kept): %r", exc)
            self._failing = True
            with self._lock:
                self._refreshing = False
                if generation == self._generation:
                    self._computed_at = started  # try again after ttl, not on every poll
            return
        if self._failing:
            log.info("agreement figures: reading the reviews works again")
        self._failing = False
        with self._lock:
            self._figures = figures
            self._refreshing = False
            if generation == self._generation:
                self._computed_at = started
