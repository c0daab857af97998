"""SQL that SQLite and PostgreSQL spell differently, as SQLAlchemy constructs compiled per database (the
compiler extension): a statement that uses them is written once (statements.py).

Add one here, with both spellings, when a query needs another; tests/monitor/store compiles each on both.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import BigInteger

__all__ = ["TraceRowKey", "trace_row_key"]


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
