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

from sqlalchemy import bindparam, func, literal_column, select

from monitor.store import retention
from monitor.store.postgres.connection import Connection
from monitor.store.sql_functions import trace_row_key
from monitor.store.statements import Statement, execute, scalar
from monitor.store.tables import traces

log = logging.getLogger(__name__)

RETENTION_LOCK = 0x61676D5F72746E6E  # pg_try_advisory_lock key: "agm_rtnn"
SIZE_TARGET = retention.SIZE_TARGET
MAX_CHUNK_TRACES = retention.MAX_CHUNK_TRACES
LONG_STATEMENT_SECONDS = 300.0  # VACUUM and migrations may take longer than `store.statement_timeout`
_LOCK = Statement(select(func.pg_try_advisory_lock(bindparam("key"))))
_UNLOCK = Statement(select(func.pg_advisory_unlock(bindparam("key"))))
_size = func.pg_total_relation_size
_TABLES_SIZE = Statement(  # the tables that grow with the traffic
    select(_size(literal_column("'results'")) + _size(literal_column("'traces'")) + _size(literal_column("'sessions'")))
)
_COUNT_TRACES = Statement(select(func.count()).select_from(traces))
# the created_at of the `:offset`-th oldest trace (ties in insertion order)
_BOUNDARY = Statement(
    select(traces.c.created_at).order_by(traces.c.created_at, trace_row_key()).limit(1).offset(bindparam("offset"))
)


@dataclass(slots=True)
class SizeBudget:
    """The number of traces the store holds while it is over its size (None: not over it yet)."""

    traces: int | None = None


@contextlib.contextmanager
def retention_turn(db: Connection) -> Iterator[bool]:
    """Whether this replica got the retention lock (held until the block ends; then released)."""
    got = bool(scalar(db, _LOCK, {"key": RETENTION_LOCK}))
    try:
        yield got
    finally:
        if got:
            execute(db, _UNLOCK, {"key": RETENTION_LOCK})


def prune_by_age(db: Connection, cutoff: float) -> int:
    """Delete rows created before `cutoff`; the results deleted (0 when another replica is pruning)."""
    with retention_turn(db) as mine:
        return retention.prune_by_age(db, cutoff) if mine else 0


def tables_size(db: Connection) -> int:
    """Bytes of the tables that grow with the traffic (results, traces, sessions) with their TOAST and indexes."""
    return int(scalar(db, _TABLES_SIZE))


def enforce_size(db: Connection, max_size: int, budget: SizeBudget) -> int:
    """Hold the tables under `max_size` by the row budget (module docstring); the traces deleted."""
    with retention_turn(db) as mine:
        if not mine:
            return 0
        size = tables_size(db)
        if size <= max_size:
            return 0
        count = int(scalar(db, _COUNT_TRACES))
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
    boundary = scalar(db, _BOUNDARY, {"offset": traces - 1})
    if boundary is None:
        return 0
    up_to = {"boundary": boundary}
    with db.conn.transaction():
        execute(db, retention.DELETE_RESULTS_OF_TRACES, up_to)
        execute(db, retention.DELETE_RESULTS, up_to)
        execute(db, retention.DELETE_SESSIONS, up_to)
        for statement in retention.DELETE_SIGNALS:
            execute(db, statement, up_to)
        return int(execute(db, retention.DELETE_TRACES, up_to).rowcount)
