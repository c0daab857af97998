"""SQL statements written once with SQLAlchemy Core and run on the store's own connections.

A `Statement` holds a Core construct (select, insert, update, delete, or `text()` for what Core cannot say) and
compiles it once per database, by SQLAlchemy's SQLite and psycopg dialects, into the driver's SQL with named bind
parameters (`:name` for sqlite3, `%(name)s` for psycopg). Parameters are always bound, never pasted into SQL; an
`IN` list is an expanding bind parameter, which SQLAlchemy expands per execution.

Why compile and hand the text to the drivers instead of running SQLAlchemy's Engine: the connections stay the
store's own (sqlite3 with its busy handling, psycopg with a client-side deadline on every statement:
postgres/deadline.py), and the write path pays nothing per statement beyond the driver's own work.

A connection says which database it talks to by `dialect_name` ("postgresql": postgres/connection.py); one
without it is sqlite3's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine.interfaces import BindTyping, Dialect
from sqlalchemy.sql.compiler import Compiled
from sqlalchemy.sql.elements import ClauseElement

__all__ = ["POSTGRESQL", "SQLITE", "Statement", "dialect_of", "execute", "executemany", "scalar"]

SQLITE = "sqlite"
POSTGRESQL = "postgresql"


def _postgresql() -> Dialect:
    dialect = postgresql.psycopg.dialect()
    # No `::VARCHAR` casts on bind parameters: the server infers each parameter's type from where it is used, as
    # it did for the hand-written SQL (a cast would only change how a text parameter meets a jsonb column).
    dialect.bind_typing = BindTyping.NONE
    return dialect


DIALECTS: dict[str, Dialect] = {SQLITE: sqlite.dialect(paramstyle="named"), POSTGRESQL: _postgresql()}


class Statement:
    """A Core construct, compiled on first use for each database."""

    __slots__ = ("_compiled", "clause")

    def __init__(self, clause: ClauseElement) -> None:
        self.clause = clause
        self._compiled: dict[str, _Compiled] = {}

    def compiled(self, dialect: str) -> _Compiled:
        found = self._compiled.get(dialect)
        if found is None:
            found = self._compiled[dialect] = _Compiled(self.clause.compile(dialect=DIALECTS[dialect]))
        return found

    def sql(self, dialect: str) -> str:
        """The SQL text for `dialect` (for logs and tests; execution may expand IN lists)."""
        return self.compiled(dialect).text

    def __repr__(self) -> str:
        return f"Statement({self.sql(SQLITE)!r})"


class _Compiled:
    """One database's SQL for a statement, and how its parameters are completed: the values of literals Core
    bound itself (`x.like("a%")`) are added, and expanding parameters expanded, only when it has either."""

    __slots__ = ("compiled", "plain", "text")

    def __init__(self, compiled: Compiled) -> None:
        self.compiled = compiled
        self.text = str(compiled)
        binds = getattr(compiled, "binds", {})
        self.plain = not any(bind.expanding or bind.value is not None or bind.callable for bind in binds.values())

    def bind(self, params: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        if self.plain:
            return self.text, params
        state = self.compiled.construct_expanded_state(dict(params))  # type: ignore[attr-defined]
        return state.statement, state.parameters


def dialect_of(db: Any) -> str:
    """The database behind a connection: "postgresql" for the store's psycopg wrapper, else "sqlite"."""
    return getattr(db, "dialect_name", SQLITE)


def execute(db: Any, statement: Statement, params: Mapping[str, Any] | None = None) -> Any:
    """Run `statement` on `db` (a sqlite3 connection or postgres/connection.Connection); its cursor."""
    text, bound = statement.compiled(dialect_of(db)).bind(params or {})
    return db.execute(text, bound)


def executemany(db: Any, statement: Statement, rows: Iterable[Mapping[str, Any]]) -> None:
    """Run `statement` once per row of parameters (a statement without expanding parameters)."""
    compiled = statement.compiled(dialect_of(db))
    if compiled.plain:
        db.executemany(compiled.text, rows)
        return
    for row in rows:
        text, bound = compiled.bind(row)
        db.execute(text, bound)


def scalar(db: Any, statement: Statement, params: Mapping[str, Any] | None = None) -> Any:
    """The first column of the first row (None when there is no row)."""
    row = execute(db, statement, params).fetchone()
    return None if row is None else row[0]
