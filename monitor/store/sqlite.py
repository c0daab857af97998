"""ResultStore: evaluation results in SQLite, so the failing traces behind a red panel can be found and reviewed.

Several processes write it: each evaluation worker process opens its own `ResultStore(prune=False)` and inserts
the rows of every batch it evaluates synchronously, in one transaction (WAL mode, `BEGIN IMMEDIATE` with a
busy timeout). In the daemon's own process, once started, `write(outcomes)` only queues: a writer thread
inserts everything queued in one transaction, so the event loop never waits on the disk; that thread also keeps
the retention by age and by size (retention.py). Text arrives bounded and is masked and made storable before
it is written (packing.py, storable.py); a batch a row of which is refused is written again in halves, so that
row costs only itself (degrade.py). Readers use their own connections (review/sqlite_reader.py, built by
review/of_store.py): WAL readers never block it.

Two tables (schema.py, versioned and migrated at open). `results` has one row per failing result and per skip
(sampled-out skips are only counted in the metrics). `traces` has one row per evaluated trace (`results:
failing`: only those with a failure or a skip): input, output, agents, models, tools, the step tree, and with
`results: all` its passing results packed as JSON (a row each would cost most of the store's time for data only
ever read per trace). LLM judges answer after their trace was stored: `write([LateResults(...)])` appends their
passing results to the trace's packed array and inserts the failing ones and skips like any other. A completed,
evaluated conversation, `write([SessionOutcome(session, rows)])`, is one `sessions` row (upserted on its id) and
its session-level results in `results` (with `session_id`; with `results: all` its passing ones too).
Open conversations are kept in the file too (open_sessions_sqlite.py: the session tracker writes their turns and
completes them in its own transactions, `transaction` and `write_sessions`), so a restart neither cuts nor splits
them.

The store degrades, never stops the daemon: a database that cannot be opened (corrupt, unwritable, a newer
schema excepted), a write or prune that fails (full disk, read-only file), a file removed or replaced (noticed
before each write: SQLite would go on writing to the removed file) are reported to its StoreHealth (health.py:
counted, logged once per state change) and the rows are dropped; it reopens at most every `store.reopen_interval`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import bindparam, insert

from monitor.config.signatures import SignaturesConfig
from monitor.outcomes import SessionOutcome
from monitor.store import migrate, open_sessions_sqlite, pending_rows, retention
from monitor.store.errors import is_busy
from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.packing import PASSED_FIELDS, Packed, Written, merged, pack_session
from monitor.store.row_writes import write_rows
from monitor.store.schema import (
    BUSY_TIMEOUT_SECONDS,
    TRACE_COLUMNS,
    StoreSchemaError,
)
from monitor.store.signatures import Batch, NewCounts, Policy, upsert
from monitor.store.statements import RowStatement, Statement, execute
from monitor.store.tables import traces
from monitor.store.writer import REOPEN_SECONDS, STORE_DEFAULTS, Params, QueuedResultStore

__all__ = ["PASSED_FIELDS", "ResultStore", "StoreSchemaError", "StoreUnavailable", "Written"]

log = logging.getLogger(__name__)
T = TypeVar("T")

JOURNAL_SIZE_LIMIT = 32 * 1024 * 1024  # the WAL file is cut back to this after a checkpoint resets it
_JOURNAL_SIZE_LIMIT = f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT:d}"  # a constant (PRAGMAs bind nothing)
# A trace stored again (evaluated again) replaces its row, and takes a new rowid: the newest last.
INSERT_TRACE = RowStatement(
    insert(traces).prefix_with("OR REPLACE", dialect="sqlite").values({c: bindparam(c) for c in TRACE_COLUMNS}),
    TRACE_COLUMNS,
)


class ResultStore(QueuedResultStore):
    """The SQLite result store (the embedded default)."""

    DATABASE_ERRORS = (sqlite3.Error,)
    open_session_tables = open_sessions_sqlite  # the open conversations, kept in the file
    pending_tables = pending_rows  # the waiting judgements (engine/pending.py)
    ROW_ERRORS = (
        *QueuedResultStore.ROW_ERRORS,
        sqlite3.IntegrityError,
        sqlite3.DataError,
        sqlite3.InterfaceError,
        sqlite3.ProgrammingError,
    )

    def _lost_reason(self, error: BaseException) -> str:
        if is_busy(error):
            return "timeout"  # the busy timeout: another process held the database too long
        return super()._lost_reason(error)

    def __init__(
        self,
        path: str | Path,
        retention_seconds: float = STORE_DEFAULTS.retention,
        results: str = STORE_DEFAULTS.results,
        *,
        prune: bool = True,
        max_size: int = STORE_DEFAULTS.max_size,
        health: StoreHealth | None = None,
        signatures: SignaturesConfig | None = None,
        reopen_seconds: float = REOPEN_SECONDS,
    ) -> None:
        """Open (create, migrate) the database; when it cannot be, the store starts unavailable and retries.
        StoreSchemaError for a database from a newer agent-monitor. `prune`: False for the workers' stores (the
        daemon's keeps the retention); `signatures`: the `signatures:` section (when one is new, regressed)."""
        super().__init__(
            retention_seconds, results, prune=prune, max_size=max_size, health=health, signatures=signatures
        )
        self.reopen_seconds = reopen_seconds  # between attempts to open the database after it failed
        self.path = Path(path)
        self.memory = str(path) == ":memory:"
        self._db: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._next_open = 0.0
        self._lock = threading.Lock()  # the connection: the writer thread and the few reads through it
        with self._lock:
            self._open()

    # --- opening --------------------------------------------------------------------------------
    def _open(self) -> bool:
        """Connect, set up the schema; on failure, report it and stay closed (caller holds the lock)."""
        self._next_open = time.monotonic() + self.reopen_seconds
        db: sqlite3.Connection | None = None
        try:
            if not self.memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with _creating(self.path, self.memory):
                db = sqlite3.connect(
                    str(self.path), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
                )
                migrate.upgrade(db, self.path)
                db.execute(_JOURNAL_SIZE_LIMIT)
            identity = None if self.memory else _identity(self.path)
        except StoreSchemaError:
            _close_quietly(db)
            raise
        except (sqlite3.Error, OSError) as exc:
            _close_quietly(db)
            self.health.failed("open", exc)
            return False
        self._db, self._identity = db, identity
        self.health.succeeded("open")
        return True

    def _connection(self) -> sqlite3.Connection:
        """The open connection (caller holds the lock): closed first when its file was removed or replaced,
        reopened when due; StoreUnavailable while it cannot be."""
        if self._db is not None and not self.memory and _identity(self.path) != self._identity:
            _close_quietly(self._db)
            self._db = None
            self.health.failed("open", f"{self.path} was removed or replaced while open")
            self._next_open = 0.0
        if self._db is None and not self._closed and time.monotonic() >= self._next_open:
            self._open()
        if self._db is None:
            raise StoreUnavailable(f"the result store {self.path} is not open")
        return self._db

    def _ensure_open(self) -> bool:
        if self._db is None:
            with self._lock, contextlib.suppress(StoreUnavailable):
                self._connection()
        return self._db is not None

    def _close_database(self) -> None:
        with self._lock:
            _close_quietly(self._db)
            self._db = None

    # --- writing --------------------------------------------------------------------------------
    def _store(self, packed: Packed) -> None:
        batches = self._batches(packed)
        with self._lock:
            new = self._write(self._connection(), packed, batches, self.policy)
        self.news.add(new)

    @staticmethod
    def _write(db: sqlite3.Connection, packed: Packed, batches: list[Batch], policy: Policy) -> NewCounts:
        """The rows and the signatures' upserts in one transaction; the signatures it counted new."""
        db.execute("BEGIN IMMEDIATE")
        try:
            new = _write_rows(db, packed, batches, policy)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return new

    def write_sessions(self, db: sqlite3.Connection, outcomes: Sequence[SessionOutcome]) -> NewCounts:
        """Store evaluated sessions on `db`, within the caller's transaction (the kept sessions' claim writes them
        in the transaction that completes them); the signatures' new counts, for `news` once committed."""
        packed = merged([pack_session(o, time.time(), self.failing_only) for o in outcomes])
        return _write_rows(db, packed, self._batches(packed), self.policy)

    def transaction(self, work: Callable[[Any], T]) -> T:
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            return result

    # --- retention ------------------------------------------------------------------------------
    def prune(self, now: float | None = None) -> int:
        """Delete rows older than the retention; the number of results deleted. Raises when it fails."""
        now = time.time() if now is None else now
        with self._lock:
            return retention.prune_by_age(self._connection(), now - self.retention_seconds)

    def enforce_size(self) -> int:
        """Hold the files under `max_size` (see retention.py); the traces deleted. Raises when it fails."""
        if self.memory:
            return 0
        deleted = 0
        with self._lock:
            if not retention.over_size(self._connection(), self.path, self.max_size):
                return 0
        while True:
            with self._lock:  # one chunk per hold: the reads through this connection get in between
                chunk = retention.delete_oldest_chunk(self._connection(), self.max_size)
            deleted += chunk
            if not chunk:
                break
        with self._lock:
            retention.give_back_space(self._connection())
        log.info("result store over store.max_size: deleted the %d oldest traces", deleted)
        return deleted

    def _fetch(self, query: Statement, params: Params) -> list[tuple]:
        with self._lock:
            return execute(self._connection(), query, params).fetchall()


def _write_rows(db: sqlite3.Connection, packed: Packed, batches: list[Batch], policy: Policy) -> NewCounts:
    """The rows and the signatures' upserts, in the caller's transaction; the signatures it counted new."""
    write_rows(db, packed, INSERT_TRACE)
    return upsert(db, batches, policy) if batches else {}


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _close_quietly(db: sqlite3.Connection | None) -> None:
    if db is not None:
        with contextlib.suppress(sqlite3.Error):
            db.close()


@contextlib.contextmanager
def _creating(path: Path, memory: bool) -> Iterator[None]:
    """Around an open: when the database file is missing, its -wal and -shm (left by a file removed while open:
    SQLite keeps them then) are removed before a new file is created, under a lock on the directory, so that
    processes opening the store together neither create it twice nor remove each other's new WAL."""
    if memory or path.exists():
        yield
        return
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        if not path.exists():
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
        yield
    finally:
        os.close(directory)  # releases the lock
