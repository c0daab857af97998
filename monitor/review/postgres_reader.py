"""PostgresReviewReader: the ReviewReader of a PostgreSQL result store (the review's statements compiled for it).

The daemon's shares its store's pool (`of_store.reader_of(store)`); the CLI opens one on a URL
(`agent-monitor review --store postgresql://…`). The first read checks the schema: a database that is not a
result store raises StoreUnavailable, one from a newer release StoreSchemaError.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool
from sqlalchemy import column, func, select, table

from monitor.review.sql import Columns
from monitor.review.sqlite_reader import StoreReviewReader
from monitor.store.health import StoreHealth, StoreUnavailable
from monitor.store.migrate import refuse_newer, stored_schema
from monitor.store.postgres.connection import Connection, Timeouts, bounded, open_pool, redacted
from monitor.store.schema import SCHEMA_VERSION, TRACE_COLUMNS
from monitor.store.statements import Statement, execute

T = TypeVar("T")


_COLUMNS = Columns(frozenset(TRACE_COLUMNS))
_INFORMATION_SCHEMA = table(
    "columns", column("column_name"), column("table_schema"), column("table_name"), schema="information_schema"
)
_TRACE_COLUMNS = Statement(
    select(_INFORMATION_SCHEMA.c.column_name).where(
        _INFORMATION_SCHEMA.c.table_schema == func.current_schema(), _INFORMATION_SCHEMA.c.table_name == "traces"
    )
)


class PostgresReviewReader(StoreReviewReader):
    DATABASE_ERRORS = (psycopg.Error,)

    def __init__(
        self,
        pool: Callable[[], ConnectionPool],
        where: str,
        *,
        health: StoreHealth | None = None,
        owned: ConnectionPool | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        """`pool`: the current pool (the store's, which replaces it after a lost connection); StoreUnavailable
        when there is none. `owned`: a pool of the reader's own, closed with it (the CLI's)."""
        self.pool = pool
        self._where = where
        self.health = health if health is not None else StoreHealth(quiet=True)
        self.owned = owned
        self.timeouts = timeouts
        self._checked = False
        self._columns = _COLUMNS

    @classmethod
    def open(cls, url: str) -> PostgresReviewReader:
        """A reader of the database at `url`, checked now (StoreUnavailable, StoreSchemaError, psycopg.Error)."""
        pool = open_pool(url, 2, "agent-monitor-review")
        reader = cls(lambda: pool, redacted(url), owned=pool)
        try:
            reader._run(lambda db: None)
        except BaseException:
            reader.close()
            raise
        return reader

    @property
    def where(self) -> str:
        return self._where

    def close(self) -> None:
        if self.owned is not None:
            self.owned.close(timeout=5.0)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Connection]:
        with bounded(self.pool(), self.timeouts) as db:
            if not self._checked:
                self._check(db)
            yield db

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Connection]:
        with self._connection() as db, db.conn.transaction():
            yield db

    def _check(self, db: Connection) -> None:
        found = stored_schema(db.conn)
        refuse_newer(found, self.where)
        version = found.legacy
        if version == 0:
            raise StoreUnavailable(f"{self.where} is not a result store (no agent-monitor schema in it yet)")
        if version < SCHEMA_VERSION:  # an older release's database, read as it is (the CLI does not migrate)
            names = frozenset(name for (name,) in execute(db, _TRACE_COLUMNS))
            self._columns = Columns(names, signatures=version >= 4, sessions=version >= 5, reviews=version >= 7)
        self._checked = True

    def _columns_of(self, db: Any) -> Columns:
        return self._columns
