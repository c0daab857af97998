"""StoreHealth: whether the result store works, for the metrics and the logs, without stopping anything.

Every store operation (`open`, `write`, `prune`, `read`) reports its outcome here. A failure is counted
(`on_error(operation)`: agent_monitor_store_errors_total) and marks the operation failing until it next
succeeds; the store is available while no operation is failing (`on_change(available)`:
agent_monitor_review_available). One log line when it becomes unavailable, one when it recovers: never one per
batch. Evaluation and metrics never wait on it.

Worker processes keep their own quiet StoreHealth; each batch's report (`take_report`) travels back with the
batch's metrics tally and the daemon's StoreHealth applies it (`apply_report`) under the source "workers", so a
worker's failure is not cleared by the daemon's own successes (nor the reverse).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("monitor.results.store")

OPERATIONS = ("write", "prune", "read", "open")
LOCAL = "daemon"
WORKERS = "workers"

# A worker's report: (errors by operation since the last report, failing operations and why)
StoreReport = tuple[dict[str, int], dict[str, str]]


class StoreUnavailable(RuntimeError):
    """The result store cannot answer now (not open, or a read failed); the review API answers 503 with it."""


class StoreHealth:
    def __init__(
        self,
        on_error: Callable[[str, int], None] | None = None,
        on_change: Callable[[bool], None] | None = None,
        *,
        quiet: bool = False,
    ) -> None:
        """`on_error(operation, count)`: count failures; `on_change(available)`: the state changed; `quiet`: log
        nothing (a worker process: the daemon logs what its reports say)."""
        self._on_error = on_error
        self._on_change = on_change
        self._quiet = quiet
        self._lock = threading.Lock()
        self._failing: dict[tuple[str, str], str] = {}  # (source, operation) → the error
        self._errors: dict[str, int] = {}  # errors not yet taken into a report

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

    def take_report(self) -> StoreReport:
        """The errors since the last report and what is failing now (a worker, after each batch)."""
        with self._lock:
            errors, self._errors = self._errors, {}
            return errors, {operation: error for (_, operation), error in self._failing.items()}

    def apply_report(self, report: StoreReport) -> None:
        """A worker's report: its errors are counted, its failing operations replace the workers' previous ones."""
        errors, failing = report
        if self._on_error is not None:
            for operation, count in errors.items():
                self._on_error(operation, count)
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
        if before == after:
            return
        if not self._quiet:
            if after:
                log.warning("result store available again: the review is back (%s recovered)", operation)
            else:
                where = "in an evaluation worker" if source == WORKERS else "in the daemon"
                log.error(
                    "result store unavailable: %s failed %s: %s; evaluation and metrics go on, results are not "
                    "stored and the review is unavailable until it recovers",
                    operation,
                    where,
                    error,
                )
        if self._on_change is not None:
            self._on_change(after)


def _describe(error: object) -> str:
    if isinstance(error, BaseException):
        text = str(error) or type(error).__name__
        return f"{type(error).__name__}: {text}"[:300]
    return str(error)[:300]
