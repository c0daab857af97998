"""The review reader of the daemon's own result store: the read side built over the write side's connections
and health (the store itself knows nothing of the review)."""

from __future__ import annotations

from monitor.review.sqlite_reader import SQLiteReviewReader, StoreReviewReader
from monitor.store.sqlite import ResultStore
from monitor.store.writer import QueuedResultStore

__all__ = ["StoreReviewReader", "reader_of"]


def reader_of(store: QueuedResultStore) -> StoreReviewReader:
    """A ReviewReader over `store`: SQLite with read-only connections of its own, PostgreSQL sharing the store's
    pool; both count their failures in the store's health."""
    if isinstance(store, ResultStore):
        return SQLiteReviewReader(store.path, health=store.health)
    from monitor.review.postgres_reader import PostgresReviewReader  # psycopg only when PostgreSQL is used
    from monitor.store.postgres.store import PostgresResultStore

    if isinstance(store, PostgresResultStore):
        return PostgresReviewReader(store.current_pool, store.where, health=store.health, timeouts=store.timeouts)
    raise TypeError(f"no review reader for {type(store).__name__}")
