"""The review's SQL is SQLAlchemy Core statements (monitor/review/*_sql.py and the readers): every one compiles for
both databases with named parameters only, each in its database's spelling, is given every parameter it names,
and runs on both; a filter value with quotes, `%`, `?` or SQL in it is bound, never pasted into the SQL."""

from __future__ import annotations

import ast
import contextlib
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import select
from sqlalchemy.schema import CreateTable

from monitor.review import breakdown_sql, queue_sql, session_reader, signature_sql, sql, sqlite_reader, verdict_reads
from monitor.review.models import ResultFilter
from monitor.review.postgres_reader import _TRACE_COLUMNS
from monitor.review.queue_sql import RuleSpec
from monitor.review.session_models import SessionFilter
from monitor.review.signature_models import SignatureFilter
from monitor.review.stored_rows import EXCERPT
from monitor.store import statements
from monitor.store.schema import TRACE_COLUMNS
from monitor.store.sql_functions import (
    json_elements,
    json_item,
    json_length,
    json_number,
    newest_traces_first,
    no_index,
    trace_row_key,
    whole_part,
)
from monitor.store.statements import POSTGRESQL, SQLITE, Statement
from monitor.store.tables import METADATA, traces
from tests.support.backends import Backend
from tests.support.store_builders import detail, outcome, row

LATEST = sql.Columns(frozenset(TRACE_COLUMNS))
OLDEST = sql.Columns(frozenset(), signatures=False, sessions=False, reviews=False)  # before schema version 1
FULL = ResultFilter(evaluator="e", service="s", variant="v", agent="a", model="m", since=1.0, until=2.0, trace_id="t")
SPECS = (
    RuleSpec("all"),
    RuleSpec("failing", evaluators=("e", "f"), failing=True, share=0.5),
    RuleSpec("near_threshold", evaluators=("e",), near=(("e", 0.4, 0.6), ("f", 0.1, 0.2))),
    RuleSpec("new_signature", new_since=1.0, first=3, failing=True),
)
Query = tuple[str, Statement, dict[str, Any]]


def _results_shapes() -> Iterator[tuple[ResultFilter, sql.OrderKey | None]]:
    yield ResultFilter(), None
    for name in sql.FILTERS:
        yield ResultFilter(**{name: 1.0 if name in ("since", "until") else "x"}), None  # type: ignore[arg-type]
    yield ResultFilter(variant=""), None
    for outcome_ in ("pass", "fail", "skip"):
        yield ResultFilter(outcome=outcome_), None
    yield FULL, (1.0, sql.RESULT_SOURCE, 5, 0)
    yield FULL, (1.0, sql.PASSING_SOURCE, 5, -2)


def _result_queries(cols: sql.Columns) -> Iterator[Query]:
    for where, after in _results_shapes():
        yield "results", *sql.results_query(where, after, 11, cols, EXCERPT)
        yield "passing", *sql.passing_query(where, after, 11, cols, EXCERPT)
    of_trace, its_results = sql.trace_queries(cols)
    yield "trace", of_trace, {"trace_id": "t"}
    yield "trace results", its_results, {"trace_id": "t"}
    for by in ("service", "agent", "model", "tool", "variant"):
        for where in (ResultFilter(), ResultFilter(evaluator="e", variant="", since=1.0, until=2.0)):
            for statement, params in breakdown_sql.breakdown_queries(by, where, cols):
                yield f"breakdown by {by}", statement, params
        spend = breakdown_sql.spend_query(by, ResultFilter(variant="v", since=1.0), cols)
        if spend is not None:
            yield f"spend by {by}", *spend


def _signature_queries(cols: sql.Columns) -> Iterator[Query]:
    for where in (SignatureFilter(since=1.0, until=2.0), SignatureFilter(since=1.0, until=2.0, agent="a", variant="")):
        where = where.model_copy(update={"evaluator": "e", "service": "s"}) if where.agent else where
        yield "counts", *signature_sql.counts_query(where, cols, 0.0, 1.0)
        yield "counts of one", *signature_sql.counts_query(where, cols, 0.0, 1.0, "sig")
        yield "trend", *signature_sql.trend_query(where, cols, ["sig", "other"], 60.0)
        for after in (None, (1.5, "t")):
            yield "signature traces", *signature_sql.traces_query("sig", where, after, 5)
    yield "signature rows", *signature_sql.rows_query(["sig"])
    yield "verdicts", *signature_sql.verdicts_query(["t", "u"])
    yield "trace variants", *signature_sql.trace_variants_query(["t"], cols)
    yield "variant counts", *signature_sql.variant_counts_query(cols, ["a", "b"], 0.0, 1.0)
    yield "variant traces", *signature_sql.variant_traces_query(cols, ["a", "b"], 0.0, 1.0)


def _other_queries(cols: sql.Columns) -> Iterator[Query]:
    for spec in SPECS:
        for query in (queue_sql.rows_query(spec, 1.0, 5, cols), queue_sql.packed_query(spec, 1.0, 5, cols)):
            if query is not None:
                yield f"queue {spec.rule}", query.rows, query.params
                yield f"queue {spec.rule} count", query.counted, query.params
    yield "reviewed", *queue_sql.reviewed_query("e", 1.0, 10)
    yield "reviews since", *queue_sql.reviews_since_query(1.0, None)
    for where in (SessionFilter(), SessionFilter(service="s", since=1.0, until=2.0, failing=True, evaluator="e")):
        for after in (None, (1.0, "conv")):
            yield "sessions", *session_reader.sessions_query(where, after, 5)
    yield "session", session_reader._SESSION, {"session_id": "s"}
    yield "session results", session_reader._RESULTS, {"session_id": "s"}
    yield "sessions' results", session_reader._RESULTS_OF, {"ids": ["s", "t"]}
    yield "session of results", session_reader._SESSION_OF_RESULTS, {"trace_id": "t"}
    yield "stored at", session_reader._STORED_AT, {"trace_id": "t"}
    yield "turns within", session_reader._TURNS_WITHIN, {"since": 0.0, "until": 1.0, "pattern": '%"t"%'}
    packed = verdict_reads._packed_query(cols)
    yield "recent verdicts", verdict_reads._rows_query(cols), {"since": 0.0, "limit": 5}
    if packed is not None:
        yield "recent packed verdicts", packed, {"since": 0.0, "limit": 5}


def review_queries(cols: sql.Columns = LATEST) -> list[Query]:
    """Every statement of the review's reads (each shape of its filters), with parameters as the reads give them."""
    return [*_result_queries(cols), *_signature_queries(cols), *_other_queries(cols)]


def _needed(statement: Statement, dialect: str) -> set[str]:
    """The parameters `statement` takes from its caller (not the literals Core bound itself)."""
    binds = statement.compiled(dialect).compiled.binds  # type: ignore[attr-defined]
    return {name for name, bind in binds.items() if bind.value is None and bind.callable is None}


SPELLINGS = {
    SQLITE: (r"json_each|json_extract|json_array_length|rowid", r"jsonb|->>|ORDINALITY|FLOOR|%\("),
    POSTGRESQL: (r"jsonb_array_elements|->>|WITH ORDINALITY|t\.id\b", r"json_each|json_extract|rowid|\+t\."),
}


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRESQL])
def test_every_review_statement_compiles_with_named_parameters_it_is_given(dialect: str) -> None:
    spelled = set()
    for cols in (LATEST, OLDEST):
        for name, statement, params in review_queries(cols):
            text = statement.sql(dialect)
            assert "?" not in text, (name, text)
            assert _needed(statement, dialect) <= set(params), (name, text)
            ours, theirs = SPELLINGS[dialect]
            assert not re.search(theirs, text), (name, text)
            spelled.update(re.findall(ours, text))
    assert len(spelled) >= 4  # each database's own JSON functions and row key are used


def test_the_review_constructs_spell_each_database() -> None:
    t = traces.alias("t")
    j, tool = json_elements(t.c.passed, "j", key=True), json_elements(t.c.tools, "tool", as_text=True)
    s = json_elements(t.c.detail, "s", member="models")
    query = Statement(
        select(json_item(j.c.value, 3), json_number(s.c.value, 4), json_length(t.c.passed), tool.c.value)
        .add_columns(whole_part(t.c.duration_ms / 2.0))
        .select_from(t, j, s, tool)
        .where(no_index(t.c.variant) == "v")
        .order_by(newest_traces_first(t.c.created_at, trace_row_key("t"), j.c.key))
    )
    on_sqlite, on_postgresql = query.sql(SQLITE), query.sql(POSTGRESQL)
    for part in (
        "json_extract(j.value, '$[3]')",
        "json_extract(s.value, '$[4]')",
        "json_array_length(t.passed)",
        "CAST(t.duration_ms / ",
        "AS INTEGER)",
        "json_each(t.passed) AS j",
        "json_each(t.tools) AS tool",
        "json_each(t.detail, '$.models') AS s",
        "+t.variant = ",
        "ORDER BY t.created_at DESC, t.rowid DESC",
    ):
        assert part in on_sqlite, part
    assert on_sqlite.rstrip().endswith("t.rowid DESC")  # json_each streams each trace's results in array order
    for part in (
        "(j.value->>3)",
        "CAST((s.value->>4) AS DOUBLE PRECISION)",
        "jsonb_array_length(t.passed)",
        "CAST(FLOOR(t.duration_ms / ",
        "AS BIGINT)",
        "jsonb_array_elements(t.passed) WITH ORDINALITY AS j(value, key)",
        "jsonb_array_elements_text(t.tools) AS tool(value)",
        "jsonb_array_elements(t.detail->'models') AS s(value)",
        "WHERE t.variant = ",
        "ORDER BY t.created_at DESC, t.id DESC, j.key",
    ):
        assert part in on_postgresql, part


def test_the_readers_schema_statements_compile_for_their_database() -> None:
    for statement in (sqlite_reader._COLUMN_NAMES, sqlite_reader._TABLES):
        assert "?" not in statement.sql(SQLITE)
    assert "information_schema.columns" in _TRACE_COLUMNS.sql(POSTGRESQL)


def test_no_sql_text_in_the_review_package() -> None:
    """The review's SQL is written with Core: no string constant of monitor/review reads as SQL."""
    keywords = re.compile(r"\b(SELECT|FROM|WHERE|JOIN|GROUP BY|ORDER BY|LIMIT|PRAGMA)\b")
    for path in sorted(Path(sql.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and node.body
            if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                assert not keywords.search(node.value), f"{path.name}:{node.lineno}: {node.value!r}"


class _Psycopg:
    """A psycopg connection as statements.execute runs on it (what postgres/connection.Connection says)."""

    dialect_name = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, text: str, params: Any) -> Any:
        return self.conn.execute(text, params)  # type: ignore[arg-type]


def _run_all(db: Any, queries: list[Query]) -> None:
    for name, statement, params in queries:
        try:
            statements.execute(db, statement, params).fetchall()
        except Exception as exc:
            raise AssertionError(f"{name}: {statement.sql(statements.dialect_of(db))}") from exc


def test_every_review_statement_runs_on_both_databases(backend: Backend) -> None:
    backend.store().close()  # the latest schema
    if backend.name == "postgres":
        with psycopg.connect(backend.location, autocommit=True) as conn:
            _run_all(_Psycopg(conn), review_queries())
    else:
        with contextlib.closing(sqlite3.connect(backend.location)) as db:
            _run_all(db, review_queries())


def test_the_oldest_databases_statements_run_on_sqlite() -> None:
    db = sqlite3.connect(":memory:")
    for table in METADATA.sorted_tables:
        db.execute(str(CreateTable(table).compile(dialect=statements.DIALECTS[SQLITE])))
    _run_all(db, review_queries(OLDEST))


HOSTILE = ('it\'s 100% "right"?', "x' OR '1'='1", "%", "?", "'); DROP TABLE results; --")


def test_filter_values_are_bound_not_pasted(backend: Backend) -> None:
    store = backend.store()
    rows = (row("e", True, agent="a"), row("e", False, model="m"), row("e", None, "skip"))
    written = [outcome(f"{n:032x}", *rows, service=value, variant=value, detail=detail(("a",), ("m",), (value,)))
               for n, value in enumerate(("plain", *HOSTILE))]  # fmt: skip
    store.write(written)
    store.close()
    reader = backend.reader()
    try:
        for n, value in enumerate(HOSTILE, start=1):
            for where in (ResultFilter(service=value), ResultFilter(variant=value), ResultFilter(evaluator=value)):
                page = reader.results(where, 50)
                expected = [] if where.evaluator else [f"{n:032x}"] * 3
                assert [item.trace_id for item in page.items] == expected, (where, page.items)
            groups = reader.breakdown("tool", variant=value).groups
            assert [(g.value, g.passed, g.failed, g.skipped) for g in groups] == [(value, 1, 1, 1)]
            assert reader.sessions(SessionFilter(service=value, evaluator=value), 10).items == []
            assert reader.session_of_trace(value) is None and reader.trace(value) is None
            now = time.time()
            where_sig = SignatureFilter(since=now - 60, until=now + 60, service=value, agent=value, variant=value)
            assert reader.signatures(where_sig, 10, None, now, 60.0).items == []
        assert len(reader.results(ResultFilter(), 100).items) == 3 * (1 + len(HOSTILE))
        assert {g.value for g in reader.breakdown("service").groups} == {"plain", *HOSTILE}
    finally:
        reader.close()
    assert backend.scalar("SELECT COUNT(*) FROM results") == 2 * (1 + len(HOSTILE))  # nothing dropped
