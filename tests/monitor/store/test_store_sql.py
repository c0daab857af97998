"""Issue 40 item 1, the write side: every statement of the store's writes is a SQLAlchemy Core construct compiled
for the databases it runs on (and valid against the latest schema of each), rows go in as the tuples the writer
packs, and a failure is told by its type: a review that conflicts with another (a unique index), a SQLite database
busy past its timeout, a PostgreSQL connection cut by its deadline."""

from __future__ import annotations

import asyncio
import importlib
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from monitor.store import errors, reviews, schema, signatures
from monitor.store import sqlite as sqlite_store
from monitor.store.health import StoreHealth
from monitor.store.postgres import connection as pg_connection
from monitor.store.postgres import deadline
from monitor.store.postgres.deadline import DeadlineExceeded
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.reviews import ResultKey, ReviewInput
from monitor.store.sqlite import ResultStore
from monitor.store.statements import POSTGRESQL, SQLITE, RowStatement, Statement, execute_row, executemany_rows
from monitor.store.tables import results, traces
from monitor.web.review_writer import Conflict, ReviewWriter
from tests.support.backends import Backend
from tests.support.store_builders import outcome, row

SHARED = (
    "monitor.store.writer", "monitor.store.row_writes", "monitor.store.session_writes", "monitor.store.pending_rows",
    "monitor.store.signatures", "monitor.store.retention", "monitor.store.reviews", "monitor.store.poll_checkpoints",
)  # fmt: skip
SQLITE_ONLY = ("monitor.store.sqlite", "monitor.store.open_sessions_sqlite")
POSTGRESQL_ONLY = (
    "monitor.store.postgres.store", "monitor.store.postgres.retention", "monitor.store.postgres.open_sessions",
    "monitor.store.postgres.pending_owners", "monitor.store.postgres.judge_limits", "monitor.store.postgres.leases",
    "monitor.store.postgres.connection",
)  # fmt: skip
AnyStatement = Statement | RowStatement


def _statements_of(module: str) -> dict[str, AnyStatement]:
    """The module's statements: its module-level Statements and RowStatements (those in dicts too)."""
    found: dict[str, AnyStatement] = {}
    for name, value in vars(importlib.import_module(module)).items():
        values = value.items() if isinstance(value, dict) else [("", value)]
        for key, item in values:
            if isinstance(item, Statement | RowStatement):
                found[f"{module}.{name}{f'[{key}]' if key else ''}"] = item
    return found


def _every_statement(dialect: str) -> dict[str, AnyStatement]:
    modules = SHARED + (SQLITE_ONLY if dialect == SQLITE else POSTGRESQL_ONLY)
    found = {name: s for module in modules for name, s in _statements_of(module).items()}
    for rows in (1, 2, signatures.ROWS_PER_STATEMENT):
        found[f"signatures.upsert_statement({rows})"] = signatures.upsert_statement(rows)
    filters = ("evaluator", "trace_id", "reviewer", "agreement", "since")
    for newest_first in (False, True):
        found[f"reviews._filtered(all, {newest_first})"] = reviews._filtered((*filters, "limit"), newest_first)
    return found


def _nulls(statement: AnyStatement, dialect: str) -> tuple[str, Any]:
    """The statement's SQL on `dialect` and NULL for each of its parameters (an IN list of one NULL)."""
    if isinstance(statement, RowStatement):
        return statement.sql(dialect), statement.compiled(dialect).row((None,) * len(statement.layout))
    compiled = statement.compiled(dialect)
    binds = compiled.compiled.binds  # type: ignore[attr-defined]
    params = {bind.key: [None] if bind.expanding else None for bind in binds.values() if bind.value is None}
    return compiled.bind(params)


def test_every_module_of_the_write_side_has_its_statements_and_each_compiles_for_its_databases() -> None:
    for module in SHARED + SQLITE_ONLY + POSTGRESQL_ONLY:
        assert _statements_of(module), f"{module} has no statement (its SQL is not in statements.py's form?)"
    for dialect, foreign in ((SQLITE, ("%s", "%(")), (POSTGRESQL, ("?", ":name"))):
        for name, statement in _every_statement(dialect).items():
            sql = statement.sql(dialect)
            assert not any(mark in sql for mark in foreign), f"{name} on {dialect}: {sql}"


def test_every_sqlite_statement_is_valid_against_the_latest_schema(tmp_path: Path) -> None:
    ResultStore(tmp_path / "r.db").close()
    db = sqlite3.connect(tmp_path / "r.db")
    for name, statement in _every_statement(SQLITE).items():
        sql, params = _nulls(statement, SQLITE)
        try:
            db.execute("EXPLAIN " + sql, params).fetchall()  # prepared against the tables, never run
        except sqlite3.Error as exc:
            pytest.fail(f"{name}: {exc}: {sql}")
    db.close()


def test_every_postgresql_statement_is_valid_against_the_latest_schema(postgres_url: str) -> None:
    PostgresResultStore(postgres_url).close()
    with psycopg.connect(postgres_url) as db:
        for name, statement in _every_statement(POSTGRESQL).items():
            sql, params = _nulls(statement, POSTGRESQL)
            try:
                with db.transaction():  # planned against the tables with every parameter NULL, never run
                    db.execute("EXPLAIN " + sql, params)
            except psycopg.Error as exc:
                pytest.fail(f"{name}: {exc}: {sql}")


# --- rows as packed: tuples in a layout ---------------------------------------------------------------------
_t = traces.c
_REORDERED = RowStatement(
    sa.insert(traces).values(trace_id=sa.bindparam("id"), created_at=sa.bindparam("at"), service=sa.bindparam("s")),
    ("s", "at", "id"),  # the row's order, not the table's
)
_TWICE = RowStatement(
    sa.update(traces)
    .values(service=sa.bindparam("s"))
    .where(_t.trace_id == sa.bindparam("id"), _t.service != sa.bindparam("s")),
    ("id", "s"),
)
_LIMITED = RowStatement(  # SQLite's LIMIT comes with an OFFSET Core binds itself
    sa.delete(traces).where(
        _t.trace_id.in_(sa.select(_t.trace_id).where(_t.created_at < sa.bindparam("before")).limit(sa.bindparam("n")))
    ),
    ("before", "n"),
)


def test_row_statements_take_rows_in_their_layout_whatever_order_the_sql_wants(tmp_path: Path) -> None:
    ResultStore(tmp_path / "r.db").close()
    db = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    executemany_rows(db, _REORDERED, [("a", 1.0, "t1"), ("b", 2.0, "t2"), ("c", 3.0, "t'); DROP TABLE traces; --")])
    assert execute_row(db, _TWICE, ("t1", "z")).rowcount == 1 and execute_row(db, _TWICE, ("t1", "z")).rowcount == 0
    assert execute_row(db, _LIMITED, (2.5, 5)).rowcount == 2
    assert db.execute("SELECT trace_id, service FROM traces").fetchall() == [("t'); DROP TABLE traces; --", "c")]
    assert _REORDERED.compiled(SQLITE).order is not None and _TWICE.compiled(POSTGRESQL).row(("i", "s")) == (
        "s", "i", "s",
    )  # fmt: skip
    with pytest.raises(ValueError, match="not in the layout"):
        RowStatement(sa.insert(traces).values(trace_id=sa.bindparam("id")), ("other",)).compiled(SQLITE)
    db.close()


def test_the_hot_inserts_pass_rows_on_as_packed() -> None:
    """The trace and session inserts take the packed tuples as they are (nothing per row)."""
    from monitor.store.postgres.store import INSERT_TRACE as PG_INSERT_TRACE
    from monitor.store.session_writes import UPSERT_SESSION

    for dialect, statement in ((SQLITE, sqlite_store.INSERT_TRACE), (POSTGRESQL, PG_INSERT_TRACE),
                               (SQLITE, UPSERT_SESSION), (POSTGRESQL, UPSERT_SESSION)):  # fmt: skip
        assert statement.compiled(dialect).order is None, statement


# --- failures by type ---------------------------------------------------------------------------------------
def _key_taken(backend: Backend) -> BaseException:
    """The error of a row whose key is taken, from the backend's own driver."""
    sql = "INSERT INTO poll_checkpoints (source, mark, state, updated_at) VALUES (?, NULL, NULL, 0)"
    backend.execute(sql, ("s",))
    try:
        backend.execute(sql, ("s",))
    except (sqlite3.Error, psycopg.Error) as exc:
        return exc
    raise AssertionError("a second row with the same key was taken")


def test_a_unique_violation_is_told_by_type_not_by_message(backend: Backend) -> None:
    backend.store().close()  # the schema
    assert errors.is_unique_violation(_key_taken(backend))
    try:
        backend.execute("INSERT INTO poll_checkpoints (source, updated_at) VALUES (?, NULL)", ("t",))
    except (sqlite3.Error, psycopg.Error) as exc:
        assert not errors.is_unique_violation(exc)  # NOT NULL: a refused row, not a conflict
    else:
        raise AssertionError("a NULL updated_at was taken")
    assert not errors.is_unique_violation(RuntimeError("UNIQUE constraint failed: reviews_in_force"))
    assert not errors.is_unique_violation(sqlite3.OperationalError("UNIQUE constraint failed: reviews"))


def test_a_review_conflicting_with_another_is_a_conflict_on_both_databases(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another review of the same result gets in between this one's supersede and its insert (what a concurrent
    writer does): the unique index of the reviews in force refuses this one, which is told as a Conflict."""
    store = backend.store(results="all")
    store.write([outcome("ab" * 16, row("faithful", False))])
    snapshot = reviews.task_snapshot

    def racing(db: Any, trace_id: str) -> Any:
        other = ("r-other", trace_id, "faithful", "trace", "", None, "svc", 0, 0.0, None, "agree", None, None, None,
                 "carol", time.time(), None, None)  # fmt: skip
        execute_row(db, reviews._INSERT, other)
        return snapshot(db, trace_id)

    monkeypatch.setattr(reviews, "task_snapshot", racing)
    writer = ReviewWriter(store)
    review = ReviewInput(ResultKey("ab" * 16, "faithful", "trace", ""), "disagree", "alice")
    try:
        with pytest.raises(Conflict, match="send it again"):
            asyncio.run(writer.review(review))
        assert store.health.available  # a conflict is the reviewer's to send again, not a store failure
        monkeypatch.setattr(reviews, "task_snapshot", snapshot)
        assert asyncio.run(writer.review(review)).reviewer == "alice"  # sent again: in force
    finally:
        store.close()
    assert backend.rows("SELECT reviewer FROM reviews WHERE superseded_at IS NULL") == [("alice",)]


def test_a_sqlite_database_busy_past_its_timeout_loses_its_rows_as_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_SECONDS", 0.1)
    lost: dict[str, int] = {}
    health = StoreHealth(on_lost=lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n))
    store = ResultStore(tmp_path / "r.db", prune=False, health=health)
    holder = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        store.write([outcome("1" * 32, row("a", False))])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()
    assert lost == {"timeout": 1}
    assert not errors.is_busy(sqlite3.OperationalError("database is locked"))  # a message alone tells nothing


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(pg_connection, "DEADLINE_GRACE_SECONDS", 0.3)
    yield


def test_a_postgresql_statement_cut_by_its_deadline_is_a_timeout(postgres_url: str, short_deadline: None) -> None:
    store = PostgresResultStore(postgres_url, timeouts=pg_connection.Timeouts(statement=0))  # no server-side bound
    try:
        with pytest.raises(DeadlineExceeded) as cut, store._connection() as db:
            db.execute("SELECT pg_sleep(3)")
        assert store._lost_reason(cut.value) == "timeout"
        assert store._lost_reason(psycopg.OperationalError("server closed the connection unexpectedly")) == "failed"
    finally:
        store.close()


def test_the_thread_woken_by_a_cut_already_sees_its_lease_expired(monkeypatch: pytest.MonkeyPatch) -> None:
    """The waiting thread wakes the instant the socket is shut down: `expired` must be true before that, or the
    cut reads as a lost connection ("failed", the CI flake of stop 52)."""
    ours, server = socket.socketpair()
    seen: list[bool] = []
    conn = SimpleNamespace(closed=False, pgconn=SimpleNamespace(socket=ours.fileno()))
    deadlines = deadline.Deadlines()
    lease = deadline.Lease(deadlines, 0, conn)

    class SlowCut(socket.socket):
        def shutdown(self, how: int) -> None:
            super().shutdown(how)
            time.sleep(0.2)  # the woken thread runs before the cutter goes on: it sees what was set before

    monkeypatch.setattr(deadline, "socket", SimpleNamespace(socket=SlowCut, SHUT_RDWR=socket.SHUT_RDWR))

    def wait() -> None:
        ours.recv(1)  # as libpq waits for the answer; b"" once the socket is shut down
        seen.append(lease.expired)

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        time.sleep(0.05)
        deadlines._cut(lease)
        waiter.join(timeout=5)
        assert seen == [True] and deadlines.cut == 1
    finally:
        ours.close()
        server.close()


def test_results_keep_nan_scores_as_null_and_flags_as_integers(backend: Backend) -> None:
    store = backend.store(results="all")
    nan = row("a", False)._replace(score=float("nan"))
    store.write([outcome("1" * 32, nan, row("b", True), row("c", None, "error"))])
    store.close()
    got = backend.rows("SELECT evaluator, score, passed FROM results ORDER BY evaluator")
    assert got == [("a", None, 0), ("c", None, None)]
    assert schema.TRACE_COLUMNS[0] == "trace_id" and results.c.score.nullable
