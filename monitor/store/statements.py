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

The write path's inserts take their rows as the tuples the writer packs (packing.py), which cost less to build than
dicts: a `RowStatement` is compiled with positional parameters (`?` for sqlite3, `%s` for psycopg) and names the
order of the values in a row (`layout`); the values are put in the order the SQL wants them once per statement
(nothing per row when the two orders agree), a parameter used twice is given twice.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine.interfaces import BindTyping, Dialect
from sqlalchemy.sql.compiler import Compiled
from sqlalchemy.sql.elements import ClauseElement

__all__ = [
    "POSTGRESQL", "SQLITE", "RowStatement", "Statement", "bound", "dialect_of", "execute", "execute_row",
    "executemany", "executemany_rows", "scalar",
]  # fmt: skip

SQLITE = "sqlite"
POSTGRESQL = "postgresql"


def _postgresql(paramstyle: str = "pyformat") -> Dialect:
    dialect = postgresql.psycopg.dialect(paramstyle=paramstyle)
    # No `::VARCHAR` casts on bind parameters: the server infers each parameter's type from where it is used, as
    # it did for the hand-written SQL (a cast would only change how a text parameter meets a jsonb column).
    dialect.bind_typing = BindTyping.NONE
    return dialect


DIALECTS: dict[str, Dialect] = {SQLITE: sqlite.dialect(paramstyle="named"), POSTGRESQL: _postgresql()}
POSITIONAL: dict[str, Dialect] = {SQLITE: sqlite.dialect(paramstyle="qmark"), POSTGRESQL: _postgresql("format")}


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


def bound(statement: Statement, dialect: str, params: Mapping[str, Any] | None = None) -> tuple[str, Mapping[str, Any]]:
    """The SQL and parameters that run `statement` on a connection of `dialect` (`execute` on the store's; a psycopg
    connection of its own, run under a deadline: postgres/leases.py, postgres/judge_limits.py)."""
    return statement.compiled(dialect).bind(params or {})


def execute(db: Any, statement: Statement, params: Mapping[str, Any] | None = None) -> Any:
    """Run `statement` on `db` (a sqlite3 connection or postgres/connection.Connection); its cursor."""
    return db.execute(*bound(statement, dialect_of(db), params))


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


class RowStatement:
    """A Core construct run with rows of values in `layout`'s order (the names of its bind parameters), compiled
    with positional parameters on first use for each database."""

    __slots__ = ("_compiled", "clause", "layout")

    def __init__(self, clause: ClauseElement, layout: Sequence[str]) -> None:
        self.clause = clause
        self.layout = tuple(layout)
        self._compiled: dict[str, _Positional] = {}

    def compiled(self, dialect: str) -> _Positional:
        found = self._compiled.get(dialect)
        if found is None:
            compiled = self.clause.compile(dialect=POSITIONAL[dialect])
            found = self._compiled[dialect] = _Positional(compiled, self.layout)
        return found

    def sql(self, dialect: str) -> str:
        return self.compiled(dialect).text

    def __repr__(self) -> str:
        return f"RowStatement({self.sql(SQLITE)!r}, {self.layout!r})"


class _Positional:
    """One database's SQL for a RowStatement, and how a row becomes its parameters: as it is when the SQL takes the
    values in the layout's order; else reordered (a value used twice given twice, a value Core bound itself added)."""

    __slots__ = ("order", "text")

    def __init__(self, compiled: Compiled, layout: tuple[str, ...]) -> None:
        self.text = str(compiled)
        binds = getattr(compiled, "binds", {})
        names = list(getattr(compiled, "positiontup", None) or ())
        if any(bind.expanding for bind in binds.values()) or "POSTCOMPILE" in self.text:
            raise ValueError(f"a RowStatement takes no expanding parameter: {self.text}")
        self.order: Callable[[Sequence[Any]], Sequence[Any]] | None = None
        if names == list(layout):
            return
        unknown = [name for name in names if name not in layout and binds[name].value is None]
        if unknown:
            raise ValueError(f"parameters {unknown} are not in the layout {layout}: {self.text}")
        if all(name in layout for name in names):
            picked = operator.itemgetter(*(layout.index(name) for name in names))
            self.order = picked if len(names) > 1 else lambda row: (picked(row),)
            return
        sources = [(layout.index(name), None) if name in layout else (-1, binds[name].value) for name in names]
        self.order = lambda row: tuple(row[i] if i >= 0 else value for i, value in sources)

    def rows(self, rows: Iterable[Sequence[Any]]) -> Iterable[Sequence[Any]]:
        order = self.order
        return rows if order is None else map(order, rows)

    def row(self, row: Sequence[Any]) -> Sequence[Any]:
        return row if self.order is None else self.order(row)


def execute_row(db: Any, statement: RowStatement, row: Sequence[Any]) -> Any:
    """Run `statement` on `db` with one row of values in its layout's order; its cursor."""
    compiled = statement.compiled(dialect_of(db))
    return db.execute(compiled.text, compiled.row(row))


def executemany_rows(db: Any, statement: RowStatement, rows: Iterable[Sequence[Any]]) -> None:
    """Run `statement` once per row of values in its layout's order (the writer's batches)."""
    compiled = statement.compiled(dialect_of(db))
    db.executemany(compiled.text, compiled.rows(rows))
