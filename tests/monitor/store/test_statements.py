"""Statements written once with SQLAlchemy Core run on sqlite3 and compile for psycopg with bound parameters."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.schema import CreateTable

from monitor.store import statements
from monitor.store.sql_functions import trace_row_key
from monitor.store.statements import POSTGRESQL, SQLITE, Statement, execute, executemany, scalar
from monitor.store.tables import METADATA, poll_checkpoints, traces

_INSERT = Statement(sa.insert(traces).values(trace_id=sa.bindparam("trace_id"), created_at=sa.bindparam("at")))
_NEWEST = Statement(
    sa.select(trace_row_key(), traces.c.trace_id)
    .where(traces.c.created_at >= sa.bindparam("since"))
    .order_by(trace_row_key().desc())
    .limit(sa.bindparam("n"))
)
_AMONG = Statement(sa.select(sa.func.count()).where(traces.c.trace_id.in_(sa.bindparam("ids", expanding=True))))


def _database() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    for table in METADATA.sorted_tables:
        db.execute(str(CreateTable(table).compile(dialect=statements.DIALECTS[SQLITE])))
    return db


def test_statements_run_on_sqlite_with_bound_parameters() -> None:
    db = _database()
    executemany(db, _INSERT, [{"trace_id": "a", "at": 1.0}, {"trace_id": "b'; DROP TABLE traces; --", "at": 2.0}])
    assert execute(db, _NEWEST, {"since": 0.0, "n": 5}).fetchall() == [(2, "b'; DROP TABLE traces; --"), (1, "a")]
    assert scalar(db, _AMONG, {"ids": ["a", "b'; DROP TABLE traces; --", "c"]}) == 2
    assert scalar(db, _AMONG, {"ids": ["a"]}) == 1


def test_postgresql_sql_is_psycopg_named_parameters_and_its_own_row_key() -> None:
    sql = _NEWEST.sql(POSTGRESQL)
    assert "%(since)s" in sql and "%(n)s" in sql and "traces.id" in sql and "rowid" not in sql
    assert "?" not in sql and "::" not in sql  # no casts: the server types parameters from their use
    assert "traces.rowid" in _NEWEST.sql(SQLITE) and ":since" in _NEWEST.sql(SQLITE)


def test_an_upsert_is_written_once_for_both_databases() -> None:
    values = insert(poll_checkpoints).values(
        source=sa.bindparam("source"), mark=sa.bindparam("mark"), updated_at=sa.bindparam("at")
    )
    upsert = Statement(values.on_conflict_do_update(index_elements=["source"], set_={"mark": values.excluded.mark}))
    for dialect in (SQLITE, POSTGRESQL):
        assert "ON CONFLICT (source) DO UPDATE SET mark = excluded.mark" in upsert.sql(dialect)
    db = _database()
    execute(db, upsert, {"source": "s", "mark": 1.0, "at": 0.0})
    execute(db, upsert, {"source": "s", "mark": 2.0, "at": 0.0})
    assert db.execute("SELECT source, mark FROM poll_checkpoints").fetchall() == [("s", 2.0)]
