"""Connections to the PostgreSQL result store: a psycopg pool, jsonb read as
the JSON text SQLite gives, and the URL without its password for every message.

Every connection is bounded in time (`Timeouts`, from `store.connect_timeout`, `statement_timeout` and
`lock_timeout`): connecting by libpq's connect_timeout, each statement by the server's statement_timeout and
lock_timeout, and each use of a connection, server or no server, by a client-side deadline (deadline.py)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool
from sqlalchemy import bindparam, func, literal_column, select

from monitor.store.postgres.deadline import DEADLINES, DeadlineExceeded, Lease
from monitor.store.statements import POSTGRESQL, Statement, bound
from monitor.text import redact_url as redacted

__all__ = ["CONNECTION_ERRORS", "Connection", "Timeouts", "open_pool", "redacted"]

CONNECT_TIMEOUT_SECONDS = 5.0  # a connection attempt; also how long a write or read waits for a pooled connection
STATEMENT_TIMEOUT_SECONDS = 10.0
LOCK_TIMEOUT_SECONDS = 5.0
DEADLINE_GRACE_SECONDS = 5.0  # past the statement timeout, for the server to answer before it is given up on
# What a lost or refused connection raises (PoolClosed, PoolTimeout included: they are OperationalErrors).
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, OSError)
APPLICATION_NAME = "agent-monitor"


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long a connection attempt, a statement and a wait for a lock may take (seconds; 0: no limit for the
    statement and lock timeouts)."""

    connect: float = CONNECT_TIMEOUT_SECONDS
    statement: float = STATEMENT_TIMEOUT_SECONDS
    lock: float = LOCK_TIMEOUT_SECONDS

    def deadline(self, statement_seconds: float | None = None) -> float:
        """The client-side bound on one statement (taking `statement_seconds` at most; default the timeout)."""
        return (self.statement if statement_seconds is None else statement_seconds) + DEADLINE_GRACE_SECONDS

    def options(self) -> str:
        """The libpq `options` that set the server-side timeouts on every connection."""
        return f"-c statement_timeout={_ms(self.statement)} -c lock_timeout={_ms(self.lock)}"


def _ms(seconds: float) -> int:
    return max(int(seconds * 1000), 0)


def _setting(name: str) -> Any:
    """`name` set for the session (as `SET` sets it) to `:ms`, milliseconds as text."""
    return func.set_config(literal_column(name), bindparam("ms"), literal_column("false"))


# The statement and lock timeouts of the session (`long_statements`; RESET puts back the connection's own).
_LONG_STATEMENTS = Statement(select(_setting("'statement_timeout'"), _setting("'lock_timeout'")))


class Connection:
    """A pooled psycopg connection seen as the review SQL expects: `execute(sql with ?, params)`; each statement
    bounded by a client-side deadline when the connection came with a lease (`bounded`)."""

    __slots__ = ("conn", "lease", "timeouts")
    dialect_name = "postgresql"  # statements.py compiles a Statement for it

    def __init__(
        self, conn: psycopg.Connection[Any], lease: Lease | None = None, timeouts: Timeouts | None = None
    ) -> None:
        self.conn = conn
        self.lease = lease
        self.timeouts = timeouts or Timeouts()

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        self.renew()
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> None:
        self.renew()
        with self.conn.cursor() as cursor:
            cursor.executemany(sql, rows)

    def renew(self, statement_seconds: float | None = None) -> None:
        """A statement starts: the deadline is set again (for one of `statement_seconds`, default the timeout)."""
        if self.lease is not None:
            self.lease.renew(self.timeouts.deadline(statement_seconds))

    @contextlib.contextmanager
    def long_statements(self, seconds: float) -> Iterator[None]:
        """The statements in the block may take, and wait for locks, `seconds` each (VACUUM, migrations), on the
        server and here."""
        self.conn.execute(*bound(_LONG_STATEMENTS, POSTGRESQL, {"ms": str(_ms(seconds))}))
        try:
            self.renew(seconds)
            yield
        finally:
            self.conn.execute("RESET statement_timeout")
            self.conn.execute("RESET lock_timeout")

    def scalar(self, sql: str, params: Any = ()) -> Any:
        """The first column of the first row (None when there is no row)."""
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]


def open_pool(url: str, size: int, name: str, timeouts: Timeouts | None = None) -> ConnectionPool:
    """A pool of autocommit connections to `url`, open with its first connection made (PoolTimeout after the
    connect timeout otherwise: the pool is closed then). A request for a connection waits as long at most. Every
    connection has the `timeouts` (default: the module's). The pool's own log lines (one per failed attempt) are
    kept to errors: the store's health says it once."""
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    timeouts = timeouts or Timeouts(connect=CONNECT_TIMEOUT_SECONDS)
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max(size, 1),
        open=False,
        name=name,
        timeout=timeouts.connect,
        kwargs={
            "autocommit": True,
            "connect_timeout": max(int(timeouts.connect), 1),
            "application_name": APPLICATION_NAME,
            "options": timeouts.options(),
        },
        configure=_configure,
    )
    try:
        pool.open(wait=True, timeout=timeouts.connect)
    except BaseException:
        pool.close(timeout=0)
        raise
    return pool


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.adapters.register_loader("jsonb", TextLoader)  # JSON text, as SQLite returns it


@contextlib.contextmanager
def bounded(pool: ConnectionPool, timeouts: Timeouts | None = None) -> Iterator[Connection]:
    """A pooled connection (waited for up to the connect timeout) whose every statement is bounded by a client-side
    deadline (deadline.py) besides the server's timeouts."""
    timeouts = timeouts or Timeouts(connect=CONNECT_TIMEOUT_SECONDS)
    with pool.connection(timeout=timeouts.connect) as conn, DEADLINES.bounded(conn, timeouts.deadline()) as lease:
        try:
            yield Connection(conn, lease, timeouts)
        except psycopg.OperationalError as exc:
            if lease.expired and not isinstance(exc, DeadlineExceeded):
                raise DeadlineExceeded(f"no answer within the deadline of {timeouts.deadline():g}s: {exc}") from exc
            raise
