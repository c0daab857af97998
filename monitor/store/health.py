"""StoreHealth: whether the result store works, for the metrics and the logs, without stopping anything.

Every store operation (`open`, `write`, `prune`, `read`) reports its outcome here. A failure is counted
(`on_error(operation)`: agent_monitor_store_errors_total) and marks the operation failing until it next
succeeds; the store is available while no operation is failing (`available`, which
agent_monitor_review_available reads at scrape time; `on_change(available)` tells each change). One log line
when it becomes unavailable, one when it recovers: never one per batch. Evaluation and metrics never wait on it.

Worker processes keep their own quiet StoreHealth; each batch's report (`take_report`) travels back with the
batch's metrics tally and the daemon's StoreHealth applies it (`apply_report`) under the source "workers", so a
worker's failure is not cleared by the daemon's own successes (nor the reverse).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("monitor.store.sqlite")

OPERATIONS = ("write", "prune", "read", "open", "review")  # review: a review written (monitor/web/review_writer.py)
LOCAL = "daemon"
WORKERS = "workers"

FLAP_SECONDS = 60.0  # a failure this soon after a recovery line is not logged until this long after that line

# A worker's report: (errors by operation since the last report, failing operations and why, results lost by
# reason since the last report)
StoreReport = tuple[dict[str, int], dict[str, str], dict[str, int]]


class StoreUnavailable(RuntimeError):
    """The result store cannot answer now (not open, or a read failed); the review API answers 503 with it."""


class StoreHealth:
    def __init__(
        self,
        on_error: Callable[[str, int], None] | None = None,
        on_change: Callable[[bool], None] | None = None,
        *,
        quiet: bool = False,
        on_lost: Callable[[str, int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_error(operation, count)`: count failures; `on_change(available)`: the state changed; `quiet`: log
        nothing (a worker process: the daemon logs what its reports say); `on_lost(reason, results)`: count the
        results that could not be stored."""
        self._on_error = on_error
        self._on_change = on_change
        self._on_lost = on_lost
        self._quiet = quiet
        self._clock = clock
        self._lock = threading.Lock()
        self._failing: dict[tuple[str, str], str] = {}  # (source, operation) → the error
        self._errors: dict[str, int] = {}  # errors not yet taken into a report
        self._lost: dict[str, int] = {}  # results lost not yet taken into a report
        self._logged_available = True  # the state the last log line told
        self._line_at = -FLAP_SECONDS  # when the last state line was logged
        self._recovered_at = -FLAP_SECONDS  # when the last "available again" line was logged
        self._held = 0  # state changes not logged since the last line (flapping)

    @property
    def available(self) -> bool:
        return not self._failing

    def failing(self) -> dict[str, str]:
        """The failing operations and their errors (every source)."""
        with self._lock:
            return {operation: error for (_, operation), error in self._failing.items()}

    def failed(self, operation: str, error: object, *, counted_only: bool = False) -> None:
        """`operation` failed here: counted, and failing until it succeeds (`counted_only`: a consequence of
        another failure, a read while the store is not open, that leaves the state to that one)."""
        with self._lock:
            self._errors[operation] = self._errors.get(operation, 0) + 1
        if self._on_error is not None:
            self._on_error(operation, 1)
        if not counted_only:
            self._set(LOCAL, operation, _describe(error))

    def succeeded(self, operation: str) -> None:
        if (LOCAL, operation) in self._failing:
            self._set(LOCAL, operation, None)
        elif self._held:
            self._log_state("", "")

    def lost(self, reason: str, results: int) -> None:
        """`results` results could not be stored, for `reason` (docs/metrics.md)."""
        if results <= 0:
            return
        with self._lock:
            self._lost[reason] = self._lost.get(reason, 0) + results
        if self._on_lost is not None:
            self._on_lost(reason, results)

    def take_report(self) -> StoreReport:
        """The errors and lost results since the last report and what is failing now (a worker, after each
        batch)."""
        with self._lock:
            errors, self._errors = self._errors, {}
            lost, self._lost = self._lost, {}
            return errors, {operation: error for (_, operation), error in self._failing.items()}, lost

    def apply_report(self, report: StoreReport) -> None:
        """A worker's report: its errors and lost results are counted, its failing operations replace the
        workers' previous ones."""
        errors, failing, lost = report
        if self._on_error is not None:
            for operation, count in errors.items():
                self._on_error(operation, count)
        if self._on_lost is not None:
            for reason, count in lost.items():
                self._on_lost(reason, count)
        for operation in OPERATIONS:
            self._set(WORKERS, operation, failing.get(operation))

    def _set(self, source: str, operation: str, error: str | None) -> None:
        key = (source, operation)
        with self._lock:
            before = not self._failing
            if error is None:
                self._failing.pop(key, None)
            else:
                self._failing.setdefault(key, error)
            after = not self._failing
        if before != after and self._on_change is not None:
            self._on_change(after)
        if before != after or self._held:
            self._log_state(operation, error or "", source)

    def _log_state(self, operation: str, error: str, source: str = LOCAL) -> None:
        """Log the state when the log does not tell it yet: at once, except a failure within FLAP_SECONDS of the
        last recovery line, held (and counted) until FLAP_SECONDS after the last line."""
        if self._quiet:
            return
        now = self._clock()
        with self._lock:
            available = not self._failing
            if available == self._logged_available:
                if self._held and now - self._line_at >= FLAP_SECONDS:
                    held, self._held, self._line_at = self._held, 0, now
                    if available:
                        log.warning(
                            "result store available, after %d more failures in the last %.0fs (some operations "
                            "failed, others worked: see agent_monitor_store_errors_total)",
                            held,
                            FLAP_SECONDS,
                        )
                return
            if not available and now - self._recovered_at < FLAP_SECONDS:
                self._held += 1
                return
            held, self._held = self._held, 0
            self._logged_available, self._line_at = available, now
            if available:
                self._recovered_at = now
            if not error and not available:
                (source, operation), error = next(iter(self._failing.items()))
        flapping = f" ({held} more failures since the last line)" if held else ""
        if available:
            log.warning("result store available again: the review is back (%s recovered)%s", operation, flapping)
        else:
            where = "in an evaluation worker" if source == WORKERS else "in the daemon"
            lost = "reviews are not stored" if operation == "review" else "results are not stored"
            log.error(
                "result store unavailable: %s failed %s: %s; evaluation and metrics go on, %s and the review is "
                "unavailable until it recovers%s",
                operation,
                where,
                error,
                lost,
                flapping,
            )


def _describe(error: object) -> str:
    if isinstance(error, BaseException):
        text = str(error) or type(error).__name__
        return f"{type(error).__name__}: {text}"[:300]
    return str(error)[:300]
