"""Which database failure an exception is, by its type and the driver's error code, never by its message: a row
whose key is taken (a unique index or primary key: a write that conflicts with another), and a database busy with
another process's transaction past the busy timeout (SQLite)."""

from __future__ import annotations

import sqlite3

__all__ = ["is_busy", "is_unique_violation"]

UNIQUE_VIOLATION = "23505"  # PostgreSQL's SQLSTATE (psycopg.errors.UniqueViolation)
_SQLITE_TAKEN_KEY = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})
_SQLITE_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def is_unique_violation(error: BaseException) -> bool:
    """A unique index or primary key refused the row: sqlite3's IntegrityError of those extended codes, or
    psycopg's UniqueViolation (SQLSTATE 23505)."""
    if isinstance(error, sqlite3.IntegrityError):
        return getattr(error, "sqlite_errorname", None) in _SQLITE_TAKEN_KEY
    return getattr(error, "sqlstate", None) == UNIQUE_VIOLATION


def is_busy(error: BaseException) -> bool:
    """SQLite waited past its busy timeout for another connection's lock (SQLITE_BUSY, SQLITE_LOCKED, whatever
    their extended code)."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(error, sqlite3.OperationalError) and code is not None and code & 0xFF in _SQLITE_BUSY
