"""SQL that SQLite and PostgreSQL spell differently, as SQLAlchemy constructs compiled per database (the
compiler extension): a statement that uses them is written once (statements.py).

Add one here, with both spellings, when a query needs another; tests/monitor/store compiles each on both. Each
spelling is itself a Core construct (no SQL text is put together here).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import cast, extract, func, literal_column
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import BigInteger, Double, Integer

__all__ = [
    "DatabaseNow", "Greatest", "JsonAppended", "Least", "StoredFlag", "StoredNumber", "TraceRowKey", "database_now",
    "greatest", "json_appended", "least", "stored_flag", "stored_number", "trace_row_key",
]  # fmt: skip


class TraceRowKey(ColumnElement[int]):
    """The traces' insertion-ordered key: SQLite's rowid, PostgreSQL's identity column `id`."""

    type = BigInteger()
    inherit_cache = True

    def __init__(self, table: str = "traces") -> None:
        self.table = table


def trace_row_key(table: str = "traces") -> TraceRowKey:
    """`table`'s row key (`table`: the name or alias the statement gives the traces)."""
    return TraceRowKey(table)


@compiles(TraceRowKey, "sqlite")
def _sqlite_row_key(element: TraceRowKey, compiler: SQLCompiler, **kw: Any) -> str:
    return f"{element.table}.rowid"


@compiles(TraceRowKey, "postgresql")
def _postgresql_row_key(element: TraceRowKey, compiler: SQLCompiler, **kw: Any) -> str:
    return f"{element.table}.id"


def _arguments(element: FunctionElement[Any]) -> list[Any]:
    return list(element.clauses.clauses)


class Greatest(FunctionElement[float]):
    """The larger of two values: SQLite's two-argument `max`, PostgreSQL's `GREATEST`."""

    type = Double()
    inherit_cache = True


class Least(FunctionElement[float]):
    """The smaller of two values: SQLite's two-argument `min`, PostgreSQL's `LEAST`."""

    type = Double()
    inherit_cache = True


def greatest(a: Any, b: Any) -> Greatest:
    return Greatest(a, b)


def least(a: Any, b: Any) -> Least:
    return Least(a, b)


@compiles(Greatest, "sqlite")
def _sqlite_greatest(element: Greatest, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(func.max(*_arguments(element)), **kw)


@compiles(Greatest, "postgresql")
def _postgresql_greatest(element: Greatest, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(func.greatest(*_arguments(element)), **kw)


@compiles(Least, "sqlite")
def _sqlite_least(element: Least, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(func.min(*_arguments(element)), **kw)


@compiles(Least, "postgresql")
def _postgresql_least(element: Least, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(func.least(*_arguments(element)), **kw)


class JsonAppended(FunctionElement[str]):
    """A JSON array column (NULL: empty) with a value (JSON text) appended: SQLite's `json_insert(..., '$[#]',
    json(value))`, PostgreSQL's `jsonb || jsonb_build_array(value::jsonb)`."""

    inherit_cache = True


def json_appended(column: Any, value: Any) -> JsonAppended:
    return JsonAppended(column, value)


@compiles(JsonAppended, "sqlite")
def _sqlite_json_appended(element: JsonAppended, compiler: SQLCompiler, **kw: Any) -> str:
    column, value = _arguments(element)
    array = func.coalesce(column, literal_column("'[]'"))
    return compiler.process(func.json_insert(array, literal_column("'$[#]'"), func.json(value)), **kw)


@compiles(JsonAppended, "postgresql")
def _postgresql_json_appended(element: JsonAppended, compiler: SQLCompiler, **kw: Any) -> str:
    column, value = _arguments(element)
    array = func.coalesce(column, cast(literal_column("'[]'"), JSONB))
    return compiler.process(array.op("||")(func.jsonb_build_array(cast(value, JSONB))), **kw)


class StoredNumber(FunctionElement[float]):
    """A float parameter as both databases keep it, NaN as NULL: as it is on SQLite (sqlite3 binds NaN as NULL),
    `NULLIF(value::float8, 'NaN')` on PostgreSQL."""

    type = Double()
    inherit_cache = True


class StoredFlag(FunctionElement[int]):
    """A bool parameter (or None) as the 0/1 integer the tables keep: as it is on SQLite, `value::int` on
    PostgreSQL (psycopg binds a bool as boolean)."""

    type = Integer()
    inherit_cache = True


def stored_number(value: Any) -> StoredNumber:
    return StoredNumber(value)


def stored_flag(value: Any) -> StoredFlag:
    return StoredFlag(value)


@compiles(StoredNumber, "sqlite")
@compiles(StoredFlag, "sqlite")
def _sqlite_as_bound(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(_arguments(element)[0], **kw)


@compiles(StoredNumber, "postgresql")
def _postgresql_stored_number(element: StoredNumber, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(func.nullif(cast(_arguments(element)[0], Double), literal_column("'NaN'")), **kw)


@compiles(StoredFlag, "postgresql")
def _postgresql_stored_flag(element: StoredFlag, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(cast(_arguments(element)[0], Integer), **kw)


class DatabaseNow(FunctionElement[float]):
    """The database's clock in epoch seconds (PostgreSQL's `clock_timestamp()`: replicas' clocks may differ, the
    server's is one). PostgreSQL only: a SQLite file has one host, whose clock the store reads itself."""

    type = Double()
    inherit_cache = True


def database_now() -> DatabaseNow:
    return DatabaseNow()


@compiles(DatabaseNow, "postgresql")
def _postgresql_now(element: DatabaseNow, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(cast(extract("epoch", func.clock_timestamp()), Double), **kw)
