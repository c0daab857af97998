"""Where the CLI's ReviewReader comes from (`agent-monitor review --store FILE|URL`): a store file opened
read-only, or a PostgreSQL result store at a `postgresql://` URL. The daemon's own reader is
`of_store.reader_of(store)`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from monitor.review.models import ReviewReader
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store.health import StoreUnavailable


class StoreUnreadable(Exception):
    """A store that cannot be read as a result store (the message says why, in one line)."""


def is_url(location: str | Path) -> bool:
    return str(location).lower().startswith(("postgresql://", "postgres://"))


def open_store_reader(location: str | Path) -> ReviewReader:
    """A reader over the store file or PostgreSQL URL `location`, checked now (the daemon may be writing it).

    StoreUnreadable when it is not a readable result store."""
    try:
        if is_url(location):
            import psycopg

            from monitor.review.postgres_reader import PostgresReviewReader
            from monitor.store.postgres.connection import redacted

            try:
                return PostgresReviewReader.open(str(location))
            except psycopg.Error as exc:
                raise StoreUnreadable(f"cannot read the result store {redacted(str(location))}: {exc}") from exc
        return SQLiteReviewReader.open(location)
    except StoreUnavailable as exc:  # its message names the store
        raise StoreUnreadable(str(exc)) from exc
    except (sqlite3.Error, OSError) as exc:
        raise StoreUnreadable(f"cannot read the result store {location}: {exc}") from exc
