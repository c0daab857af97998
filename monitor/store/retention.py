"""Retention of the result store: by age and by size, in short transactions (writers wait on each one).

By age: rows older than `store.retention` go, in chunks (sessions by when they completed). By size: when the
database file and its WAL pass `store.max_size`, the oldest traces and their results go, in chunks, with the
sessions completed up to the last of them, until the pages in use are under
`SIZE_TARGET` of it; then the freed pages are given back (`PRAGMA incremental_vacuum`: databases created with
`auto_vacuum=INCREMENTAL`, every one since schema version 1) and the WAL is checkpointed and truncated, so the
files shrink. A database created before that keeps its size (its freed pages are reused; a `VACUUM` shrinks
it); the pages in use are what is held under the target, so it is not emptied trying.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import BindParameter, ColumnElement, Table, bindparam, delete, func, select

from monitor.store.schema import BUSY_TIMEOUT_SECONDS
from monitor.store.sql_functions import trace_row_key
from monitor.store.statements import Statement, execute, scalar
from monitor.store.tables import results, sessions, signatures, trace_signals, trace_tools, traces

if TYPE_CHECKING:
    from monitor.store.schema import Database

CHUNK_ROWS = 20_000  # rows deleted per transaction by age
MAX_CHUNK_TRACES = 5_000  # traces deleted per transaction by size
SIZE_TARGET = 0.9
CHECKPOINT_WAIT_MS = 1000  # how long the truncating checkpoint waits for readers (then it is left for later)
# PRAGMAs bind no parameter: constants.
_CHECKPOINT_WAIT = f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS:d}"
_BUSY_WAIT = f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000):d}"


def _chunk_of(key: ColumnElement[Any], table: Table, column: ColumnElement[Any]) -> Statement:
    """Up to `:rows` rows of `table` whose `column` is before `:cutoff`, deleted by their `key`."""
    old = select(key).select_from(table).where(column < bindparam("cutoff")).limit(bindparam("rows"))
    return Statement(delete(table).where(key.in_(old.scalar_subquery())))


# By age: results, traces (by their row key: SQLite's rowid, PostgreSQL's id) and their drift rows (signal_writes.py,
# by trace: the same cutoff), sessions by when they completed, signatures by when they were last seen.
_BY_AGE = (
    _chunk_of(results.c.id, results, results.c.created_at),
    _chunk_of(trace_row_key(), traces, traces.c.created_at),
    _chunk_of(trace_signals.c.trace_id, trace_signals, trace_signals.c.created_at),
    _chunk_of(trace_tools.c.trace_id, trace_tools, trace_tools.c.created_at),
    _chunk_of(sessions.c.session_id, sessions, sessions.c.completed_at),
    _chunk_of(signatures.c.id, signatures, signatures.c.last_seen),
)
_COUNT_TRACES = Statement(select(func.count()).select_from(traces))
_COUNT_RESULTS = Statement(select(func.count()).select_from(results))
_BOUNDARY = {  # the created_at of the `:offset`-th oldest row
    table.name: Statement(select(table.c.created_at).order_by(table.c.created_at).limit(1).offset(bindparam("offset")))
    for table in (traces, results)
}
# By size, in one transaction: every row up to a boundary time (`:boundary`).
_UP_TO: BindParameter[float] = bindparam("boundary")
DELETE_RESULTS_OF_TRACES = Statement(
    delete(results).where(results.c.trace_id.in_(select(traces.c.trace_id).where(traces.c.created_at <= _UP_TO)))
)
DELETE_RESULTS = Statement(delete(results).where(results.c.created_at <= _UP_TO))
DELETE_TRACES = Statement(delete(traces).where(traces.c.created_at <= _UP_TO))
DELETE_SESSIONS = Statement(delete(sessions).where(sessions.c.completed_at <= _UP_TO))
DELETE_SIGNALS = (  # the traces' drift rows
    Statement(delete(trace_signals).where(trace_signals.c.created_at <= _UP_TO)),
    Statement(delete(trace_tools).where(trace_tools.c.created_at <= _UP_TO)),
)


def prune_by_age(db: Database, cutoff: float) -> int:
    """Delete results and traces (and their drift rows) created before `cutoff`, the sessions completed before it
    and the failure signatures last seen before it (autocommit connection, SQLite's or PostgreSQL's); the results
    deleted."""
    removed = [_delete_chunks(db, statement, cutoff) for statement in _BY_AGE]
    return removed[0]


def _delete_chunks(db: Database, statement: Statement, cutoff: float) -> int:
    removed = 0
    while True:
        count = execute(db, statement, {"cutoff": cutoff, "rows": CHUNK_ROWS}).rowcount
        removed += count
        if count < CHUNK_ROWS:
            return removed


def size_on_disk(path: Path) -> int:
    """Bytes of the database file and its WAL."""
    total = 0
    for name in (str(path), f"{path}-wal"):
        with contextlib.suppress(FileNotFoundError):
            total += os.stat(name).st_size
    return total


def used_bytes(db: sqlite3.Connection) -> int:
    """Bytes of the pages in use (free pages excluded)."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def over_size(db: sqlite3.Connection, path: Path, max_size: int) -> bool:
    """Whether the files pass `max_size` with more pages in use than the target (a file that cannot shrink
    but holds less is left alone)."""
    return size_on_disk(path) > max_size and used_bytes(db) > SIZE_TARGET * max_size


def delete_oldest_chunk(db: sqlite3.Connection, max_size: int) -> int:
    """One transaction deleting about the oldest traces (and their results) to free what is above the target;
    the traces deleted (0: nothing left to delete)."""
    used = used_bytes(db)
    excess = used - SIZE_TARGET * max_size
    if excess <= 0:
        return 0
    traces = scalar(db, _COUNT_TRACES)
    table = "traces" if traces else "results"  # results of traces not stored (late judge results) go by time too
    rows = traces or scalar(db, _COUNT_RESULTS)
    if not rows:
        return 0
    share = min(max(math.ceil(rows * excess / used * 1.1), 1), MAX_CHUNK_TRACES)
    boundary = scalar(db, _BOUNDARY[table], {"offset": min(share, rows) - 1})
    db.execute("BEGIN IMMEDIATE")
    try:
        up_to = {"boundary": boundary}
        execute(db, DELETE_RESULTS_OF_TRACES, up_to)
        removed = execute(db, DELETE_RESULTS, up_to).rowcount
        deleted = execute(db, DELETE_TRACES, up_to).rowcount
        execute(db, DELETE_SESSIONS, up_to)
        for statement in DELETE_SIGNALS:
            execute(db, statement, up_to)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return deleted or removed


def give_back_space(db: sqlite3.Connection) -> None:
    """Free pages back to the file system (incremental auto-vacuum; nothing on older databases), then the WAL
    checkpointed and truncated (waiting at most CHECKPOINT_WAIT_MS for readers; else done at a later prune)."""
    # One page is freed per step: executescript steps to the end (execute would stop after the first page).
    db.executescript("PRAGMA incremental_vacuum;")
    db.execute(_CHECKPOINT_WAIT)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        db.execute(_BUSY_WAIT)
