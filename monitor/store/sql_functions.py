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
from sqlalchemy.sql.selectable import TableValuedAlias
from sqlalchemy.sql.sqltypes import NullType, TableValueType
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


# the review's reads ----------------------------------------------------------------------------------------------
# The review reads the store's JSON columns (the passed results packed per trace, the agents/models/tools arrays,
# the review detail's spend) without decoding them in Python: these spell the JSON functions of each database.

__all__ += ["JsonElements", "json_elements", "json_item", "json_length", "json_number", "newest_traces_first"]
__all__ += ["no_index", "whole_part"]


class JsonItem(ColumnElement[Any]):
    """Element `index` of a JSON array: SQLite's json_extract (a JSON number as a number, a string as text),
    PostgreSQL's `->>` (text); `number` casts PostgreSQL's text to a double (for sums and comparisons)."""

    inherit_cache = True

    def __init__(self, array: ColumnElement[Any], index: int, number: bool = False) -> None:
        self.array, self.index, self.number = array, int(index), number
        self.type = Double() if number else NullType()


def json_item(array: ColumnElement[Any], index: int) -> JsonItem:
    """Element `index` of the JSON array `array`, as text (a number on SQLite, as json_extract gives it)."""
    return JsonItem(array, index)


def json_number(array: ColumnElement[Any], index: int) -> JsonItem:
    """Element `index` of the JSON array `array`, as a number."""
    return JsonItem(array, index, number=True)


@compiles(JsonItem, "sqlite")
def _sqlite_item(element: JsonItem, compiler: SQLCompiler, **kw: Any) -> str:
    return f"json_extract({compiler.process(element.array, **kw)}, '$[{element.index:d}]')"


@compiles(JsonItem, "postgresql")
def _postgresql_item(element: JsonItem, compiler: SQLCompiler, **kw: Any) -> str:
    item = f"({compiler.process(element.array, **kw)}->>{element.index:d})"
    return f"CAST({item} AS DOUBLE PRECISION)" if element.number else item


class JsonLength(ColumnElement[int]):
    """The length of a JSON array (json_array_length, jsonb_array_length)."""

    type = BigInteger()
    inherit_cache = True

    def __init__(self, array: ColumnElement[Any]) -> None:
        self.array = array


def json_length(array: ColumnElement[Any]) -> JsonLength:
    return JsonLength(array)


@compiles(JsonLength, "sqlite")
def _sqlite_length(element: JsonLength, compiler: SQLCompiler, **kw: Any) -> str:
    return f"json_array_length({compiler.process(element.array, **kw)})"


@compiles(JsonLength, "postgresql")
def _postgresql_length(element: JsonLength, compiler: SQLCompiler, **kw: Any) -> str:
    return f"jsonb_array_length({compiler.process(element.array, **kw)})"


class JsonArrayRows(FunctionElement[Any]):
    """The rows of a JSON array, as a table-valued function (`json_elements` names it): SQLite's json_each
    (columns value and key, the index from 0), PostgreSQL's jsonb_array_elements (`as_text`: the _text form), WITH
    ORDINALITY for `key` (from 1). `member`: the array under that key of a JSON object instead."""

    inherit_cache = True

    def __init__(self, value: ColumnElement[Any], ordinal: bool, as_text: bool, member: str | None) -> None:
        self.ordinal, self.as_text, self.member = ordinal, as_text, member
        super().__init__(value)
        self.type = self._table_value_type = TableValueType(*(("value", "key") if ordinal else ("value",)))


@compiles(JsonArrayRows, "sqlite")
def _sqlite_array_rows(element: JsonArrayRows, compiler: SQLCompiler, **kw: Any) -> str:
    value = compiler.process(element.clauses, **kw)
    return f"json_each({value})" if element.member is None else f"json_each({value}, '$.{element.member}')"


@compiles(JsonArrayRows, "postgresql")
def _postgresql_array_rows(element: JsonArrayRows, compiler: SQLCompiler, **kw: Any) -> str:
    value = compiler.process(element.clauses, **kw)
    if element.member is not None:
        value = f"{value}->'{element.member}'"
    rows = f"jsonb_array_elements_text({value})" if element.as_text else f"jsonb_array_elements({value})"
    return f"{rows} WITH ORDINALITY" if element.ordinal else rows


class JsonElements(TableValuedAlias):
    """A FROM item of a JSON array's rows under a name (`json_elements`): `name.value`, and `name.key` when asked.
    PostgreSQL names the columns after the alias (`AS j(value, key)`); SQLite's json_each has them already."""

    inherit_cache = True


def json_elements(
    value: ColumnElement[Any], name: str, *, key: bool = False, as_text: bool = False, member: str | None = None
) -> JsonElements:
    """The rows of the JSON array `value` (or of its `member`'s array) as a FROM item `name`: its `c.value` (an
    element: JSON on PostgreSQL unless `as_text`) and with `key` its `c.key` (the element's index, ascending in
    array order: from 0 on SQLite, from 1 on PostgreSQL)."""
    rows = JsonArrayRows(value, key, as_text, member)
    alias: JsonElements = JsonElements._construct(rows, name=name, table_value_type=rows.type)
    return alias


@compiles(JsonElements)
def _array_rows_alias(element: JsonElements, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.visit_table_valued_alias(element, **kw)


@compiles(JsonElements, "postgresql")
def _postgresql_array_rows_alias(element: JsonElements, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.visit_table_valued_alias(element.render_derived(name=element.name), **kw)


class NoIndex(ColumnElement[Any]):
    """An expression no index serves: SQLite's unary `+`. SQLite plans without statistics and would otherwise
    drive a query on the `results` rows from an index on `traces`; PostgreSQL's planner weighs both itself."""

    inherit_cache = True

    def __init__(self, expression: ColumnElement[Any]) -> None:
        self.inner = expression
        self.type = expression.type


def no_index(expression: ColumnElement[Any]) -> NoIndex:
    return NoIndex(expression)


@compiles(NoIndex)
def _postgresql_no_index(element: NoIndex, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.inner, **kw)


@compiles(NoIndex, "sqlite")
def _sqlite_no_index(element: NoIndex, compiler: SQLCompiler, **kw: Any) -> str:
    return f"+{compiler.process(element.inner, **kw)}"


class WholePart(ColumnElement[int]):
    """The whole part of a non-negative number, as an integer (a trend bucket's index)."""

    type = BigInteger()
    inherit_cache = True

    def __init__(self, expression: ColumnElement[Any]) -> None:
        self.inner = expression


def whole_part(expression: ColumnElement[Any]) -> WholePart:
    return WholePart(expression)


@compiles(WholePart, "sqlite")
def _sqlite_whole_part(element: WholePart, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST({compiler.process(element.inner, **kw)} AS INTEGER)"


@compiles(WholePart, "postgresql")
def _postgresql_whole_part(element: WholePart, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST(FLOOR({compiler.process(element.inner, **kw)}) AS BIGINT)"


class NewestTracesFirst(ColumnElement[Any]):
    """ORDER BY terms for traces expanded into their packed passing results: the traces newest first (by time,
    then row key), each one's results in array order. SQLite's json_each gives them in that order as it streams
    the traces from their time index, so SQLite is not told (told, it would sort every row it reads); PostgreSQL
    is, by the ordinality key."""

    inherit_cache = True

    def __init__(self, created_at: ColumnElement[Any], row_key: ColumnElement[Any], index: ColumnElement[Any]) -> None:
        self.created_at, self.row_key, self.index = created_at, row_key, index


def newest_traces_first(
    created_at: ColumnElement[Any], row_key: ColumnElement[Any], index: ColumnElement[Any]
) -> NewestTracesFirst:
    """`created_at DESC, row_key DESC`, then on PostgreSQL `index` (the `key` of json_elements)."""
    return NewestTracesFirst(created_at, row_key, index)


@compiles(NewestTracesFirst, "sqlite")
def _sqlite_newest_traces(element: NewestTracesFirst, compiler: SQLCompiler, **kw: Any) -> str:
    return ", ".join(compiler.process(term, **kw) for term in (element.created_at.desc(), element.row_key.desc()))


@compiles(NewestTracesFirst, "postgresql")
def _postgresql_newest_traces(element: NewestTracesFirst, compiler: SQLCompiler, **kw: Any) -> str:
    terms = (element.created_at.desc(), element.row_key.desc(), element.index)
    return ", ".join(compiler.process(term, **kw) for term in terms)
