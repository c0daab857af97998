"""The two result store databases behind one test interface, so that the same tests hold both to one behaviour:
SQLite (a file in the test's directory) and PostgreSQL (a fresh database on the session's real server)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import bindparam, insert

from monitor.review.models import ReviewReader
from monitor.review.open_reader import open_store_reader
from monitor.store import schema
from monitor.store.packing import Written, pack
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.row_writes import RESULT_ROW
from monitor.store.sql_functions import stored_flag, stored_number
from monitor.store.sqlite import ResultStore
from monitor.store.statements import POSTGRESQL, SQLITE, RowStatement
from monitor.store.tables import results as results_table
from monitor.store.writer import QueuedResultStore
from tests.support.legacy_schema import SCHEMA_TABLE, postgres_at, sqlite_at


class Backend:
    """`location`: the store's path or URL; `store(...)`: a store there; `rows`/`scalar`/`execute`: SQL on the
    database behind the store's back (`?` placeholders)."""

    def __init__(self, name: str, location: str) -> None:
        self.name = name
        self.location = location

    def store(self, **options: Any) -> QueuedResultStore:
        if self.name == "postgres":
            return PostgresResultStore(self.location, **options)
        return ResultStore(self.location, **options)

    def reader(self) -> ReviewReader:
        """A reader opened the way the CLI opens one (`--store`)."""
        return open_store_reader(self.location)

    def execute(self, sql: str, params: tuple = ()) -> None:
        if self.name == "postgres":
            with psycopg.connect(self.location, autocommit=True) as db:
                db.execute(sql.replace("?", "%s"), params)
        else:
            with sqlite3.connect(self.location) as db:
                db.execute(sql, params)

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        if self.name == "postgres":
            with psycopg.connect(self.location, autocommit=True) as db:
                return db.execute(sql.replace("?", "%s"), params).fetchall()
        with sqlite3.connect(self.location) as db:
            return db.execute(sql, params).fetchall()

    def scalar(self, sql: str, params: tuple = ()) -> Any:
        return self.rows(sql, params)[0][0]

    def at_version(self, version: int, outcomes: Sequence[Written] = ()) -> None:
        """An older release's database: made by that release's migrations (their frozen copy, legacy_schema.py)
        up to `version`, then `outcomes` written as that release wrote them (the rows packed by the store, without
        the columns that later versions added)."""
        if self.name == "postgres":
            with psycopg.connect(self.location, autocommit=True) as db:
                postgres_at(db, version)
        else:
            with contextlib.closing(sqlite3.connect(self.location)) as db:
                sqlite_at(db, version)
        packed = pack(outcomes, time.time(), failing_only=False)
        present = self.trace_columns()
        kept = [i for i, name in enumerate(schema.TRACE_COLUMNS) if name in present]
        columns = ", ".join(schema.TRACE_COLUMNS[i] for i in kept)
        for values in packed.traces:
            marks = ", ".join("?" for _ in kept)
            self.execute(f"INSERT INTO traces ({columns}) VALUES ({marks})", tuple(values[i] for i in kept))
        # before version 5 no results.session_id (the row's last value), before 4 no results.signature (then last)
        names = RESULT_ROW[: len(RESULT_ROW) - (version < 5) - (version < 4)]
        results = [row[: len(names)] for row in packed.results]
        converted = {"score": stored_number(bindparam("score")), "passed": stored_flag(bindparam("passed"))}
        values = {name: converted.get(name, bindparam(name)) for name in names}
        statement = RowStatement(insert(results_table).inline().values(values), names)
        compiled = statement.compiled(POSTGRESQL if self.name == "postgres" else SQLITE)
        if self.name == "postgres":
            with psycopg.connect(self.location, autocommit=True) as db, db.cursor() as cursor:
                cursor.executemany(compiled.text, compiled.rows(results))
        else:
            with sqlite3.connect(self.location) as db:
                db.executemany(compiled.text, compiled.rows(results))

    def schema_version(self) -> int:
        if self.name == "postgres":
            return int(self.scalar(f"SELECT MAX(version) FROM {SCHEMA_TABLE}"))
        return int(self.scalar("PRAGMA user_version"))

    def indexes(self) -> set[str]:
        if self.name == "postgres":
            return {name for (name,) in self.rows("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
        return {name for (name,) in self.rows("SELECT name FROM sqlite_master WHERE type = 'index'")}

    def trace_columns(self) -> set[str]:
        if self.name == "postgres":
            sql = "SELECT column_name FROM information_schema.columns WHERE table_name = 'traces'"
            return {name for (name,) in self.rows(sql)}
        return {row[1] for row in self.rows("PRAGMA table_info(traces)")}


def sqlite_backend(directory: Path) -> Backend:
    return Backend("sqlite", str(directory / "r.db"))
