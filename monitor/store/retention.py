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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.store.schema import Database

CHUNK_ROWS = 20_000  # rows deleted per transaction by age
MAX_CHUNK_TRACES = 5_000  # traces deleted per transaction by size
SIZE_TARGET = 0.9
CHECKPOINT_WAIT_MS = 1000  # how long the truncating checkpoint waits for readers (then it is left for later)


def prune_by_age(db: Database, cutoff: float, trace_key: str = "rowid") -> int:
    """Delete results and traces created before `cutoff`, the sessions completed before it and the failure
    signatures last seen before it (autocommit connection, SQLite's or PostgreSQL's: the traces' key is
    `trace_key`); the results deleted."""
    removed = _delete_chunks(db, "results", "id", cutoff)
    _delete_chunks(db, "traces", trace_key, cutoff)
    _delete_chunks(db, "sessions", "session_id", cutoff, "completed_at")
    _delete_chunks(db, "signatures", "id", cutoff, "last_seen")
    return removed


def _delete_chunks(db: Database, table: str, key: str, cutoff: float, column: str = "created_at") -> int:
    removed = 0
    while True:
        count = db.execute(
            f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {column} < ? LIMIT ?)",
            (cutoff, CHUNK_ROWS),
        ).rowcount
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
    traces = db.execute("SELECT COUNT(*) FROM traces").fetchone()[0]
    table = "traces" if traces else "results"  # results of traces not stored (late judge results) go by time too
    rows = traces or db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    if not rows:
        return 0
    share = min(max(math.ceil(rows * excess / used * 1.1), 1), MAX_CHUNK_TRACES)
    boundary = db.execute(
        f"SELECT created_at FROM {table} ORDER BY created_at LIMIT 1 OFFSET ?", (min(share, rows) - 1,)
    ).fetchone()[0]
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(
            "DELETE FROM results WHERE trace_id IN (SELECT trace_id FROM traces WHERE created_at <= ?)", (boundary,)
        )
        removed = db.execute("DELETE FROM results WHERE created_at <= ?", (boundary,)).rowcount
        deleted = db.execute("DELETE FROM traces WHERE created_at <= ?", (boundary,)).rowcount
        db.execute("DELETE FROM sessions WHERE completed_at <= ?", (boundary,))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return deleted or removed


def give_back_space(db: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Free pages back to the file system (incremental auto-vacuum; nothing on older databases), then the WAL
    checkpointed and truncated (waiting at most CHECKPOINT_WAIT_MS for readers; else done at a later prune)."""
    # One page is freed per step: executescript steps to the end (execute would stop after the first page).
    db.executescript("PRAGMA incremental_vacuum;")
    db.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        db.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
