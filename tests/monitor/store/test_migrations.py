"""The store's one migration chain (monitor/store/migrations) on both databases: a fresh database gets the schema
the earlier releases' hand-written chains made (tests/fixtures/store_schema, captured from them), a database an
earlier release left at any version is upgraded to it with its rows kept, the tables the queries are written
against (store/tables.py) are that schema, and a database from a newer release is refused."""

from __future__ import annotations

import ast
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.pool import StaticPool

from monitor.preflight import check_store_path
from monitor.review.postgres_reader import PostgresReviewReader
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store import migrate, tables
from monitor.store.migrate import MIGRATIONS, chain
from monitor.store.postgres.connection import redacted
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.schema import SCHEMA_VERSION, StoreSchemaError
from monitor.store.sqlite import ResultStore
from tests.support.legacy_schema import BASELINE, LATEST, postgres_at, sqlite_at
from tests.support.store_schema import fixture, postgres_schema, sqlite_schema, without_tables


def _sqlite(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_the_frozen_legacy_chains_make_the_captured_schema(tmp_path: Path, postgres_url: str) -> None:
    """The fixtures were captured from the code before the chain (6c02950); its frozen copy makes them still (but
    the tables added since, at the same legacy version)."""
    db = sqlite3.connect(tmp_path / "r.db")
    sqlite_at(db, LATEST)
    assert sqlite_schema(db) == without_tables(fixture("sqlite"))
    db.close()
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        postgres_at(pg, LATEST, judge_limits=True)
        assert postgres_schema(pg) == without_tables(fixture("postgresql"))


def test_a_new_sqlite_database_gets_the_schema_the_earlier_releases_made(tmp_path: Path) -> None:
    db = _sqlite(tmp_path / "r.db")
    migrate.upgrade(db, "r.db")
    assert sqlite_schema(db) == fixture("sqlite")  # user_version 9 included
    assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(chain().head,)]


def test_a_new_postgresql_database_gets_the_schema_the_earlier_releases_made(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        migrate.upgrade(db, postgres_url)
        assert postgres_schema(db) == fixture("postgresql")  # agent_monitor_schema's versions 1 to 9 included
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(chain().head,)]
        assert db.autocommit  # the store's connection is given back as it was


def test_the_chain_declares_the_legacy_versions_this_release_writes() -> None:
    """Each legacy version 1 to 9 is made by one revision, in order; the head is equivalent to SCHEMA_VERSION."""
    legacy = [chain().legacy[revision] for revision in chain().order]
    assert legacy == sorted(legacy) and legacy[0] == 0
    assert chain().legacy_head == migrate.LEGACY_HEAD == SCHEMA_VERSION == LATEST
    assert [chain().stamp_for(v) for v in range(LATEST + 1)] == [None, *(f"{v:04}" for v in range(1, LATEST + 1))]


def test_the_migrations_are_frozen_code() -> None:
    """A revision is what it was when released: it never imports the project (tables.py follows the latest
    schema), only alembic and sqlalchemy."""
    for path in sorted(MIGRATIONS.rglob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        roots = {name.split(".")[0] for name in imported}
        assert roots <= {"__future__", "alembic", "sqlalchemy"}, f"{path.name} imports {sorted(roots)}"


# --- older databases -------------------------------------------------------------------------------------------
def _value(table: str, column: str, kind: str) -> Any:
    kind = kind.upper()
    if "JSON" in kind:
        return f'["{table}.{column}"]'
    if "INT" in kind:
        return 7
    if "REAL" in kind or "DOUBLE" in kind:
        return 1.5
    return f"{table}.{column}"


def _sqlite_rows(db: sqlite3.Connection) -> dict[str, list[tuple]]:
    names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {t: db.execute(f"SELECT * FROM {t}").fetchall() for t in names if t != "alembic_version"}


def _fill_sqlite(db: sqlite3.Connection) -> dict[str, list[tuple]]:
    """A row in each table (every column set); all rows, per table."""
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        columns = [(row[1], row[2]) for row in db.execute(f"PRAGMA table_info({table})")]
        marks = ", ".join("?" for _ in columns)
        values = tuple(_value(table, name, kind) for name, kind in columns)
        db.execute(f"INSERT INTO {table} ({', '.join(n for n, _ in columns)}) VALUES ({marks})", values)
    return _sqlite_rows(db)


@pytest.mark.parametrize("version", range(LATEST + 1))
def test_a_sqlite_database_an_earlier_release_left_is_upgraded_keeping_its_rows(tmp_path: Path, version: int) -> None:
    db = _sqlite(tmp_path / "r.db")
    sqlite_at(db, version)
    rows = _fill_sqlite(db)
    migrate.upgrade(db, tmp_path / "r.db")  # what the store does on opening it (without its retention after)
    assert sqlite_schema(db) == fixture("sqlite")
    assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(chain().head,)]
    after = _sqlite_rows(db)
    for table, kept in rows.items():  # every row, its columns as they were (those added since after them)
        assert [row[: len(kept[0])] for row in after[table]] == kept, table
    assert set(after) == {line.split()[1] for line in fixture("sqlite").splitlines() if line.startswith("table ")}


def test_a_sqlite_database_from_before_packing_is_upgraded_keeping_its_rows(tmp_path: Path) -> None:
    """The oldest databases have no `traces.passed`: the upgrade adds it with the columns of version 1."""
    db = _sqlite(tmp_path / "r.db")
    sqlite_at(db, 0, baseline=tuple(s.replace(",\n    passed TEXT\n)", "\n)") for s in BASELINE))
    rows = _fill_sqlite(db)
    assert "passed" not in {row[1] for row in db.execute("PRAGMA table_info(traces)")}
    migrate.upgrade(db, "r.db")
    assert sqlite_schema(db) == fixture("sqlite")
    assert [row[:8] for row in _sqlite_rows(db)["traces"]] == rows["traces"]


def _pg_rows(db: psycopg.Connection[Any]) -> dict[str, list[tuple]]:
    sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    names = sorted(n for (n,) in db.execute(sql) if n != "alembic_version")
    return {t: db.execute(f"SELECT * FROM {t}").fetchall() for t in names}  # type: ignore[misc]


def _fill_postgres(db: psycopg.Connection[Any]) -> dict[str, list[tuple]]:
    sql = """SELECT table_name, column_name, data_type FROM information_schema.columns
    WHERE table_schema = current_schema() AND is_identity = 'NO' AND table_name <> 'agent_monitor_schema'
    ORDER BY table_name, ordinal_position"""
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, name, kind in db.execute(sql):
        columns.setdefault(table, []).append((name, kind))
    for table, named in columns.items():
        values = tuple(_value(table, name, kind) for name, kind in named)
        marks = ", ".join("%s" for _ in named)
        db.execute(f"INSERT INTO {table} ({', '.join(n for n, _ in named)}) VALUES ({marks})", values)  # type: ignore[arg-type]
    return _pg_rows(db)


@pytest.mark.parametrize("version", range(1, LATEST + 1))
def test_a_postgresql_database_an_earlier_release_left_is_upgraded_keeping_its_rows(
    postgres_url: str, version: int
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        postgres_at(db, version, judge_limits=version == LATEST)  # a version-9 replica made it at its first count
        rows = _fill_postgres(db)
        migrate.upgrade(db, postgres_url)
        assert postgres_schema(db) == fixture("postgresql")
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(chain().head,)]
        after = _pg_rows(db)
    for table, kept in rows.items():
        if table != "agent_monitor_schema":  # its rows of the versions since are added
            assert [row[: len(kept[0])] for row in after[table]] == kept, table
    assert after["agent_monitor_schema"][:version] == rows["agent_monitor_schema"]


# --- tables.py ---------------------------------------------------------------------------------------------------
# What tables.py leaves out on purpose: the indexes no query names (traces' differ between the databases; the
# others serve the databases' own plans: results' time indexes, the oldest databases' passing rows, PostgreSQL's
# first open-session index), PostgreSQL's identity `traces.id` (the insertion order: trace_row_key), and on SQLite
# the judges' limits table (PostgreSQL only). The chain's own `alembic_version` and the legacy marker
# `agent_monitor_schema` are no tables of the store's.
MIGRATIONS_ONLY = frozenset({"results_time", "results_passing", "traces_time", "traces_variant", "open_sessions_idle"})


def _include(dialect: str) -> Callable[..., bool]:
    def include(item: Any, name: str | None, kind: str, reflected: bool, compare_to: Any) -> bool:
        if kind == "table":
            return name not in ("alembic_version", "agent_monitor_schema") and (
                dialect != "sqlite" or name != "judge_limits"
            )
        if kind == "index":
            return not (reflected and compare_to is None and name in MIGRATIONS_ONLY)
        return not (kind == "column" and name == "id" and item.table.name == "traces" and reflected)

    return include


def _differences(url: str, creator: Callable[[], Any]) -> list[Any]:
    engine = sa.create_engine(url, creator=creator, poolclass=StaticPool)
    with engine.connect() as conn:
        dialect = conn.dialect.name
        context = MigrationContext.configure(conn, opts={"include_object": _include(dialect), "compare_type": True})
        found = compare_metadata(context, tables.METADATA)
    flat = [d for diff in found for d in (diff if isinstance(diff, list) else [diff])]
    if dialect == "sqlite":
        primary = {(t.name, c.name) for t in tables.METADATA.tables.values() for c in t.primary_key}
        flat = [
            d
            for d in flat
            # a non-integer PRIMARY KEY column of SQLite takes NULL unless declared NOT NULL (the store never
            # writes one); tables.py's Double is declared REAL or DOUBLE PRECISION (both REAL to SQLite)
            if not (d[0] == "modify_nullable" and (d[2], d[3]) in primary)
            and not (d[0] == "modify_type" and isinstance(d[5], sa.REAL) and isinstance(d[6], sa.Double))
        ]
    return flat


def test_the_tables_the_queries_use_are_the_migrated_sqlite_schema(tmp_path: Path) -> None:
    """Tables, columns, their types and nullability, and the indexes tables.py declares agree (not the server
    defaults: tables.py leaves PostgreSQL's identity `results.id` to the migrations)."""
    path = tmp_path / "r.db"
    ResultStore(path).close()
    assert _differences("sqlite://", lambda: sqlite3.connect(path)) == []


def test_the_tables_the_queries_use_are_the_migrated_postgresql_schema(postgres_url: str) -> None:
    PostgresResultStore(postgres_url).close()
    assert _differences("postgresql+psycopg://", lambda: psycopg.connect(postgres_url)) == []


# --- together, and newer ---------------------------------------------------------------------------------------
def test_threads_upgrading_an_older_sqlite_database_together_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        sqlite_at(db, 4)
    start, failed = threading.Barrier(4), []

    def open_one() -> None:
        db = _sqlite(path)
        db.execute("PRAGMA busy_timeout = 30000")
        start.wait()
        try:
            migrate.upgrade(db, path)
        except Exception as exc:  # pragma: no cover - what the test is about
            failed.append(exc)
        db.close()

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failed == []
    assert sqlite_schema(_sqlite(path)) == fixture("sqlite")


def test_replicas_upgrading_an_older_postgresql_database_together_migrate_it_once(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        postgres_at(db, 4)
    start, stores = threading.Barrier(4), []

    def open_one() -> None:
        start.wait()
        stores.append(PostgresResultStore(postgres_url, pool_size=1))

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(stores) == 4 and all(store.available for store in stores)
    for store in stores:
        store.close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        assert postgres_schema(db) == fixture("postgresql")
        marks = db.execute("SELECT applied_by FROM agent_monitor_schema WHERE version > 4").fetchall()
    assert len(marks) == 5 and len(set(marks)) == 1  # versions 5 to 9 marked once, by one replica


def test_a_postgresql_database_at_the_head_is_opened_without_the_migration_lock(postgres_url: str) -> None:
    PostgresResultStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as holder, psycopg.connect(postgres_url) as db:
        holder.execute("SELECT pg_advisory_lock(%s)", (migrate.MIGRATION_LOCK,))  # a replica migrating
        db.execute("SET lock_timeout = '1s'")
        db.commit()
        db.autocommit = True
        migrate.upgrade(db, postgres_url)  # would wait for the lock, and fail after 1 s
        assert db.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def _unknown_revision(execute: Callable[[str], Any]) -> None:
    execute("UPDATE alembic_version SET version_num = 'ffff0a1b2c3d'")


def test_a_sqlite_database_at_an_unknown_revision_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    ResultStore(path).close()
    with sqlite3.connect(path) as db:
        _unknown_revision(db.execute)
    message = f"{path} has result store schema revision 'ffff0a1b2c3d', unknown to this agent-monitor"
    with pytest.raises(StoreSchemaError, match=message):
        ResultStore(path)
    with pytest.raises(StoreSchemaError, match=message):
        SQLiteReviewReader.open(path)
    (problem,) = check_store_path(str(path))  # preflight: a config error, as a newer marker is
    assert problem.startswith(message)
    with sqlite3.connect(path) as db:  # left as it was
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [("ffff0a1b2c3d",)]


def test_a_postgresql_database_at_an_unknown_revision_is_refused_naming_it(postgres_url: str) -> None:
    PostgresResultStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        _unknown_revision(db.execute)
    message = f"{redacted(postgres_url)} has result store schema revision 'ffff0a1b2c3d', unknown"
    with pytest.raises(StoreSchemaError, match=message):
        PostgresResultStore(postgres_url)
    with pytest.raises(StoreSchemaError, match=message):
        PostgresReviewReader.open(postgres_url)


def test_an_upgrade_is_one_line_of_ours_and_a_new_database_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Alembic's own INFO lines (a line per plugin and per step) stay out of the daemon's log."""
    caplog.set_level(logging.INFO)
    old = _sqlite(tmp_path / "old.db")
    sqlite_at(old, 4)
    migrate.upgrade(old, "old.db")
    migrate.upgrade(_sqlite(tmp_path / "new.db"), "new.db")
    lines = [(record.name, record.getMessage()) for record in caplog.records if record.levelno >= logging.INFO]
    assert lines == [
        (migrate.__name__, f"the result store old.db: schema upgraded from 0004 to revision {chain().head}")
    ]
