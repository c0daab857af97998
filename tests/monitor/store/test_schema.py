"""The SQLite store's schema on opening: migrated from the unversioned schema keeping its rows, a current database
opened without a lock, a newer one refused, processes opening a new file together (the chain itself, on both
databases: test_migrations.py)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest

from monitor.review.models import ResultFilter
from monitor.review.of_store import reader_of
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store import schema
from monitor.store import sqlite as store_module
from monitor.store.migrate import chain
from monitor.store.schema import SCHEMA_VERSION, StoreSchemaError
from monitor.store.sqlite import ResultStore
from tests.support.backends import Backend, sqlite_backend
from tests.support.legacy_schema import BASELINE
from tests.support.store_builders import detail, outcome, row

# The schema exactly as the store created it before versioning (user_version 0): the frozen baseline.
UNVERSIONED = ";\n".join(BASELINE) + ";\n"
T1, T2 = "1" * 32, "2" * 32


def unversioned_store(path: Path, *, with_passed: bool = True) -> float:
    """A database as the store wrote it before versioning: two traces, a failure, a skip, packed passing results
    and (older still) a passing result with a row of its own. Returns the rows' time."""
    now = time.time() - 60
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        ddl = UNVERSIONED if with_passed else UNVERSIONED.replace(",\n    passed TEXT\n)", "\n)")
        db.executescript(ddl)
        columns = "trace_id, created_at, service, input, output, span_count, duration_ms, has_errors"
        packed = '[["latency","trace",null,null,null,1.0,"fast","{}"]]'
        if with_passed:
            db.execute(f"INSERT INTO traces ({columns}, passed) VALUES (?,?,?,?,?,?,?,?,?)",
                       (T1, now, "shop", "question", "answer", 4, 12.5, 1, packed))  # fmt: skip
        else:
            db.execute(f"INSERT INTO traces ({columns}) VALUES (?,?,?,?,?,?,?,?)",
                       (T1, now, "shop", "question", "answer", 4, 12.5, 1))  # fmt: skip
        db.execute(f"INSERT INTO traces ({columns}) VALUES (?,?,?,?,?,?,?,?)", (T2, now, "bank", None, None, 1, 1.0, 0))
        insert = (
            "INSERT INTO results (created_at, trace_id, service, span_id, agent, model, evaluator, level, score,"
            " passed, skip_reason, explanation, details) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
        )
        db.execute(insert, (now, T1, "shop", None, None, None, "error_free", "trace", 0.0, 0, None, "2 errors", None))
        db.execute(
            insert, (now, T1, "shop", None, None, None, "gt", "trace", None, None, "needs_ground_truth", "", None)
        )
        db.execute(insert, (now, T2, "bank", "ab" * 8, "a1", "m1", "tone", "llm", 0.9, 1, None, "polite", None))
    return now


def objects(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return {name: sql for name, sql in db.execute("SELECT name, sql FROM sqlite_master")}


def pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as db:
        return db.execute(f"PRAGMA {name}").fetchone()[0]


@pytest.mark.parametrize("with_passed", [True, False], ids=["unversioned", "before-packing"])
def test_an_unversioned_database_is_migrated_keeping_its_rows(tmp_path: Path, with_passed: bool) -> None:
    path = tmp_path / "old.db"
    then = unversioned_store(path, with_passed=with_passed)
    assert pragma(path, "user_version") == 0
    store = ResultStore(path)
    assert store.available and pragma(path, "user_version") == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        columns = {r[1] for r in db.execute("PRAGMA table_info(traces)")}
    assert {"passed", "agents", "models", "tools", "detail", "variant"} <= columns
    assert {"results_time", "results_passing", "results_trace", "traces_time", "traces_variant"} <= set(objects(path))
    assert "results_failing_time" not in objects(path)
    reader = reader_of(store)
    items = reader.results(ResultFilter(), 10).items
    got = {(i.trace_id, i.evaluator, i.outcome, i.evaluated_at) for i in items}
    assert {i.variant for i in items} == {""}
    expected = {(T1, "error_free", "fail", then), (T1, "gt", "skip", then), (T2, "tone", "pass", then)}
    assert got == (expected | {(T1, "latency", "pass", then)} if with_passed else expected)
    detail = reader.trace(T1)
    assert detail is not None and detail.steps == [] and detail.summary.agents == []
    assert (detail.summary.service, detail.summary.input, detail.summary.span_count) == ("shop", "question", 4)
    assert [r.outcome for r in detail.results] == ["fail", "skip", "pass"][: 3 if with_passed else 2]
    assert reader.results(ResultFilter(outcome="pass", agent="a1"), 10).items[0].model == "m1"
    assert reader.breakdown("service").groups[0].value == "shop"
    store.write([outcome("3" * 32, row("a", False))])  # and the migrated database takes new rows
    assert store.count("traces") == 3
    store.close()
    assert pragma(path, "auto_vacuum") == 0  # an old file keeps its vacuum mode (docs: VACUUM to shrink it)


def test_opening_a_current_database_again_changes_and_waits_for_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.db"
    ResultStore(path).close()
    before = objects(path)
    assert pragma(path, "user_version") == SCHEMA_VERSION and pragma(path, "auto_vacuum") == 2  # incremental
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(schema, "BUSY_TIMEOUT_SECONDS", 0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing: opening must not need the write lock
    try:
        again = ResultStore(path)
        assert again.available
        again.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert objects(path) == before and pragma(path, "user_version") == SCHEMA_VERSION


def test_a_database_from_a_newer_release_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    ResultStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    message = f"has result store schema version {SCHEMA_VERSION + 1}, newer than this agent-monitor knows"
    with pytest.raises(StoreSchemaError, match=message):
        ResultStore(path)
    with pytest.raises(StoreSchemaError, match=message):
        SQLiteReviewReader.open(path)
    assert pragma(path, "user_version") == SCHEMA_VERSION + 1  # left as it was


def _open_and_write(path: str, n: int) -> None:
    store = ResultStore(path, prune=False)
    store.write([outcome(f"{n:032x}", row("a", False))])
    assert store.available
    store.close()


@pytest.mark.integration
def test_processes_opening_a_new_database_together_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "new" / "r.db"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_open_and_write, args=(str(path), n)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * 6
    assert pragma(path, "user_version") == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 6
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(chain().head,)]


def test_a_version_1_database_gains_the_poll_checkpoint_tables_and_keeps_its_rows(tmp_path: Path) -> None:
    backend = sqlite_backend(tmp_path)
    backend.at_version(1, [outcome("1" * 32, row("a", False))])
    assert not {"poll_seen", "poll_checkpoints"} & set(objects(Path(backend.location)))
    store = backend.store()
    assert backend.schema_version() == SCHEMA_VERSION and store.count("traces") == 1
    store.transaction(lambda db: db.execute("INSERT INTO poll_seen VALUES ('s', 't', 1.0)"))
    assert store.transaction(lambda db: db.execute("SELECT COUNT(*) FROM poll_checkpoints").fetchone()[0]) == 0
    store.close()


def test_a_version_2_database_gains_the_variant_column_and_keeps_its_rows(backend: Backend) -> None:
    """On both databases: version 3 adds `traces.variant` ('' for every row already there) and its index."""
    backend.at_version(
        2,
        [
            outcome(T1, row("a", False), row("b", True), service="shop", detail=detail(("planner",))),
            outcome(T2, row("a", True), row("c", None, "error"), service="bank"),
        ],
    )
    assert backend.schema_version() == 2 and "variant" not in backend.trace_columns()
    unmigrated = backend.reader()  # the CLI reads an older database as it is
    assert len(unmigrated.results(ResultFilter(variant=""), 10).items) == 4
    assert unmigrated.results(ResultFilter(variant="1.5"), 10).items == []
    unmigrated.close()  # type: ignore[attr-defined]
    store = backend.store()
    assert store.available and backend.schema_version() == SCHEMA_VERSION >= 3
    assert "variant" in backend.trace_columns() and "traces_variant" in backend.indexes()
    assert backend.rows("SELECT trace_id, variant FROM traces ORDER BY trace_id") == [(T1, ""), (T2, "")]
    reader = reader_of(store)
    kept = {(i.trace_id, i.evaluator, i.outcome, i.variant) for i in reader.results(ResultFilter(), 10).items}
    assert kept == {(T1, "a", "fail", ""), (T1, "b", "pass", ""), (T2, "a", "pass", ""), (T2, "c", "skip", "")}
    assert len(reader.results(ResultFilter(variant=""), 10).items) == 4
    detail_1 = reader.trace(T1)
    assert detail_1 is not None and detail_1.summary.variant == "" and detail_1.summary.agents == ["planner"]
    store.write([outcome("3" * 32, row("a", False), variant="1.5")])  # and new rows have their variant
    assert [i.trace_id for i in reader.results(ResultFilter(variant="1.5"), 10).items] == ["3" * 32]
    groups = [(g.value, g.passed, g.failed, g.skipped) for g in reader.breakdown("variant").groups]
    assert groups == [("", 2, 1, 1), ("1.5", 0, 1, 0)]
    store.close()


def test_a_version_3_database_gains_the_signature_table_and_column_and_keeps_its_rows(backend: Backend) -> None:
    """On both databases: version 4 adds `signatures` (empty) and `results.signature` (NULL for every row already
    there) with its index; the rows written before are read as they were."""
    backend.at_version(3, [outcome(T1, row("a", False), row("b", True), service="shop")])
    assert backend.schema_version() == 3
    store = backend.store()
    assert store.available and backend.schema_version() == SCHEMA_VERSION >= 4
    assert {"results_signature", "signatures_last_seen", "signatures_evaluator"} <= backend.indexes()
    assert backend.scalar("SELECT COUNT(*) FROM signatures") == 0
    assert backend.rows("SELECT evaluator, signature FROM results ORDER BY evaluator") == [("a", None)]
    kept = {(i.trace_id, i.evaluator, i.outcome) for i in reader_of(store).results(ResultFilter(), 10).items}
    assert kept == {(T1, "a", "fail"), (T1, "b", "pass")}
    store.close()


def test_a_version_7_database_gains_the_open_session_tables_and_keeps_its_rows(tmp_path: Path) -> None:
    """SQLite version 8 adds `open_sessions` and `session_turns` (empty) to an existing file: the rows written
    before are read as they were, and open sessions are then kept in it."""
    from monitor.store import open_sessions_sqlite as tables
    from tests.monitor.sessions.test_session_tracker import turn, wire

    backend = sqlite_backend(tmp_path)
    backend.at_version(7, [outcome(T1, row("a", False), service="shop")])
    assert backend.schema_version() == 7
    assert not {"open_sessions", "session_turns"} & set(objects(Path(backend.location)))
    store = backend.store()
    assert store.available and backend.schema_version() == SCHEMA_VERSION >= 8
    assert {"open_sessions_waiting", "open_sessions_completed"} <= backend.indexes()
    assert store.count("traces") == 1 and backend.rows("SELECT evaluator FROM results") == [("a",)]
    arrived = store.transaction(lambda db: tables.arrive(db, [wire("s", turn(1))], "here", 10))
    assert arrived.kept == 1
    store.close()
    assert backend.rows("SELECT session_id, turns, completed_at FROM open_sessions") == [("s", 1, None)]
