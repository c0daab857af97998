"""Retention of the PostgreSQL result store, by age and by size, by one replica at a time.

Every replica's daemon keeps the retention of the one database; a session-level advisory lock, tried and never
waited for, lets one do it while the others skip their turn.

By age: as with SQLite, rows older than `store.retention` go in chunks.

By size: PostgreSQL does not give deleted space back to the file system (only VACUUM FULL does, locking the tables
for every writer), so `store.max_size` holds the tables' size (`pg_total_relation_size`: heap, TOAST, indexes) by
a row budget: when the tables (results, traces, sessions) pass it, the number of traces that fit `SIZE_TARGET` of
it at their current size per trace becomes the budget, the oldest traces above it (and their results, and the
sessions completed up to them) go, and VACUUM marks their space for reuse, so the tables stop growing. While they
stay over it (free space not reused yet, or larger traces), the budget only shrinks.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from monitor.store import retention
from monitor.store.postgres.connection import Connection

log = logging.getLogger(__name__)

RETENTION_LOCK = 0x61676D5F72746E6E  # pg_try_advisory_lock key: "agm_rtnn"
SIZE_TARGET = retention.SIZE_TARGET
MAX_CHUNK_TRACES = retention.MAX_CHUNK_TRACES
LONG_STATEMENT_SECONDS = 300.0  # VACUUM and migrations may take longer than `store.statement_timeout`


@dataclass(slots=True)
class SizeBudget:
    """The number of traces the store holds while it is over its size (None: not over it yet)."""

    traces: int | None = None


@contextlib.contextmanager
def retention_turn(db: Connection) -> Iterator[bool]:
    """Whether this replica got the retention lock (held until the block ends; then released)."""
    got = bool(db.scalar("SELECT pg_try_advisory_lock(?)", (RETENTION_LOCK,)))
    try:
        yield got
    finally:
        if got:
            db.execute("SELECT pg_advisory_unlock(?)", (RETENTION_LOCK,))


def prune_by_age(db: Connection, cutoff: float) -> int:
    """Delete rows created before `cutoff`; the results deleted (0 when another replica is pruning)."""
    with retention_turn(db) as mine:
        return retention.prune_by_age(db, cutoff, trace_key="id") if mine else 0


def tables_size(db: Connection) -> int:
    """Bytes of the tables that grow with the traffic (results, traces, sessions) with their TOAST and indexes."""
    return int(
        db.scalar(
            "SELECT pg_total_relation_size('results') + pg_total_relation_size('traces')"
            " + pg_total_relation_size('sessions')"
        )
    )


def enforce_size(db: Connection, max_size: int, budget: SizeBudget) -> int:
    """Hold the tables under `max_size` by the row budget (module docstring); the traces deleted."""
    with retention_turn(db) as mine:
        if not mine:
            return 0
        size = tables_size(db)
        if size <= max_size:
            return 0
        count = int(db.scalar("SELECT COUNT(*) FROM traces"))
        if budget.traces is None or count <= budget.traces:
            budget.traces = int(count * SIZE_TARGET * max_size / size)
        deleted = 0
        while count - deleted > budget.traces:
            chunk = _delete_oldest(db, min(count - deleted - budget.traces, MAX_CHUNK_TRACES))
            if not chunk:
                break
            deleted += chunk
        with db.long_statements(LONG_STATEMENT_SECONDS):
            db.execute("VACUUM (ANALYZE) results")
            db.execute("VACUUM (ANALYZE) traces")
            db.execute("VACUUM (ANALYZE) sessions")
        log.info("result store over store.max_size: deleted the %d oldest traces", deleted)
        return deleted


def _delete_oldest(db: Connection, traces: int) -> int:
    """One transaction deleting the `traces` oldest traces and every result, and every session completed, up to the
    last one's time."""
    boundary = db.scalar("SELECT created_at FROM traces ORDER BY created_at, id LIMIT 1 OFFSET ?", (traces - 1,))
    if boundary is None:
        return 0
    with db.conn.transaction():
        db.execute(
            "DELETE FROM results WHERE trace_id IN (SELECT trace_id FROM traces WHERE created_at <= ?)", (boundary,)
        )
        db.execute("DELETE FROM results WHERE created_at <= ?", (boundary,))
        db.execute("DELETE FROM sessions WHERE completed_at <= ?", (boundary,))
        return int(db.execute("DELETE FROM traces WHERE created_at <= ?", (boundary,)).rowcount)
