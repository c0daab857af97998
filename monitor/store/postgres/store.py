"""PostgresResultStore: the result store in a PostgreSQL database that every replica writes (`store.url`).

Like the SQLite store (writer.py): `write` queues, a writer thread inserts batches in one transaction each, off
the event loop; worker processes insert synchronously through pools of their own. Connections come from a psycopg
pool that opens, and reconnects, in the background: a server that is down, refuses us or goes away makes the store
unavailable (counted and logged once by its StoreHealth, the rows of those batches dropped) and never stops
evaluation; the schema is set up (migrated once, see schema.py) at the first connection, retried every
`store.reopen_interval`. A trace stored again (evaluated again, or by two replicas) replaces its row, as SQLite's
`INSERT OR REPLACE` does. Every connection has a connect timeout, a statement and a lock timeout
(`store.*_timeout`), and every statement a client-side deadline (connection.py, deadline.py): a server that hangs
fails the call instead of holding the writer thread, and never holds evaluation (worker processes write through
their store's bounded queue).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from psycopg_pool import ConnectionPool
from sqlalchemy import bindparam
from sqlalchemy.dialects.postgresql import insert

from monitor.config.signatures import SignaturesConfig
from monitor.outcomes import SessionOutcome
from monitor.store import migrate, writer
from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.packing import Packed, merged, pack_session
from monitor.store.postgres import open_sessions, pending_owners, retention
from monitor.store.postgres.connection import (
    CONNECTION_ERRORS,
    Connection,
    Timeouts,
    bounded,
    open_pool,
    redacted,
)
from monitor.store.postgres.deadline import DeadlineExceeded
from monitor.store.row_writes import write_rows
from monitor.store.schema import TRACE_COLUMNS
from monitor.store.signatures import NewCounts, upsert
from monitor.store.statements import RowStatement, Statement, execute
from monitor.store.tables import traces

# A trace stored again (evaluated again, or by two replicas) replaces its row, as SQLite's INSERT OR REPLACE does.
_trace = insert(traces).values({name: bindparam(name) for name in TRACE_COLUMNS})
INSERT_TRACE = RowStatement(
    _trace.on_conflict_do_update(
        index_elements=[traces.c.trace_id],
        set_={name: _trace.excluded[name] for name in TRACE_COLUMNS if name != "trace_id"},
    ),
    TRACE_COLUMNS,
)
T = TypeVar("T")
_TIMEOUTS = (
    psycopg.errors.QueryCanceled,
    psycopg.errors.LockNotAvailable,
    psycopg.errors.ConnectionTimeout,
    psycopg_pool.PoolTimeout,
    DeadlineExceeded,  # the client-side deadline cut the connection (deadline.py)
)


class PostgresResultStore(writer.QueuedResultStore):
    DATABASE_ERRORS = (psycopg.Error,)
    ROW_ERRORS = (*writer.QueuedResultStore.ROW_ERRORS, psycopg.DataError, psycopg.IntegrityError)
    open_session_tables = open_sessions  # the open conversations, shared by the replicas (`sessions.shared`)
    pending_tables = pending_owners  # the waiting judgements, each replica's own (engine/pending.py)

    def _lost_reason(self, error: BaseException) -> str:
        if isinstance(error, _TIMEOUTS):
            return "timeout"
        return super()._lost_reason(error)

    def __init__(
        self,
        url: str,
        retention_seconds: float = writer.STORE_DEFAULTS.retention,
        results: str = writer.STORE_DEFAULTS.results,
        *,
        prune: bool = True,
        max_size: int = writer.STORE_DEFAULTS.max_size,
        health: StoreHealth | None = None,
        pool_size: int = writer.STORE_DEFAULTS.pool_size,
        timeouts: Timeouts | None = None,
        signatures: SignaturesConfig | None = None,
        reopen_seconds: float = writer.REOPEN_SECONDS,
    ) -> None:
        """Connect and set up the schema; when the server cannot be reached (within the connect timeout) the
        store starts unavailable and retries. StoreSchemaError for a database from a newer agent-monitor."""
        super().__init__(
            retention_seconds, results, prune=prune, max_size=max_size, health=health, signatures=signatures
        )
        self.reopen_seconds = reopen_seconds  # between attempts to open the database after it failed
        self.url = url
        self.timeouts = timeouts
        self.where = redacted(url)
        self.pool_size = pool_size
        self._pool: ConnectionPool | None = None
        self._next_open = 0.0
        self._lock = threading.Lock()  # the pool: opened, lost, closed
        self._budget = retention.SizeBudget()
        with self._lock:
            self._open()

    def _open(self) -> bool:
        """A new pool and the schema set up; on failure, report it and stay unavailable (lock held)."""
        self._next_open = time.monotonic() + self.reopen_seconds
        pool: ConnectionPool | None = None
        try:
            pool = open_pool(self.url, self.pool_size, "agent-monitor-results", self.timeouts)
            with bounded(pool, self.timeouts) as db, db.long_statements(retention.LONG_STATEMENT_SECONDS):
                migrate.upgrade(db.conn, self.where)
        except BaseException as exc:
            if pool is not None:
                pool.close(timeout=0)
            if not isinstance(exc, psycopg.Error | OSError):
                raise  # StoreSchemaError among them
            self.health.failed("open", exc)
            return False
        self._pool = pool
        self.health.succeeded("open")
        return True

    def _ensure_open(self) -> bool:
        with self._lock:
            if self._pool is None and not self._closed and time.monotonic() >= self._next_open:
                self._open()
            return self._pool is not None

    def current_pool(self) -> ConnectionPool:
        """The open pool; StoreUnavailable while there is none (after a reopen attempt when one is due)."""
        self._ensure_open()
        pool = self._pool
        if pool is None:
            raise StoreUnavailable(f"the result store {self.where} is not open")
        return pool

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection; a connection lost or refused closes the pool (the store is unavailable until a
        reopen, every `store.reopen_interval`: writes meanwhile fail at once instead of waiting for the server)."""
        pool = self.current_pool()
        try:
            with bounded(pool, self.timeouts) as db:
                yield db
        except CONNECTION_ERRORS as exc:
            self._lost(pool, exc)
            raise

    def _lost(self, pool: ConnectionPool, error: BaseException) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
                self._next_open = time.monotonic() + self.reopen_seconds
        pool.close(timeout=0)
        self.health.failed("open", error, counted_only=True)

    def _close_database(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=5.0)

    # --- writing --------------------------------------------------------------------------------
    def _store(self, packed: Packed) -> None:
        """The rows (made storable where they were packed: packing.py) and the signatures' upserts
        (signatures.py) in one transaction."""
        with self._connection() as db, db.conn.transaction():
            new = self.write_packed(db, packed)
        self.news.add(new)

    def write_sessions(self, db: Connection, outcomes: Sequence[SessionOutcome]) -> NewCounts:
        """Store evaluated sessions on `db`, within the caller's transaction (the shared sessions' claim writes
        them in the transaction that completes them); the signatures' new counts, for `news` once committed."""
        now = time.time()
        return self.write_packed(db, merged([pack_session(o, now, self.failing_only) for o in outcomes]))

    def write_packed(self, db: Connection, packed: Packed) -> NewCounts:
        """Write `packed` on `db`, within the caller's transaction; the signatures' new counts."""
        batches = self._batches(packed)
        write_rows(db, packed, INSERT_TRACE)
        return upsert(db, batches, self.policy) if batches else {}

    def transaction(self, work: Callable[[Any], T]) -> T:
        with self._connection() as db, db.conn.transaction():
            return work(db)

    # --- retention ------------------------------------------------------------------------------
    def prune(self, now: float | None = None) -> int:
        now = time.time() if now is None else now
        with self._connection() as db:
            return retention.prune_by_age(db, now - self.retention_seconds)

    def enforce_size(self) -> int:
        with self._connection() as db:
            return retention.enforce_size(db, self.max_size, self._budget)

    def _fetch(self, query: Statement, params: writer.Params) -> list[tuple]:
        with self._connection() as db:
            return execute(db, query, params).fetchall()
