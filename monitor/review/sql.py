"""The SQL of the review reader (sqlite_reader.py, postgres_reader.py) and the cursor it pages with: SQLAlchemy Core
statements over the store's tables (monitor/store/tables.py), compiled once per database (store/statements.py);
what the databases spell differently is in store/sql_functions.py.

Results come from two places: `results` rows (failing results and skips; passing ones too in the oldest
databases) and the passing results packed per trace in `traces.passed` (expanded with json_elements). Both are
read newest first in one order, the order key (evaluated_at, source, id, index) descending, where a `results` row
is (created_at, 1, id, 0) and a packed passing result (the trace's created_at, 0, the trace's row key, minus its
index in the array: a trace's results in array order, as SQLite's json_each gives them, so that SQLite streams
the traces in index order instead of sorting them all: `newest_traces_first`). The cursor is that key of the last
item shown, base64 of JSON: a page starts strictly after it, so rows stored while paging (newer) never shift the
pages, and none is shown twice or skipped.

Agent and model: a result's own (its dispatch unit's) when set, else the trace's first agent / model. Variant: the
trace's (a result row of a trace that was not stored has none). A value that is missing altogether is "" (in
breakdown groups, and as a filter value that selects those results).

A statement depends on the shape of a request (which filters are set, the cursor's source), never on its values:
those are bound by name (a filter's by its field's name), and each shape's statement is built once (`lru_cache`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, and_, bindparam, func, literal_column, null, or_, select

from monitor.review.cursor import INT64, TIME, decode_cursor, encode_cursor
from monitor.review.models import ResultFilter
from monitor.store.sql_functions import json_elements, json_item, newest_traces_first, no_index, trace_row_key
from monitor.store.statements import Statement
from monitor.store.tables import results, traces

RESULT_SOURCE, PASSING_SOURCE = 1, 0
OrderKey = tuple[float, int, int, int]

MAX_CURSOR_CHARS = 128  # an encoded order key is about 60 characters
_ORDER_KEY = (TIME, INT64, INT64, INT64)

# The tables as the review's statements name them.
R = results.alias("r")
T = traces.alias("t")
# Constants written into the SQL (not bound): SQLite matches a partial index's WHERE (`passed = 0`) only to the
# same constant, and PostgreSQL groups by an expression only when it is the selected one, bound values included.
ZERO: ColumnElement[Any] = literal_column("0")
ONE: ColumnElement[Any] = literal_column("1")
EMPTY: ColumnElement[Any] = literal_column("''")
# GROUP BY / ORDER BY an output column by its position
FIRST: ColumnElement[Any] = literal_column("1")
SECOND: ColumnElement[Any] = literal_column("2")
FILTERS = ("evaluator", "service", "variant", "agent", "model", "trace_id", "since", "until")  # bound by name


def encode_results_cursor(key: OrderKey) -> str:
    return encode_cursor(key)


def decode_results_cursor(cursor: str) -> OrderKey:
    """The order key of a cursor from `encode_results_cursor`; ValueError for anything else (too long, not base64
    JSON of four numbers, a time that is not finite, an integer the store's 64-bit columns cannot hold)."""
    at, source, ident, index = decode_cursor(cursor, _ORDER_KEY, MAX_CURSOR_CHARS)
    if source not in (RESULT_SOURCE, PASSING_SOURCE):
        raise ValueError("invalid cursor")
    return at, source, ident, index


@dataclass(frozen=True)
class Columns:
    """The `traces` columns a database has (one from before schema version 1 lacks some: NULL then), and the
    tables and columns of later versions it has."""

    present: frozenset[str]
    signatures: bool = True  # the database has `signatures` and `results.signature` (schema version 4)
    sessions: bool = True  # the database has `sessions` and `results.session_id` (schema version 5)
    reviews: bool = True  # the database has `reviews` (schema version 7)

    def __post_init__(self) -> None:
        object.__setattr__(self, "present", frozenset(self.present))

    def __call__(self, name: str) -> ColumnElement[Any]:
        """The trace's column `name` (of `T`), NULL when the database lacks it."""
        return T.c[name] if name in self.present else null()

    @property
    def session_id(self) -> ColumnElement[Any]:
        """A result's session id (NULL in a database from before schema version 5)."""
        return R.c.session_id if self.sessions else null()

    @property
    def signature(self) -> ColumnElement[Any]:
        return R.c.signature if self.signatures else null()

    def first(self, name: str) -> ColumnElement[Any]:
        """The first name of a JSON array column (agents, models)."""
        return json_item(T.c[name], 0) if name in self.present else null()

    @property
    def variant(self) -> ColumnElement[Any]:
        """The trace's variant, "" for none (a database from before schema version 3, a trace not stored)."""
        return func.coalesce(self("variant"), EMPTY)

    def variant_is(self, empty: bool, indexed: bool = True) -> ColumnElement[bool]:
        """The condition that the trace's variant is the bound `variant` (`empty`: it is ""): the bare column
        unless "" is asked for, so that the traces' (variant, created_at) index serves it; `indexed` False for the
        `results` rows, read newest first by their own time index (a page then stops early whatever the
        variant's share)."""
        if empty:
            return self.variant == bindparam("variant")
        column = self("variant")
        return (column if indexed or "variant" not in self.present else no_index(column)) == bindparam("variant")

    def agent(self, own: ColumnElement[Any]) -> ColumnElement[Any]:
        """A result's agent: its own, else the trace's first, else ""."""
        return func.coalesce(own, self.first("agents"), EMPTY)

    def model(self, own: ColumnElement[Any]) -> ColumnElement[Any]:
        return func.coalesce(own, self.first("models"), EMPTY)


class Shape(NamedTuple):
    """What a results page's statements depend on: the filter's fields that are set, its outcome, whether it asks
    for the results without a variant, and the source of the cursor's key (None: the first page)."""

    fields: frozenset[str]
    outcome: str | None
    no_variant: bool
    after: int | None


def shape_of(where: ResultFilter, after: OrderKey | None) -> Shape:
    fields = frozenset(name for name in FILTERS if getattr(where, name) is not None)
    return Shape(fields, where.outcome, where.variant == "", None if after is None else after[1])


def bound(where: ResultFilter | Any, after: OrderKey | None = None, **more: Any) -> dict[str, Any]:
    """The values of a request's statement: the filter's set fields by their names, the cursor's key (`at`,
    `ident`, `index`: minus the key's, the array index), and `more`."""
    params = {name: getattr(where, name) for name in FILTERS if getattr(where, name, None) is not None}
    if after is not None:
        params.update(at=after[0], ident=after[2], index=-after[3])
    return {**params, **more}


def time_range(column: ColumnElement[Any], fields: frozenset[str]) -> list[ColumnElement[bool]]:
    """`since` inclusive, `until` exclusive, on `column`."""
    found = [column >= bindparam("since")] if "since" in fields else []
    return found + ([column < bindparam("until")] if "until" in fields else [])


def results_query(where: ResultFilter, after: OrderKey | None, limit: int, cols: Columns, excerpt: int) -> tuple:
    """(statement, params) of the `results` rows matching `where`, after the cursor, newest first."""
    return _results(shape_of(where, after), cols, excerpt), bound(where, after, limit=limit)


def passing_query(where: ResultFilter, after: OrderKey | None, limit: int, cols: Columns, excerpt: int) -> tuple:
    """(statement, params) of the packed passing results matching `where`, after the cursor, newest first."""
    return _passing(shape_of(where, after), cols, excerpt), bound(where, after, limit=limit)


OUTCOMES = {"pass": R.c.passed == ONE, "fail": R.c.passed == ZERO, "skip": R.c.passed.is_(None)}


@lru_cache(maxsize=256)
def _results(shape: Shape, cols: Columns, excerpt: int) -> Statement:
    has = shape.fields.__contains__
    where: list[ColumnElement[bool]] = []
    if has("evaluator"):
        where.append(R.c.evaluator == bindparam("evaluator"))
    if has("service"):
        where.append(R.c.service == bindparam("service"))
    if has("variant"):
        where.append(cols.variant_is(shape.no_variant, indexed=False))
    if has("agent"):
        where.append(cols.agent(R.c.agent) == bindparam("agent"))
    if has("model"):
        where.append(cols.model(R.c.model) == bindparam("model"))
    if shape.outcome is not None:
        where.append(OUTCOMES[shape.outcome])
    if has("trace_id"):
        where.append(R.c.trace_id == bindparam("trace_id"))
    where += time_range(R.c.created_at, shape.fields)
    at: ColumnElement[float] = bindparam("at")
    if shape.after == RESULT_SOURCE:
        where.append(and_(R.c.created_at <= at, or_(R.c.created_at < at, R.c.id < bindparam("ident"))))
    elif shape.after is not None:
        where.append(R.c.created_at < at)
    c = R.c
    query = (
        select(c.created_at, c.id, c.trace_id, c.evaluator, c.level, c.passed, c.score, c.skip_reason)
        .add_columns(c.explanation, c.details, c.service, c.agent, c.model, c.span_id)
        .add_columns(*_excerpts(excerpt), cols.variant, cols.session_id)
        .select_from(R.outerjoin(T, T.c.trace_id == R.c.trace_id))
        .where(*where)
        .order_by(R.c.created_at.desc(), R.c.id.desc())
        .limit(bindparam("limit"))
    )
    return Statement(query)


def _excerpts(excerpt: int) -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    return func.substr(T.c.input, 1, excerpt + 1), func.substr(T.c.output, 1, excerpt + 1)


def packed(cols: Columns) -> Any:
    """The FROM item `j` of the trace's packed passing results: j.value (one, a JSON array), j.key (its index)."""
    return json_elements(cols("passed"), "j", key=True)


@lru_cache(maxsize=256)
def _passing(shape: Shape, cols: Columns, excerpt: int) -> Statement:
    has = shape.fields.__contains__
    j = packed(cols)
    where: list[ColumnElement[bool]] = [T.c.passed.is_not(None)]
    if has("evaluator"):
        where.append(json_item(j.c.value, 0) == bindparam("evaluator"))
    if has("service"):
        where.append(T.c.service == bindparam("service"))
    if has("variant"):
        where.append(cols.variant_is(shape.no_variant))
    if has("agent"):
        where.append(cols.agent(json_item(j.c.value, 3)) == bindparam("agent"))
    if has("model"):
        where.append(cols.model(json_item(j.c.value, 4)) == bindparam("model"))
    if has("trace_id"):
        where.append(T.c.trace_id == bindparam("trace_id"))
    where += time_range(T.c.created_at, shape.fields)
    at: ColumnElement[float] = bindparam("at")
    ident: ColumnElement[int] = bindparam("ident")
    row_key = trace_row_key("t")
    if shape.after == RESULT_SOURCE:
        where.append(T.c.created_at <= at)
    elif shape.after is not None:
        newer = or_(T.c.created_at < at, row_key < ident, and_(row_key == ident, j.c.key > bindparam("index")))
        where.append(and_(T.c.created_at <= at, newer))
    query = (
        select(T.c.created_at, row_key, j.c.key, T.c.trace_id, j.c.value, T.c.service, *_excerpts(excerpt))
        .add_columns(cols.variant)
        .select_from(T, j)
        .where(*where)
        .order_by(newest_traces_first(T.c.created_at, row_key, j.c.key))  # then array order
        .limit(bindparam("limit"))
    )
    return Statement(query)


TRACE_FIELDS = ("created_at", "service", "input", "output", "span_count", "duration_ms", "has_errors")
TRACE_EXTRA = ("passed", "agents", "tools", "detail", "variant")  # NULL in the databases that lack them
RESULT_FIELDS = (
    "created_at", "id", "trace_id", "evaluator", "level", "passed", "score", "skip_reason", "explanation", "details",
    "service", "agent", "model", "span_id",
)  # fmt: skip


@lru_cache(maxsize=16)
def trace_queries(cols: Columns) -> tuple[Statement, Statement]:
    """The statements of one trace (bound `trace_id`): its `traces` row, its `results` rows in evaluation order."""
    row = select(*(T.c[name] for name in TRACE_FIELDS), *(cols(name) for name in TRACE_EXTRA))
    rows = select(*(R.c[name] for name in RESULT_FIELDS), null(), null(), cols.session_id)
    return (
        Statement(row.where(T.c.trace_id == bindparam("trace_id"))),
        Statement(rows.where(R.c.trace_id == bindparam("trace_id")).order_by(R.c.id)),
    )
