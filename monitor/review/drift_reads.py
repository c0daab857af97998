"""Drift detection's reads and episode writes on the daemon's store (a mixin of `sqlite_reader.StoreReviewReader`,
so both databases answer alike): what the detector calls once a report (from a thread, never on the hot path).

`drift_window` is store/signal_reads.py's `window_aggregates` with a bound on its time: SQLite's progress handler
interrupts the reads past it (one bound for the whole window), PostgreSQL's statement timeout (and the client-side
deadline) holds each statement to it. `record_drift_episodes` writes in one short transaction of its own, beside
the store's writer (episodes change rarely, and a write queue of traces is no place to wait for their answer):
SQLite's on a read-write connection of its own (`BEGIN IMMEDIATE`, the busy timeout: WAL writers take turns),
PostgreSQL's on a connection of the store's pool. A failure is counted in the store's health and raised as
StoreUnavailable, like every read. `drift_bucket` and `keep_drift_bucket` read and keep the buckets of aggregates
kept in the store (store/drift_buckets.py), the latter in a short transaction like the episodes.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from monitor.store import drift_buckets, signal_reads
from monitor.store.signal_rows import DriftEpisode, WindowAggregates
from monitor.store.statements import SQLITE, dialect_of

T = TypeVar("T")
PROGRESS_STEPS = 10_000  # SQLite virtual machine steps between two looks at the bound


class DriftStoreReads:
    """`drift_window`, `drift_episodes` and `record_drift_episodes` over `_run(read, writing=...)`."""

    _run: Callable[..., Any]

    def drift_window(self, since: float, until: float, timeout: float | None = None) -> WindowAggregates:
        """Every aggregate of the rows stored at `since` <= time < `until` (signal_reads.window_aggregates), read
        within `timeout` seconds (None: the store's own statement timeout). Raises StoreUnavailable when the store
        cannot be read in time."""
        result: WindowAggregates = self._run(
            lambda db: bounded_read(db, timeout, lambda: signal_reads.window_aggregates(db, since, until))
        )
        return result

    def drift_bucket(self, start: float, size: float) -> WindowAggregates | None:
        """A bucket's aggregates as kept in the store (drift_buckets.py), None when it was not kept."""
        result: WindowAggregates | None = self._run(lambda db: drift_buckets.stored_bucket(db, start, size))
        return result

    def keep_drift_bucket(self, start: float, size: float, aggregates: WindowAggregates, before: float) -> None:
        """Keep a bucket's aggregates (the first copy stays) and forget the buckets that start before `before`."""
        now = time.time()
        self._run(lambda db: drift_buckets.keep_bucket(db, start, size, aggregates, now, before), writing=True)

    def drift_episodes(self) -> list[DriftEpisode]:
        """The drift episodes stored (still active)."""
        result: list[DriftEpisode] = self._run(signal_reads.drift_episodes)
        return result

    def record_drift_episodes(
        self, started: Sequence[DriftEpisode], ended: Sequence[tuple[str, str, str, str]]
    ) -> None:
        """Store the episodes `started` (one already stored keeps its `since`: the first writer's) and forget those
        `ended` (service, agent, signal, subject), in one transaction."""
        if started or ended:
            self._run(lambda db: signal_reads.record_drift_episodes(db, started, ended), writing=True)


def bounded_read(db: Any, timeout: float | None, read: Callable[[], T]) -> T:
    """`read()` on `db` within `timeout` seconds (None: the store's own statement timeout)."""
    if timeout is None:
        return read()
    if dialect_of(db) != SQLITE:
        with db.long_statements(timeout):
            return read()
    deadline = time.monotonic() + timeout
    db.set_progress_handler(lambda: time.monotonic() >= deadline, PROGRESS_STEPS)
    try:
        return read()
    finally:
        db.set_progress_handler(None, 0)


@contextlib.contextmanager
def sqlite_writing(path: Any, busy_timeout: float) -> Iterator[sqlite3.Connection]:
    """A read-write connection to the store file `path` in one `BEGIN IMMEDIATE` transaction, committed when the
    block ends (rolled back when it raises), then closed."""
    db = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout)
    try:
        db.execute("BEGIN IMMEDIATE")
        yield db
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.close()
