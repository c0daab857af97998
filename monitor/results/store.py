"""ResultStore: evaluation results in SQLite, so the failing traces behind a red panel can be found and reviewed.

Several processes write it: each evaluation worker process opens its own `ResultStore(prune=False)` and inserts
the rows of every batch it evaluates synchronously, in one transaction (WAL mode, `BEGIN IMMEDIATE` with a
busy timeout). In the daemon's own process, once started, `write(outcomes)` only queues: a writer thread
inserts everything queued in one transaction, so the event loop never waits on the disk; that thread also keeps
the retention by age and by size (retention.py). Text arrives bounded and is masked before it is written
(packing.py). Readers use their own connections (review_reader.py, `reader()`): WAL readers never block it.

Two tables (schema.py, versioned and migrated at open). `results` has one row per failing result and per skip
(sampled-out skips are only counted in the metrics). `traces` has one row per evaluated trace (`results:
failing`: only those with a failure or a skip): input, output, agents, models, tools, the step tree, and with
`results: all` its passing results packed as JSON (a row each would cost most of the store's time for data only
ever read per trace). LLM judges answer after their trace was stored: `write([LateResults(...)])` appends their
passing results to the trace's packed array and inserts the failing ones and skips like any other.

The store degrades, never stops the daemon: a database that cannot be opened (corrupt, unwritable, a newer
schema excepted), a write or prune that fails (full disk, read-only file), a file removed or replaced (noticed
before each write: SQLite would go on writing to the removed file) are reported to its StoreHealth (health.py:
counted, logged once per state change) and the rows are dropped; it reopens at most every REOPEN_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.results import retention
from monitor.results.health import StoreHealth, StoreUnavailable
from monitor.results.packing import PASSED_FIELDS, SAMPLED_OUT, Packed, Written, pack
from monitor.results.schema import BUSY_TIMEOUT_SECONDS, TRACE_COLUMNS, StoreSchemaError, set_up

if TYPE_CHECKING:
    from monitor.results.review_reader import SQLiteReviewReader

__all__ = ["PASSED_FIELDS", "SAMPLED_OUT", "ResultStore", "StoreSchemaError", "StoreUnavailable", "Written"]

log = logging.getLogger(__name__)

MAX_TRACES_PER_TRANSACTION = 2000
PRUNE_EVERY_SECONDS = 300.0  # retention by age
SIZE_CHECK_EVERY_SECONDS = 10.0  # retention by size (a stat of two files when under the cap)
REOPEN_SECONDS = 30.0  # between attempts to open a store that could not be opened
JOURNAL_SIZE_LIMIT = 32 * 1024 * 1024  # the WAL file is cut back to this after a checkpoint resets it
GiB = 1024**3
_INSERT_TRACE = (
    f"INSERT OR REPLACE INTO traces ({', '.join(TRACE_COLUMNS)}) VALUES ({', '.join('?' * len(TRACE_COLUMNS))})"
)
_INSERT_RESULT = (
    "INSERT INTO results (created_at, trace_id, service, span_id, agent, model, evaluator, level, score, passed,"
    " skip_reason, explanation, details) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_APPEND_PASSED = "UPDATE traces SET passed = json_insert(COALESCE(passed, '[]'), '$[#]', json(?)) WHERE trace_id = ?"


@dataclass(slots=True)
class _FlushMarker:
    done: threading.Event


class ResultStore:
    def __init__(
        self,
        path: str | Path,
        retention_seconds: float = 7 * 86400.0,
        results: str = "all",
        *,
        prune: bool = True,
        max_size: int = GiB,
        health: StoreHealth | None = None,
    ) -> None:
        """Open (create, migrate) the database; when it cannot be, the store starts unavailable and retries.
        StoreSchemaError for a database from a newer agent-monitor. `prune`: False for the workers' stores (the
        daemon's keeps the retention)."""
        if results not in ("all", "failing"):
            raise ValueError(f"results must be 'all' or 'failing', got {results!r}")
        self.path = Path(path)
        self.memory = str(path) == ":memory:"
        self.retention_seconds = retention_seconds
        self.max_size = max_size
        self.failing_only = results == "failing"
        self.prunes = prune
        self.health = health if health is not None else StoreHealth()
        self.write_errors = 0
        self._db: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._next_open = 0.0
        self._lock = threading.Lock()  # the connection: the writer thread and the few reads through it
        self._last_prune = 0.0
        self._last_size_check = 0.0
        self._queue: queue.Queue[list[Written | _FlushMarker] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._closed = False
        with self._lock:
            self._open()

    @property
    def available(self) -> bool:
        return self.health.available

    # --- opening --------------------------------------------------------------------------------
    def _open(self) -> bool:
        """Connect, set up the schema; on failure, report it and stay closed (caller holds the lock)."""
        self._next_open = time.monotonic() + REOPEN_SECONDS
        db: sqlite3.Connection | None = None
        try:
            if not self.memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with _creating(self.path, self.memory):
                db = sqlite3.connect(
                    str(self.path), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
                )
                set_up(db, self.path)
                db.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
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

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the writer thread (before it, `write` inserts synchronously)."""
        if self._writer is None and not self._closed:
            self._writer = threading.Thread(target=self._write_loop, name="result-store", daemon=True)
            self._writer.start()

    async def shutdown(self, grace: float = 5.0) -> None:
        """Write what is queued, stop the writer and close the database. Idempotent, safe before `start`."""
        if self._closed:
            return
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        if self._closed:
            return
        writer, self._writer = self._writer, None
        if writer is not None:
            self._queue.put(None)
            writer.join()
        self._drain_synchronously()
        self._closed = True
        with self._lock:
            _close_quietly(self._db)
            self._db = None

    # --- writing --------------------------------------------------------------------------------
    def write(self, outcomes: Sequence[Written]) -> None:
        """Queue evaluated traces for the writer thread (written at once when it is not running). Never raises:
        a failure is reported to the store's health and the rows are dropped."""
        if not outcomes or self._closed:
            return
        if self._writer is None:
            self._insert(outcomes)
        else:
            self._queue.put(list(outcomes))

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

    def _drain_synchronously(self) -> None:
        pending: list[Written | _FlushMarker] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                pending.extend(item)
        self._insert(pending)

    def _insert(self, batch: Sequence[Written | _FlushMarker]) -> None:
        markers = [o for o in batch if isinstance(o, _FlushMarker)]
        outcomes = [o for o in batch if not isinstance(o, _FlushMarker)]
        try:
            if outcomes:
                packed = pack(outcomes, time.time(), self.failing_only)  # masking: outside the lock
                with self._lock:
                    self._write(self._connection(), packed)
                self.health.succeeded("write")
        except Exception as exc:
            self.write_errors += 1
            log.debug("could not write %d evaluated traces to the result store", len(outcomes), exc_info=True)
            self.health.failed("write", exc)
        finally:
            for marker in markers:
                marker.done.set()
        self._maintain()

    @staticmethod
    def _write(db: sqlite3.Connection, packed: Packed) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_INSERT_TRACE, packed.traces)
            db.executemany(_INSERT_RESULT, packed.results)
            if packed.appended:
                db.executemany(_APPEND_PASSED, packed.appended)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # --- retention ------------------------------------------------------------------------------
    def _maintain(self) -> None:
        """Retention when due (the daemon's store only): by age every PRUNE_EVERY_SECONDS, by size every
        SIZE_CHECK_EVERY_SECONDS. A failure is reported, never raised."""
        if not self.prunes or self._closed:
            return
        if self._db is None:  # not open: a reopen when due, no retention to keep
            with self._lock, contextlib.suppress(StoreUnavailable):
                self._connection()
            if self._db is None:
                return
        now = time.time()
        try:
            if now - self._last_prune >= PRUNE_EVERY_SECONDS:
                self.prune(now)
            if now - self._last_size_check >= SIZE_CHECK_EVERY_SECONDS:
                self._last_size_check = now
                self.enforce_size()
        except Exception as exc:
            log.debug("could not prune the result store", exc_info=True)
            self.health.failed("prune", exc)
        else:
            self.health.succeeded("prune")

    def prune(self, now: float | None = None) -> int:
        """Delete rows older than the retention; the number of results deleted. Raises when it fails."""
        now = time.time() if now is None else now
        self._last_prune = now
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
            retention.give_back_space(self._connection(), int(BUSY_TIMEOUT_SECONDS * 1000))
        log.info("result store over store.max_size: deleted the %d oldest traces", deleted)
        return deleted

    # --- reading --------------------------------------------------------------------------------
    def reader(self) -> SQLiteReviewReader:
        """A ReviewReader over this store's file, with its own read-only connections and this store's health."""
        from monitor.results.review_reader import SQLiteReviewReader

        return SQLiteReviewReader(self.path, health=self.health)

    def _read(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            with self._lock:
                rows = self._connection().execute(query, params).fetchall()
        except (sqlite3.Error, StoreUnavailable) as exc:
            self.health.failed("read", exc, counted_only=isinstance(exc, StoreUnavailable))
            raise
        self.health.succeeded("read")
        return rows

    def failing(self, evaluator: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The most recent failing results, newest first (what the on-call SRE looks for)."""
        query = (
            "SELECT trace_id, evaluator, service, agent, score, explanation, created_at FROM results WHERE passed = 0"
        )
        params: list[Any] = []
        if evaluator:
            query += " AND evaluator = ?"
            params.append(evaluator)
        query += " ORDER BY created_at DESC LIMIT ?"
        params.append(limit)
        keys = ("trace_id", "evaluator", "service", "agent", "score", "explanation", "created_at")
        return [dict(zip(keys, row)) for row in self._read(query, params)]

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
