"""QueuedResultStore: what every result store does whatever its database — queue evaluated traces for a writer
thread that inserts them in batches (so the event loop never waits on the database), keep the retention by age and
by size when due, report every failure to the store's StoreHealth and never raise it to the daemon.

The queue and its thread are write_queue.py's: bounded (MAX_QUEUED_TRACES), so behind a database that is slow or
hangs what does not fit is dropped and counted, and neither the event loop nor an evaluation worker
(`write(wait=...)`) is ever held by it. How a write fails is degrade.py's: a batch that fails because the database
refuses a row is written again in halves, so that row costs only itself; what is lost is counted per result and by
reason (StoreHealth.lost). With `hold_unwritten` (the intake log is on) a batch the database fails as a whole is kept
and tried again (degrade.py, write_queue.py), and `settlement` tells which evaluated traces are still waiting for
their rows to be written: the log keeps their requests until they are not.

A subclass (store.ResultStore: SQLite; postgres.store.PostgresResultStore) gives the database side: `_store`
(one transaction of packed rows), `_ensure_open` (reopen when due), `prune`, `enforce_size`, `_fetch`
and `_close_database`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import bindparam, func, select

from monitor.config.signatures import SignaturesConfig
from monitor.config.store import StoreConfig
from monitor.outcomes import MAX_TEXT, SessionOutcome, TraceOutcome
from monitor.store.degrade import DegradingWrite, Item
from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.open_session_rows import OpenSessionTables
from monitor.store.packing import PASSED_FIELDS, Packed, Written, mask
from monitor.store.poll_checkpoints import PollCheckpointRows
from monitor.store.signatures import Batch, NewCounts, Policy, SignatureNews, batched
from monitor.store.statements import Statement
from monitor.store.tables import results, traces
from monitor.store.write_queue import MAX_KEPT_TRACES, WriteQueue

log = logging.getLogger(__name__)

PRUNE_EVERY_SECONDS = 300.0  # retention by age
SIZE_CHECK_EVERY_SECONDS = 10.0  # retention by size
REOPEN_SECONDS = 30.0  # between attempts to open a store that could not be opened
STORED_IDS_CHUNK = 500  # trace ids per query of `stored_trace_ids`
STORE_DEFAULTS = StoreConfig()  # the stores' defaults are the `store:` section's
T = TypeVar("T")
Params = Mapping[str, Any]

_PASSED = Statement(select(traces.c.passed).where(traces.c.trace_id == bindparam("trace_id")))
_STORED = Statement(select(traces.c.trace_id).where(traces.c.trace_id.in_(bindparam("ids", expanding=True))))
_COUNT = {name: Statement(select(func.count()).select_from(table)) for name, table in (("results", results),
                                                                                      ("traces", traces))}  # fmt: skip


class QueuedResultStore(ABC):
    # The open conversations' tables of this database (monitor/sessions/shared.py keeps them there), or None.
    open_session_tables: OpenSessionTables | None = None
    # How this database adopts and heartbeats the waiting judgements (engine/pending.PendingTables), or None.
    pending_tables: Any = None

    def __init__(
        self,
        retention_seconds: float,
        results: str,
        *,
        prune: bool,
        max_size: int,
        health: StoreHealth | None,
        signatures: SignaturesConfig | None = None,
    ) -> None:
        """`signatures`: when a signature is new and when it has regressed (signatures.py); the signatures this
        store counts new go to `news`."""
        if results not in ("all", "failing"):
            raise ValueError(f"results must be 'all' or 'failing', got {results!r}")
        self.retention_seconds = retention_seconds
        self.max_size = max_size
        self.failing_only = results == "failing"
        self.prunes = prune
        self.health = health if health is not None else StoreHealth()
        self.policy = Policy.of(signatures)
        self.news = SignatureNews()
        self._last_prune = 0.0
        self._last_size_check = 0.0
        self._write_all = DegradingWrite(
            lambda packed: self._store(packed),  # looked up at each write: a test may spy on it
            self.health,
            failing_only=self.failing_only,
            row_errors=self.ROW_ERRORS,
            lost_reason=self._lost_reason,
        )
        self._queue = WriteQueue(self._write_all, self._maintain, idle_seconds=SIZE_CHECK_EVERY_SECONDS)
        self._closed = False
        self._holding = False  # hold_unwritten: evaluated traces tracked until their rows are written
        self._settle_lock = threading.Lock()
        self._unsettled: set[str] = set()  # trace ids handed to `write` whose rows are not written (nor lost)
        self._settled: list[str] = []  # trace ids settled since the last `settlement`
        self.poll_checkpoints = PollCheckpointRows(self)  # poll mode's (monitor/sources/checkpoints.py)

    def hold_unwritten(self) -> None:
        """The intake log is on: keep the traces of a write the database failed as a whole and try them again
        (MAX_KEPT_TRACES at most, queued ones included; past it they are dropped, counted and settled), and track
        which evaluated traces wait for their rows (`settlement`). Call before the first write."""
        self._holding = True
        self._write_all.keep = True
        self._write_all.on_settled = self._settle
        self._write_all.stored = self._stored_now
        self._queue.limit = MAX_KEPT_TRACES

    def settlement(self, trace_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """(those of `trace_ids` whose rows are still waiting to be written, every trace id settled since the
        last call: its rows written, or lost for good). With `hold_unwritten` only."""
        with self._settle_lock:
            settled, self._settled = self._settled, []
            return [t for t in trace_ids if t in self._unsettled], settled

    def _settle(self, trace_ids: list[str]) -> None:
        if trace_ids:
            with self._settle_lock:
                self._unsettled.difference_update(trace_ids)
                self._settled.extend(trace_ids)

    def _stored_now(self, trace_ids: list[str]) -> set[str]:
        """`stored_trace_ids` through the writer's connection, its failure raised uncounted (the write that would
        follow is what fails and is reported)."""
        return _stored_in(trace_ids, self._fetch)

    @property
    def available(self) -> bool:
        return self.health.available

    @property
    def write_errors(self) -> int:
        """Writes that lost traces (failed, or dropped before they were tried)."""
        return self._write_all.errors

    # --- the database side ----------------------------------------------------------------------
    @abstractmethod
    def _store(self, packed: Packed) -> None:
        """Insert the rows in one transaction; raises when it fails (StoreUnavailable when not open)."""

    @staticmethod
    def _batches(packed: Packed) -> list[Batch]:
        """The signatures of a write, summed, their texts masked (before the transaction: it holds locks)."""
        if not packed.sightings:
            return []
        return batched(packed.sightings, lambda texts: mask(texts, [MAX_TEXT] * len(texts)))

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
    def _fetch(self, query: Statement, params: Params) -> list[tuple]:
        """Rows of a query (statements.py), through the writer's connection (raises when it fails)."""

    def _read(self, query: Statement, params: Params | None = None) -> list[tuple]:
        """`_fetch`, its failures counted (a store that is not open: counted only) and raised."""
        failures: tuple[type[Exception], ...] = (*self.DATABASE_ERRORS, StoreUnavailable)
        try:
            rows = self._fetch(query, params or {})
        except failures as exc:
            self.health.failed("read", exc, counted_only=isinstance(exc, StoreUnavailable))
            raise
        self.health.succeeded("read")
        return rows

    @abstractmethod
    def transaction(self, work: Callable[[Any], T]) -> T:
        """`work(db)` in one transaction (committed when it returns, rolled back when it raises); `db` is the store's
        connection, which statements.py's `execute` and `executemany` run statements on. Raises when it fails
        (StoreUnavailable when not open)."""

    def write_sessions(self, db: Any, outcomes: Sequence[SessionOutcome]) -> NewCounts:
        """Store evaluated sessions on `db` (from `transaction`), within that transaction; the signatures' new
        counts, for `news` once committed. For the stores with `open_session_tables`."""
        raise NotImplementedError

    @abstractmethod
    def _close_database(self) -> None: ...

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the writer thread (before it, `write` inserts synchronously)."""
        self.start_writer()

    def start_writer(self) -> None:
        """Start the writer thread, from any thread (an evaluation worker process starts its own)."""
        if not self._closed:
            self._queue.start()

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
        if not self._queue.stop(timeout):
            self._closed = True
            self._write_all.dropped(self._queue.take(), "failed", "the writer did not finish before the exit")
            return
        self._insert(self._queue.take())
        self._closed = True
        self._close_database()

    def _insert(self, outcomes: Sequence[Item]) -> None:
        """Write now, on this thread, then the retention when due; what could not be written is lost."""
        if outcomes:
            kept = self._write_all(outcomes)
            self._write_all.dropped(kept, "unavailable", "the store could not write them before the writer stopped")
        self._maintain()

    # --- writing --------------------------------------------------------------------------------
    def write(self, outcomes: Sequence[Written], wait: float = 0.0, *, one_behind: bool = False) -> None:
        """Queue evaluated traces for the writer thread (written at once when it is not running). Never raises:
        a failure is reported to the store's health and the rows are dropped, and so are traces the queue has no
        room for (MAX_QUEUED_TRACES: the database is slow or hangs). `wait`: seconds to wait for them to be
        written (a worker process, so that its rows are there when its batch is reported), given up, until the
        writer has caught up, once it took longer; `one_behind`: wait for the previous `write(one_behind=True)`'s
        rows instead (WriteQueue.put)."""
        if not outcomes or self._closed:
            return
        if self._holding:
            with self._settle_lock:
                self._unsettled.update(o.trace_id for o in outcomes if isinstance(o, TraceOutcome))
        if not self._queue.running:
            self._insert(outcomes)
        elif not self._queue.put(outcomes, wait, one_behind=one_behind):
            self._write_all.dropped(outcomes, "queue_full", "the writer is behind (the database is slow or hangs)")

    def flush(self, timeout: float = 30.0) -> bool:
        """Block until everything queued so far is written (tests, shutdown; failed or kept for a retry counts);
        False when the writer did not get there within `timeout` (the database hangs)."""
        return self._queue.flush(timeout)

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
        rows = self._read(_PASSED, {"trace_id": trace_id})
        if not rows or not rows[0][0]:
            return []
        return [dict(zip(PASSED_FIELDS, values)) for values in json.loads(rows[0][0])]

    def stored_trace_ids(self, trace_ids: Sequence[str]) -> set[str]:
        """Those of `trace_ids` the store has a trace row for (by the primary key, in chunks); raises when the
        store cannot be read (the intake log's replay then leaves nothing out)."""
        return _stored_in(list(dict.fromkeys(trace_ids)), self._read)

    def count(self, table: str = "results") -> int:
        if table not in _COUNT:
            raise ValueError(table)
        return int(self._read(_COUNT[table])[0][0])


def _stored_in(trace_ids: list[str], fetch: Callable[[Statement, Params], list[tuple]]) -> set[str]:
    """Those of `trace_ids` with a trace row, by the primary key, STORED_IDS_CHUNK per query."""
    found: set[str] = set()
    for start in range(0, len(trace_ids), STORED_IDS_CHUNK):
        rows = fetch(_STORED, {"ids": trace_ids[start : start + STORED_IDS_CHUNK]})
        found.update(row[0] for row in rows)
    return found
