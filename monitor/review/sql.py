"""The SQL of the review reader (sqlite_reader.py, postgres_reader.py) and the cursor it pages with.

Results come from two places: `results` rows (failing results and skips; passing ones too in the oldest
databases) and the passing results packed per trace in `traces.passed` (expanded with json_each). Both are read
newest first in one order, the order key (evaluated_at, source, id, index) descending, where a `results` row is
(created_at, 1, id, 0) and a packed passing result (the trace's created_at, 0, the trace's rowid, minus its
index in the array: a trace's results in array order, as json_each gives them, so that SQLite streams the
traces in index order instead of sorting them all). The cursor is that key of the last item shown, base64 of
JSON: a page starts strictly after it, so rows stored while paging (newer) never shift the pages, and none is
shown twice or skipped.

Agent and model: a result's own (its dispatch unit's) when set, else the trace's first agent / model. Variant: the
trace's (a result row of a trace that was not stored has none). A value that is missing altogether is "" (in
breakdown groups, and as a filter value that selects those results).
"""

from __future__ import annotations

from typing import Any

from monitor.review.cursor import INT64, TIME, decode_cursor, encode_cursor
from monitor.review.models import ResultFilter

RESULT_SOURCE, PASSING_SOURCE = 1, 0
OrderKey = tuple[float, int, int, int]


MAX_CURSOR_CHARS = 128  # an encoded order key is about 60 characters
_ORDER_KEY = (TIME, INT64, INT64, INT64)


def encode_results_cursor(key: OrderKey) -> str:
    return encode_cursor(key)


def decode_results_cursor(cursor: str) -> OrderKey:
    """The order key of a cursor from `encode_results_cursor`; ValueError for anything else (too long, not base64
    JSON of four numbers, a time that is not finite, an integer the store's 64-bit columns cannot hold)."""
    at, source, ident, index = decode_cursor(cursor, _ORDER_KEY, MAX_CURSOR_CHARS)
    if source not in (RESULT_SOURCE, PASSING_SOURCE):
        raise ValueError("invalid cursor")
    return at, source, ident, index


class Dialect:
    """The SQL that differs between SQLite (the base: JSON as text, json_each, rowid) and PostgreSQL
    (postgres.dialect.POSTGRES: jsonb, jsonb_array_elements, an identity column)."""

    rowid = "rowid"  # the traces' insertion-ordered key
    array_length = "json_array_length"
    passed_order = ""  # ORDER BY tail giving a trace's packed results in array order (json_each streams them so)

    def item(self, array: str, index: int) -> str:
        """Element `index` of a JSON array, as text."""
        return f"json_extract({array}, '$[{index}]')"

    def each_passed(self, column: str) -> str:
        """A FROM item `j` expanding the packed results: j.value (a packed result), j.key (its index)."""
        return f"json_each({column}) j"

    def each_tool(self, column: str) -> str:
        """A FROM item `tool` expanding a JSON array of names: tool.value."""
        return f"json_each({column}) tool"

    def no_index(self, column: str) -> str:
        """`column` as an expression no index serves: SQLite plans without statistics and would otherwise drive
        a query on the `results` rows from an index on `traces` (PostgreSQL's planner weighs both itself)."""
        return f"+{column}"

    def bucket(self, expression: str) -> str:
        """The whole part of a non-negative number (a trend bucket's index)."""
        return f"CAST({expression} AS INTEGER)"

    def each_of(self, column: str, key: str, alias: str) -> str:
        """A FROM item `alias` expanding the JSON array under `key` of a JSON object column: alias.value (none
        when the key is missing)."""
        return f"json_each({column}, '$.{key}') {alias}"

    def number(self, expression: str) -> str:
        """A JSON value (from `item`) as a number, for SUM."""
        return expression


SQLITE = Dialect()


class Columns:
    """SQL for the `traces` columns a database has (one from before schema version 1 lacks some: NULL then),
    in the database's dialect."""

    def __init__(
        self,
        present: set[str],
        dialect: Dialect = SQLITE,
        signatures: bool = True,
        sessions: bool = True,
        reviews: bool = True,
    ) -> None:
        self.present = present
        self.dialect = dialect
        self.signatures = signatures  # the database has `signatures` and `results.signature` (schema version 4)
        self.sessions = sessions  # the database has `sessions` and `results.session_id` (schema version 5)
        self.reviews = reviews  # the database has `reviews` (schema version 7)

    def __call__(self, name: str, alias: str = "t") -> str:
        return f"{alias}.{name}" if name in self.present else "NULL"

    @property
    def session_id(self) -> str:
        """A result's session id (NULL in a database from before schema version 5)."""
        return "r.session_id" if self.sessions else "NULL"

    def first(self, name: str) -> str:
        """The first name of a JSON array column (agents, models)."""
        return self.dialect.item(f"t.{name}", 0) if name in self.present else "NULL"

    @property
    def variant(self) -> str:
        """The trace's variant, "" for none (a database from before schema version 3, a trace not stored)."""
        return f"COALESCE({self('variant')}, '')"

    def variant_is(self, value: str, indexed: bool = True) -> str:
        """The condition (one `?`) that the trace's variant is `value`: the bare column unless "" is asked for,
        so that the traces' (variant, created_at) index serves it; `indexed` False for the `results` rows, read
        newest first by their own time index (a page then stops early whatever the variant's share)."""
        if value == "":
            return f"{self.variant} = ?"
        column = self("variant")
        return f"{column if indexed or column == 'NULL' else self.dialect.no_index(column)} = ?"


def results_query(where: ResultFilter, after: OrderKey | None, limit: int, cols: Columns, excerpt: int) -> tuple:
    """(sql, params) of the `results` rows matching `where`, after the cursor, newest first."""
    sql_where = Conditions()
    add = sql_where.add

    if where.evaluator is not None:
        add("r.evaluator = ?", where.evaluator)
    if where.service is not None:
        add("r.service = ?", where.service)
    if where.variant is not None:
        add(cols.variant_is(where.variant, indexed=False), where.variant)
    if where.agent is not None:
        add(f"COALESCE(r.agent, {cols.first('agents')}, '') = ?", where.agent)
    if where.model is not None:
        add(f"COALESCE(r.model, {cols.first('models')}, '') = ?", where.model)
    if where.outcome is not None:
        add({"pass": "r.passed = 1", "fail": "r.passed = 0", "skip": "r.passed IS NULL"}[where.outcome])
    if where.trace_id is not None:
        add("r.trace_id = ?", where.trace_id)
    sql_where.time_range("r.created_at", where)
    if after is not None:
        at, source, ident, _ = after
        if source == RESULT_SOURCE:
            add("r.created_at <= ? AND (r.created_at < ? OR r.id < ?)", at, at, ident)
        else:
            add("r.created_at < ?", at)
    sql = (
        "SELECT r.created_at, r.id, r.trace_id, r.evaluator, r.level, r.passed, r.score, r.skip_reason,"
        f" r.explanation, r.details, r.service, r.agent, r.model, r.span_id, substr(t.input, 1, {excerpt + 1}),"
        f" substr(t.output, 1, {excerpt + 1}), {cols.variant}, {cols.session_id} FROM results r"
        " LEFT JOIN traces t ON t.trace_id = r.trace_id"
        f"{sql_where.sql} ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
    )
    return sql, [*sql_where.params, limit]


def passing_query(where: ResultFilter, after: OrderKey | None, limit: int, cols: Columns, excerpt: int) -> tuple:
    """(sql, params) of the packed passing results matching `where`, after the cursor, newest first."""
    d = cols.dialect
    sql_where = Conditions("t.passed IS NOT NULL")
    add = sql_where.add

    if where.evaluator is not None:
        add(f"{d.item('j.value', 0)} = ?", where.evaluator)
    if where.service is not None:
        add("t.service = ?", where.service)
    if where.variant is not None:
        add(cols.variant_is(where.variant), where.variant)
    if where.agent is not None:
        add(f"COALESCE({d.item('j.value', 3)}, {cols.first('agents')}, '') = ?", where.agent)
    if where.model is not None:
        add(f"COALESCE({d.item('j.value', 4)}, {cols.first('models')}, '') = ?", where.model)
    if where.trace_id is not None:
        add("t.trace_id = ?", where.trace_id)
    sql_where.time_range("t.created_at", where)
    if after is not None:
        at, source, ident, index = after
        if source == RESULT_SOURCE:
            add("t.created_at <= ?", at)
        else:
            add(
                f"t.created_at <= ? AND (t.created_at < ? OR t.{d.rowid} < ? OR (t.{d.rowid} = ? AND j.key > ?))",
                at,
                at,
                ident,
                ident,
                -index,
            )
    sql = (
        f"SELECT t.created_at, t.{d.rowid}, j.key, t.trace_id, j.value, t.service, substr(t.input, 1,"
        f" {excerpt + 1}), substr(t.output, 1, {excerpt + 1}), {cols.variant} FROM traces t,"
        f" {d.each_passed('t.passed')}"
        f"{sql_where.sql} ORDER BY t.created_at DESC, t.{d.rowid} DESC{d.passed_order} LIMIT ?"  # then array order
    )
    return sql, [*sql_where.params, limit]


def breakdown_queries(by: str, where: ResultFilter, cols: Columns) -> list[tuple[str, list[Any]]]:
    """(sql, params) pairs, each giving rows (value, passed, failed, skipped): the `results` rows, then the
    packed passing results (summed by array length when no evaluator is asked for and none need expanding).
    `where`: its evaluator, variant and time range."""
    d = cols.dialect
    queries = []
    tools = f", {d.each_tool(cols('tools'))}" if by == "tool" else ""
    # results rows
    rows_where = Conditions()
    if where.evaluator is not None:
        rows_where.add("r.evaluator = ?", where.evaluator)
    if where.variant is not None:
        rows_where.add(cols.variant_is(where.variant, indexed=False), where.variant)
    rows_where.time_range("r.created_at", where)
    group = {
        "service": "COALESCE(r.service, '')",
        "agent": f"COALESCE(r.agent, {cols.first('agents')}, '')",
        "model": f"COALESCE(r.model, {cols.first('models')}, '')",
        "tool": "tool.value",
        "variant": cols.variant,
    }[by]
    traces_needed = by != "service" or where.variant is not None
    join = " LEFT JOIN traces t ON t.trace_id = r.trace_id" if traces_needed else ""
    queries.append(
        (
            f"SELECT {group}, {_count_if('r.passed = 1')}, {_count_if('r.passed = 0')},"
            f" {_count_if('r.passed IS NULL')} FROM results r"
            f"{join}{tools}{rows_where.sql} GROUP BY 1",
            rows_where.params,
        )
    )
    # packed passing results
    packed_where = Conditions("t.passed IS NOT NULL")
    if where.variant is not None:
        packed_where.add(cols.variant_is(where.variant), where.variant)
    packed_where.time_range("t.created_at", where)
    per_trace = {"service": "COALESCE(t.service, '')", "tool": "tool.value", "variant": cols.variant}
    if by in per_trace and where.evaluator is None:
        group = per_trace[by]
        count, source = f"SUM({d.array_length}(t.passed))", f"traces t{tools}"
    else:
        if where.evaluator is not None:
            packed_where.add(f"{d.item('j.value', 0)} = ?", where.evaluator)
        group = {
            **per_trace,
            "agent": f"COALESCE({d.item('j.value', 3)}, {cols.first('agents')}, '')",
            "model": f"COALESCE({d.item('j.value', 4)}, {cols.first('models')}, '')",
        }[by]
        count, source = "COUNT(*)", f"traces t, {d.each_passed('t.passed')}{tools}"
    queries.append((f"SELECT {group}, {count}, 0, 0 FROM {source}{packed_where.sql} GROUP BY 1", packed_where.params))
    return queries


def spend_query(by: str, where: ResultFilter, cols: Columns) -> tuple[str, list[Any]] | None:
    """(sql, params) giving rows (value, calls, cost USD or NULL, priced entries, unpriced calls): the spend of
    the stored traces in `where`'s range and variant, from their review detail (store/packing.py): per model or
    agent its own calls, per service, variant or tool every call of the traces. None for a database from before
    the review detail."""
    if "detail" not in cols.present:
        return None
    d = cols.dialect
    conditions = Conditions("t.detail IS NOT NULL")
    if where.variant is not None:
        conditions.add(cols.variant_is(where.variant), where.variant)
    conditions.time_range("t.created_at", where)
    tools = f", {d.each_tool(cols('tools'))}" if by == "tool" else ""
    if by == "agent":  # [agent, calls, cost, unpriced]
        source, calls, cost, unpriced = d.each_of("t.detail", "agent_spend", "s"), 1, 2, 3
        group = f"COALESCE({d.item('s.value', 0)}, '')"
    else:  # models: [model, calls, input, output, cost, unpriced]
        source, calls, cost, unpriced = d.each_of("t.detail", "models", "s"), 1, 4, 5
        group = {
            "service": "COALESCE(t.service, '')",
            "model": f"COALESCE({d.item('s.value', 0)}, '')",
            "tool": "tool.value",
            "variant": cols.variant,
        }[by]
    value = d.number(d.item("s.value", cost))
    sql = (
        f"SELECT {group}, SUM({d.number(d.item('s.value', calls))}), SUM({value}), COUNT({value}),"
        f" SUM({d.number(d.item('s.value', unpriced))}) FROM traces t, {source}{tools}{conditions.sql} GROUP BY 1"
    )
    return sql, conditions.params


def _count_if(condition: str) -> str:
    return f"SUM(CASE WHEN {condition} THEN 1 ELSE 0 END)"


class Conditions:
    """A WHERE clause built up condition by condition, with its parameters in order."""

    def __init__(self, *conditions: str) -> None:
        self.conditions = list(conditions)
        self.params: list[Any] = []

    def add(self, condition: str, *values: Any) -> None:
        self.conditions.append(condition)
        self.params.extend(values)

    def time_range(self, column: str, where: ResultFilter) -> None:
        """`since` inclusive, `until` exclusive, on `column`."""
        if where.since is not None:
            self.add(f"{column} >= ?", where.since)
        if where.until is not None:
            self.add(f"{column} < ?", where.until)

    @property
    def sql(self) -> str:
        return f" WHERE {' AND '.join(self.conditions)}" if self.conditions else ""
