"""QueuedResultStore: what every result store does whatever its database — queue evaluated traces for a writer
thread that inserts them in batches (so the event loop never waits on the database), keep the retention by age and
by size when due, report every failure to the store's StoreHealth and never raise it to the daemon.

The queue is bounded (MAX_QUEUED_TRACES): behind a database that is slow or hangs, what does not fit is dropped
and counted, so neither the event loop nor an evaluation worker (`write(wait=...)`) is ever held by it. A batch
that fails because the database refuses a row is written again in halves, so that row costs only itself; what is
lost is counted per result and by reason (StoreHealth.lost).

A subclass (store.ResultStore: SQLite; postgres.store.PostgresResultStore) gives the database side: `_store`
(one transaction of packed rows), `_ensure_open` (reopen when due), `prune`, `enforce_size`, `_fetch`
and `_close_database`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.packing import PASSED_FIELDS, Packed, Written, kept_results, merged, pack_one

log = logging.getLogger(__name__)

MAX_TRACES_PER_TRANSACTION = 2000
MAX_QUEUED_TRACES = 4096  # traces waiting for the writer thread; more are dropped (counted) while it is behind
PRUNE_EVERY_SECONDS = 300.0  # retention by age
SIZE_CHECK_EVERY_SECONDS = 10.0  # retention by size
REOPEN_SECONDS = 30.0  # between attempts to open a store that could not be opened
GiB = 1024**3
T = TypeVar("T")


@dataclass(slots=True)
class _FlushMarker:
    done: threading.Event


class QueuedResultStore(ABC):
    def __init__(
        self, retention_seconds: float, results: str, *, prune: bool, max_size: int, health: StoreHealth | None
    ) -> None:
        if results not in ("all", "failing"):
            raise ValueError(f"results must be 'all' or 'failing', got {results!r}")
        self.retention_seconds = retention_seconds
        self.max_size = max_size
        self.failing_only = results == "failing"
        self.prunes = prune
        self.health = health if health is not None else StoreHealth()
        self.write_errors = 0
        self._last_prune = 0.0
        self._last_size_check = 0.0
        self._queue: queue.Queue[list[Written | _FlushMarker] | None] = queue.Queue()
        self._queued = 0  # traces in the queue (bounded by MAX_QUEUED_TRACES)
        self._queued_lock = threading.Lock()
        self._behind = False  # a `write(wait=...)` gave up waiting: no more waits until the writer catches up
        self._writer: threading.Thread | None = None
        self._closed = False

    @property
    def available(self) -> bool:
        return self.health.available

    # --- the database side ----------------------------------------------------------------------
    @abstractmethod
    def _store(self, packed: Packed) -> None:
        """Insert the rows in one transaction; raises when it fails (StoreUnavailable when not open)."""

    @abstractmethod
    def _ensure_open(self) -> bool:
        """Whether the database is open, after a reopen when one is due (never raises)."""

    @abstractmethod
    def prune(self, now: float | None = None) -> int:
        """Delete rows older than the retention; the results deleted. Raises when it fails."""

    @abstractmethod
    def enforce_size(self) -> int:
        """Hold the database under `max_size`, the oldest traces first; the traces deleted. Raises when it fails."""

    DATABASE_ERRORS: tuple[type[Exception], ...] = ()  # what the database driver raises (counted as read errors)
    # What one row can cause (a value the database or its driver refuses): a batch that fails with one of these is
    # written again in halves, so that the rows it refuses are lost alone. Anything else (the database is not open,
    # full, read-only, gone) fails the whole batch at once.
    ROW_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, OverflowError)

    def _lost_reason(self, error: BaseException) -> str:
        """The `reason` label of results lost to `error` (`rejected`: a row refused; see docs/metrics.md)."""
        if isinstance(error, StoreUnavailable):
            return "unavailable"
        return "rejected" if isinstance(error, self.ROW_ERRORS) else "failed"

    @abstractmethod
    def _fetch(self, query: str, params: Sequence[Any]) -> list[tuple]:
        """Rows of a query with `?` placeholders, through the writer's connection (raises when it fails)."""

    def _read(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        """`_fetch`, its failures counted (a store that is not open: counted only) and raised."""
        failures: tuple[type[Exception], ...] = (*self.DATABASE_ERRORS, StoreUnavailable)
        try:
            rows = self._fetch(query, params)
        except failures as exc:
            self.health.failed("read", exc, counted_only=isinstance(exc, StoreUnavailable))
            raise
        self.health.succeeded("read")
        return rows

    @abstractmethod
    def transaction(self, work: Callable[[Any], T]) -> T:
        """`work(db)` in one transaction (committed when it returns, rolled back when it raises); `db` has
        `execute` and `executemany` with `?` placeholders. Raises when it fails (StoreUnavailable when not open)."""

    @abstractmethod
    def _close_database(self) -> None: ...

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the writer thread (before it, `write` inserts synchronously)."""
        self.start_writer()

    def start_writer(self) -> None:
        """Start the writer thread, from any thread (an evaluation worker process starts its own)."""
        if self._writer is None and not self._closed:
            self._writer = threading.Thread(target=self._write_loop, name="result-store", daemon=True)
            self._writer.start()

    async def shutdown(self, grace: float) -> None:
        """Write what is queued, stop the writer and close the database. Idempotent, safe before `start`."""
        if self._closed:
            return
        await asyncio.to_thread(self.close)

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, stop the writer and close the database; `timeout`: wait that long at most for the
        writer (a worker process exiting while its database hangs), what it has not written is lost."""
        if self._closed:
            return
        writer, self._writer = self._writer, None
        if writer is not None:
            self._queue.put(None)
            writer.join(timeout)
            if writer.is_alive():
                self._closed = True
                self._count_dropped(self._take_queued(), "failed", "the writer did not finish before the exit")
                return
        self._drain_synchronously()
        self._closed = True
        self._close_database()

    # --- writing --------------------------------------------------------------------------------
    def write(self, outcomes: Sequence[Written], wait: float = 0.0) -> None:
        """Queue evaluated traces for the writer thread (written at once when it is not running). Never raises:
        a failure is reported to the store's health and the rows are dropped, and so are traces the queue has no
        room for (MAX_QUEUED_TRACES: the database is slow or hangs). `wait`: seconds to wait for them to be
        written (a worker process, so that its rows are there when its batch is reported), given up, until the
        writer has caught up, once it took longer."""
        if not outcomes or self._closed:
            return
        if self._writer is None:
            self._insert(outcomes)
            return
        with self._queued_lock:
            room = self._queued + len(outcomes) <= MAX_QUEUED_TRACES
            if room:
                self._queued += len(outcomes)
        if not room:
            self._count_dropped(outcomes, "queue_full", "the writer is behind (the database is slow or hangs)")
            return
        done = threading.Event() if wait > 0 and not self._behind else None
        self._queue.put([*outcomes, _FlushMarker(done)] if done is not None else list(outcomes))
        if done is not None and not done.wait(wait):
            self._behind = True

    def flush(self, timeout: float = 30.0) -> None:
        """Block until everything queued so far is written (tests, shutdown)."""
        if self._writer is None:
            return
        done = threading.Event()
        self._queue.put([_FlushMarker(done)])
        done.wait(timeout)

    def _write_loop(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=SIZE_CHECK_EVERY_SECONDS)
            except queue.Empty:  # the worker processes insert: the retention still falls due here
                self._maintain()
                continue
            if item is None:
                return
            batch: list[Written | _FlushMarker] = list(item)
            while len(batch) < MAX_TRACES_PER_TRANSACTION:  # everything already waiting goes in one transaction
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.extend(more)
            self._insert(batch)
            if self._queue.empty():
                self._behind = False

    def _take_queued(self) -> list[Written]:
        pending: list[Written] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return pending
            for o in item or ():
                if isinstance(o, _FlushMarker):
                    o.done.set()
                else:
                    pending.append(o)

    def _drain_synchronously(self) -> None:
        self._insert(self._take_queued())

    def _count_dropped(self, outcomes: Sequence[Written], reason: str, why: str) -> None:
        if outcomes:
            self.write_errors += 1
            self.health.lost(reason, sum(kept_results(o, self.failing_only) for o in outcomes))
            self.health.failed("write", f"{len(outcomes)} evaluated traces dropped: {why}")

    def _insert(self, batch: Sequence[Written | _FlushMarker]) -> None:
        markers = [o for o in batch if isinstance(o, _FlushMarker)]
        outcomes = [o for o in batch if not isinstance(o, _FlushMarker)]
        with self._queued_lock:
            self._queued = max(self._queued - len(outcomes), 0)
        try:
            if outcomes:
                self._write_all(outcomes)
        finally:
            for marker in markers:
                marker.done.set()
        self._maintain()

    def _write_all(self, outcomes: Sequence[Written]) -> None:
        """Write the outcomes, one transaction when they all go in; a failure is reported, never raised."""
        now = time.time()
        parts: list[Packed] = []
        failures: list[tuple[BaseException, int]] = []
        for o in outcomes:
            try:
                parts.append(pack_one(o, now, self.failing_only))
            except Exception as exc:  # a value packing cannot take (a bug): that trace only
                failures.append((exc, kept_results(o, self.failing_only)))
        written = self._write_parts(parts, failures) if parts else 0
        for error, lost in failures:
            self.write_errors += 1
            log.debug("could not write evaluated traces to the result store: %r", error)
            self.health.lost(self._lost_reason(error), lost)
        if not failures:
            self.health.succeeded("write")
            return
        for error, _ in failures[:-1]:
            self.health.failed("write", error, counted_only=True)
        self.health.failed("write", failures[-1][0], counted_only=bool(written))
        if written:  # some rows refused, the others written: counted, and the store works
            self.health.succeeded("write")

    def _write_parts(self, parts: list[Packed], failures: list[tuple[BaseException, int]]) -> int:
        """Write `parts` in one transaction; when the database refuses a row (ROW_ERRORS), each half again, until
        the rows it refuses are alone: a bad row costs only itself. The parts written; the failures appended."""
        try:
            self._store(merged(parts))
        except Exception as exc:
            if len(parts) == 1 or not isinstance(exc, self.ROW_ERRORS):
                failures.append((exc, sum(p.kept for p in parts)))
                return 0
            half = len(parts) // 2
            return self._write_parts(parts[:half], failures) + self._write_parts(parts[half:], failures)
        return len(parts)

    # --- retention ------------------------------------------------------------------------------
    def _maintain(self) -> None:
        """Retention when due (the daemon's store only): by age every PRUNE_EVERY_SECONDS, by size every
        SIZE_CHECK_EVERY_SECONDS. A failure is reported, never raised."""
        if not self.prunes or self._closed:
            return
        try:
            if not self._ensure_open():
                return
        except Exception as exc:  # a database replaced by one of a newer release (StoreSchemaError)
            self.health.failed("open", exc)
            return
        now = time.time()
        try:
            if now - self._last_prune >= PRUNE_EVERY_SECONDS:
                self._last_prune = now
                self.prune(now)
            if now - self._last_size_check >= SIZE_CHECK_EVERY_SECONDS:
                self._last_size_check = now
                self.enforce_size()
        except Exception as exc:
            log.debug("could not prune the result store", exc_info=True)
            self.health.failed("prune", exc)
        else:
            self.health.succeeded("prune")

    # --- reading --------------------------------------------------------------------------------
    def passed(self, trace_id: str) -> list[dict[str, Any]]:
        """The passing results stored for a trace (`results: all`), as dicts of `PASSED_FIELDS`."""
        rows = self._read("SELECT passed FROM traces WHERE trace_id = ?", (trace_id,))
        if not rows or not rows[0][0]:
            return []
        return [dict(zip(PASSED_FIELDS, values)) for values in json.loads(rows[0][0])]

    def count(self, table: str = "results") -> int:
        if table not in ("results", "traces"):
            raise ValueError(table)
        return int(self._read(f"SELECT COUNT(*) FROM {table}")[0][0])
