"""ResultStore: evaluation results in SQLite, so the failing traces behind a red panel can be found.

Several processes write it: each evaluation worker process opens its own `ResultStore(prune=False)` and inserts
the rows of every batch it evaluates synchronously, in one transaction (WAL mode, `BEGIN IMMEDIATE` with a
busy timeout). In the daemon's own process, once started, `write(outcomes)` only queues: a writer thread
inserts everything queued in one transaction (one connection shared under a lock with the readers), so the
event loop never waits on the disk; that thread also prunes rows past the retention. Text from traces arrives
bounded (see `rows.py`).

Two tables. `results` has one row per failing result and per skip (sampled-out skips are only counted in the
metrics): what the on-call SRE looks up, indexed by evaluator and time. `traces` has one row per evaluated
trace; with `results: all` its `passed` column packs the trace's passing results as a JSON array of
[evaluator, level, span_id, agent, model, score, explanation, details] (`PASSED_FIELDS`). A row per passing
result would cost an index entry each and most of the store's time (about 20 results per trace, nearly all
passing), for data that is only ever read per trace. `results: failing` keeps only the traces with a failing
result or a skip, without their passing results.

LLM judges answer after their trace was stored: `write([LateResults(...)])` appends their passing results
to the trace's packed array (json_insert) and inserts the failing ones and skips like any other.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.results.rows import LateResults, ResultRow, TraceOutcome

Written = TraceOutcome | LateResults

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _FlushMarker:
    done: threading.Event


MAX_TRACES_PER_TRANSACTION = 2000
PRUNE_EVERY_SECONDS = 300.0
BUSY_TIMEOUT_SECONDS = 30.0  # how long a writer waits for another process's transaction
SAMPLED_OUT = "sampled_out"

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT,
    service TEXT,
    agent TEXT,
    model TEXT,
    evaluator TEXT NOT NULL,
    level TEXT NOT NULL,
    score REAL,
    passed INTEGER,
    skip_reason TEXT,
    explanation TEXT,
    details TEXT
);
CREATE INDEX IF NOT EXISTS results_trace ON results(trace_id);
-- Failing results are what the review looks up by time: partial indexes cost nothing for passing rows.
DROP INDEX IF EXISTS results_eval_time;
CREATE INDEX IF NOT EXISTS results_failing ON results(evaluator, created_at) WHERE passed = 0;
CREATE INDEX IF NOT EXISTS results_failing_time ON results(created_at) WHERE passed = 0;
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    service TEXT,
    input TEXT,
    output TEXT,
    span_count INTEGER,
    duration_ms REAL,
    has_errors INTEGER,
    passed TEXT
);
CREATE INDEX IF NOT EXISTS traces_time ON traces(created_at);
"""
PASSED_FIELDS = ("evaluator", "level", "span_id", "agent", "model", "score", "explanation", "details")
_PACK = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _passed_entry(r: ResultRow) -> tuple:
    """A passing result as its PASSED_FIELDS."""
    return (r.evaluator, r.level, r.span_id, r.agent, r.model, _number(r.score), r.explanation, r.details)


def _number(score: float | None) -> float | None:
    """A score JSON can hold (NaN and infinities have no JSON form; the metrics leave them out too)."""
    return score if score is None or math.isfinite(score) else None


class ResultStore:
    def __init__(
        self, path: str | Path, retention_seconds: float = 7 * 86400.0, results: str = "all", *, prune: bool = True
    ) -> None:
        if results not in ("all", "failing"):
            raise ValueError(f"results must be 'all' or 'failing', got {results!r}")
        self.path = Path(path)
        self.retention_seconds = retention_seconds
        self.failing_only = results == "failing"
        self.prunes = prune  # False for the workers' connections: the daemon's own store prunes
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
        )
        self._lock = threading.Lock()
        self._set_up()
        self._last_prune = 0.0
        self._queue: queue.Queue[list[Written | _FlushMarker] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._closed = False
        self.write_errors = 0

    def _set_up(self) -> None:
        """WAL mode, the schema and its migration. Worker processes open a new database at the same moment: when
        two connections would deadlock upgrading their locks, SQLite answers "database is locked" at once instead
        of waiting (the busy timeout does not apply), so that answer is retried here, within the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        while True:
            try:
                with self._lock:
                    self._db.execute("PRAGMA journal_mode=WAL")
                    self._db.execute("PRAGMA synchronous=NORMAL")
                    self._db.executescript(SCHEMA)
                    columns = {row[1] for row in self._db.execute("PRAGMA table_info(traces)")}
                    if "passed" not in columns:  # a database from before passing results were packed per trace
                        self._db.execute("ALTER TABLE traces ADD COLUMN passed TEXT")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                if self._db.in_transaction:  # executescript may have stopped inside its own transaction
                    self._db.execute("ROLLBACK")
                time.sleep(0.05)

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
        self._closed = True
        writer, self._writer = self._writer, None
        if writer is not None:
            self._queue.put(None)
            writer.join()
        self._drain_synchronously()
        with self._lock:
            self._db.close()

    # --- writing --------------------------------------------------------------------------------
    def write(self, outcomes: Sequence[Written]) -> None:
        """Queue evaluated traces for the writer thread (written at once when it is not running)."""
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
                item = self._queue.get(timeout=PRUNE_EVERY_SECONDS)
            except queue.Empty:  # the worker processes insert: pruning still falls due here
                self._prune_if_due()
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
                self._insert_rows(outcomes)
        except Exception:
            self.write_errors += 1
            log.exception("could not write %d evaluated traces to the result store", len(outcomes))
        finally:
            for marker in markers:
                marker.done.set()

    def _insert_rows(self, outcomes: list[Written]) -> None:
        now = time.time()
        failing_only = self.failing_only
        traces = []
        rows: list[tuple] = []
        appended: list[tuple[str, str]] = []  # (packed passing result, trace id) of late results
        for o in outcomes:
            head = (now, o.trace_id, o.service)
            passed = []
            kept = 0
            for r in o.results:
                if r.passed:
                    passed.append(_passed_entry(r))
                elif r.skip_reason != SAMPLED_OUT:  # sampled-out skips are counted in the metrics, not stored
                    rows.append(head + r[:10])
                    kept += 1
            if isinstance(o, LateResults):
                if not failing_only:
                    appended.extend((_PACK.encode(entry), o.trace_id) for entry in passed)
                continue
            if failing_only and not kept:
                continue
            packed = None if failing_only or not passed else _PACK.encode(passed)
            traces.append(
                (o.trace_id, now, o.service, o.input, o.output, o.span_count, o.duration_ms, int(o.has_error), packed)
            )
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO traces VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", traces)
                self._db.executemany(
                    "INSERT INTO results (created_at, trace_id, service, span_id, agent, model, evaluator, level,"
                    " score, passed, skip_reason, explanation, details) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    rows,
                )
                if appended:
                    self._db.executemany(
                        "UPDATE traces SET passed = json_insert(COALESCE(passed, '[]'), '$[#]', json(?))"
                        " WHERE trace_id = ?",
                        appended,
                    )
                self._db.execute("COMMIT")
            except Exception:
                self._db.execute("ROLLBACK")
                raise
        self._prune_if_due(now)

    def _prune_if_due(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        if self.prunes and now - self._last_prune > PRUNE_EVERY_SECONDS:
            try:
                self.prune(now)
            except sqlite3.Error:
                self.write_errors += 1
                log.exception("could not prune the result store")

    def prune(self, now: float | None = None) -> int:
        """Delete rows older than the retention. Row ids grow with time, so the expired results are an id range
        found by walking ids from the oldest (no index on created_at to maintain on every insert)."""
        cutoff = (now or time.time()) - self.retention_seconds
        with self._lock:
            first_kept = self._db.execute(
                "SELECT id FROM results WHERE created_at >= ? ORDER BY id LIMIT 1", (cutoff,)
            ).fetchone()
            if first_kept is None:
                removed = self._db.execute("DELETE FROM results").rowcount
            else:
                removed = self._db.execute("DELETE FROM results WHERE id < ?", (first_kept[0],)).rowcount
            self._db.execute("DELETE FROM traces WHERE created_at < ?", (cutoff,))
        self._last_prune = now or time.time()
        return removed

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
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        keys = ("trace_id", "evaluator", "service", "agent", "score", "explanation", "created_at")
        return [dict(zip(keys, row)) for row in rows]

    def passed(self, trace_id: str) -> list[dict[str, Any]]:
        """The passing results stored for a trace (`results: all`), as dicts of `PASSED_FIELDS`."""
        with self._lock:
            row = self._db.execute("SELECT passed FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        if row is None or not row[0]:
            return []
        return [dict(zip(PASSED_FIELDS, values)) for values in json.loads(row[0])]

    def count(self, table: str = "results") -> int:
        if table not in ("results", "traces"):
            raise ValueError(table)
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
