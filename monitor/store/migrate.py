"""The result store's schema brought up to date: one Alembic chain (monitor/store/migrations) run on SQLite and on
PostgreSQL alike, on the store's own connection.

`upgrade(db, where)` takes the store's raw connection (sqlite3's, or the psycopg one of a pooled
postgres/connection.Connection) and runs the missing revisions in one transaction, under the database's lock:
SQLite's `BEGIN IMMEDIATE` (processes opening a new file together: one migrates, the others wait and find it done;
the "database is locked" SQLite answers at once when two would deadlock upgrading their locks is retried within
the busy timeout), PostgreSQL's transaction-level advisory lock (replicas starting together migrate once; the
same lock as the releases before the chain, so an older replica and a newer one take turns too). A database
already at the head is opened without a lock or a write: `alembic_version` is read first, with the driver.
SQLAlchemy sees the connection through `_Borrowed`, so that it cannot close it nor add to it.

Refused with StoreSchemaError (the message names the file or the URL): a database from a newer release, whose
`alembic_version` names a revision unknown here, or whose legacy marker is above this release's (below).

**Legacy markers.** Releases before the chain marked the schema version themselves: SQLite in `PRAGMA
user_version`, PostgreSQL in `agent_monitor_schema` (a row per version, with when and by which host and process),
versions 0 to 9. A database with a marker and no `alembic_version` (an older release's) is stamped at the
revision that made its version (0001 to 0009; version 0 runs the idempotent baseline again, as those releases
did) and upgraded, its rows kept. The markers are still written, so that an older release opening an upgraded
database behaves as it did: each revision declares `legacy_version`, the version its schema is equivalent to for
the releases before the chain, and the marker is set to the head's. While the head's tables are what version 9's
were (0010 only adds the judges' limits table, which version 9 made at its first count; 0011 only adds drift's
tables, which no older release reads or writes; 0012 only adds nullable columns to one of them), it is 9: a
rollback to the release before the chain uses the database as it is. A revision that changes what an older
release reads or writes sets it higher, and those releases then refuse the database as "from a newer
release". This release's readers, which never migrate (the review CLI, preflight), check both: the marker, and
the revision being known here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from monitor.store import schema
from monitor.store.schema import StoreSchemaError, check_version

__all__ = [
    "MIGRATION_LOCK",
    "Chain",
    "StoredSchema",
    "alembic_config",
    "chain",
    "refuse_newer",
    "stored_schema",
    "upgrade",
]

log = logging.getLogger(__name__)
# Alembic logs each plugin as it loads and each step it runs, at INFO: one line of ours says what happened.
logging.getLogger("alembic").setLevel(logging.WARNING)

MIGRATIONS = Path(__file__).resolve().with_name("migrations")
VERSION_TABLE = "alembic_version"
LEGACY_TABLE = "agent_monitor_schema"  # PostgreSQL's legacy marker, a row per version
MIGRATION_LOCK = 0x61676D5F73636D61  # pg_advisory_xact_lock key: "agm_scma"
# The legacy version the chain's head is equivalent to (its `legacy_version`; a test holds the two equal): the
# marker written for older releases. A constant, so that SQLite's PRAGMA, which takes no bound parameter, is too.
LEGACY_HEAD = 9
_MARK_SQLITE = f"PRAGMA user_version = {LEGACY_HEAD}"
_LEGACY_MAX = "SELECT MAX(version) FROM agent_monitor_schema"
_REVISION = "SELECT version_num FROM alembic_version"
_CREATE_LEGACY = (
    "CREATE TABLE IF NOT EXISTS agent_monitor_schema (version INTEGER PRIMARY KEY,"
    " applied_at DOUBLE PRECISION NOT NULL, applied_by TEXT NOT NULL)"
)
_INSERT_LEGACY = "INSERT INTO agent_monitor_schema VALUES (%s, %s, %s)"


@dataclass(frozen=True)
class Chain:
    """The revisions in order (base first) and the legacy version each is equivalent to."""

    order: tuple[str, ...]
    legacy: dict[str, int]

    @property
    def head(self) -> str:
        return self.order[-1]

    @property
    def legacy_head(self) -> int:
        return self.legacy[self.head]

    def stamp_for(self, version: int) -> str | None:
        """The revision a database an older release left at legacy `version` is at (None: version 0, whose
        baseline runs again)."""
        if version == 0:
            return None
        return next(revision for revision in self.order if self.legacy[revision] == version)


@functools.cache
def chain() -> Chain:
    from alembic.script import ScriptDirectory

    scripts = list(ScriptDirectory(str(MIGRATIONS)).walk_revisions())[::-1]
    return Chain(tuple(s.revision for s in scripts), {s.revision: int(s.module.legacy_version) for s in scripts})


def alembic_config(connection: Any = None) -> Any:
    """Alembic's Config of the chain (`connection`: the SQLAlchemy Connection env.py runs it on), e.g. for
    `alembic.command.revision(alembic_config(), "message", rev_id="0011")`."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.set_main_option("file_template", "r%%(rev)s_%%(slug)s")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


class StoredSchema(NamedTuple):
    """What a database says of its schema: its Alembic revision (None: none) and its legacy marker (0: none)."""

    revision: str | None
    legacy: int


# The tables as the statement's snapshot sees them: not to_regclass, whose name lookup may still miss a table
# another replica created while this one waited for the lock (a negative cache entry not yet invalidated).
_PG_TABLES = """SELECT relname FROM pg_catalog.pg_class WHERE relname IN (%s, %s) AND relkind IN ('r', 'p')
AND pg_catalog.pg_table_is_visible(oid)"""
_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"


def stored_schema(db: Any) -> StoredSchema:
    """The revision and marker of the database behind `db` (sqlite3 or psycopg, raw), read without a lock."""
    if isinstance(db, sqlite3.Connection):
        legacy = int(db.execute("PRAGMA user_version").fetchone()[0])
        tables = {name for (name,) in db.execute(_SQLITE_TABLES, (VERSION_TABLE,))}
    else:
        tables = {name for (name,) in db.execute(_PG_TABLES, (VERSION_TABLE, LEGACY_TABLE))}
        marker = db.execute(_LEGACY_MAX).fetchone() if LEGACY_TABLE in tables else None
        legacy = int(marker[0] or 0) if marker else 0
    revision = None
    if VERSION_TABLE in tables:
        row = db.execute(_REVISION).fetchone()
        revision = row[0] if row else None
    return StoredSchema(revision, legacy)


def refuse_newer(found: StoredSchema, where: object) -> None:
    """StoreSchemaError when `found` is a newer release's: a legacy marker above this release's, or a revision
    unknown here."""
    check_version(found.legacy, where)
    if found.revision is not None and found.revision not in chain().legacy:
        raise StoreSchemaError(
            f"{where} has result store schema revision {found.revision!r}, unknown to this agent-monitor: it was "
            "written by a newer release; use that release or another store"
        )


def upgrade(db: Any, where: object) -> None:
    """The latest schema on the store's raw connection `db` (autocommit: sqlite3 with isolation_level None, or
    psycopg's); StoreSchemaError for a database from a newer release. With SQLite also WAL mode, synchronous
    NORMAL and, for a new file, incremental auto-vacuum (so that deleting rows can shrink it)."""
    if isinstance(db, sqlite3.Connection):
        _set_up_sqlite(db, where)
    else:
        _upgrade_postgres(db, where)


def _set_up_sqlite(db: sqlite3.Connection, where: object) -> None:
    deadline = time.monotonic() + schema.BUSY_TIMEOUT_SECONDS
    while True:
        try:
            # Only what is missing: a database already set up is opened without taking a lock.
            if db.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file: before anything is written
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            found = stored_schema(db)
            refuse_newer(found, where)
            if found.revision != chain().head:
                _migrate_sqlite(db, where)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            if db.in_transaction:
                db.execute("ROLLBACK")
            time.sleep(0.05)


def _migrate_sqlite(db: sqlite3.Connection, where: object) -> None:
    with _borrowed(db, "sqlite://") as conn:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            found = stored_schema(db)  # another process may have migrated while this one waited
            refuse_newer(found, where)
            if found.revision != chain().head:
                _run(conn, found, where)
                if found.legacy < LEGACY_HEAD:
                    db.execute(_MARK_SQLITE)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise


def _upgrade_postgres(db: Any, where: object) -> None:
    found = stored_schema(db)
    refuse_newer(found, where)
    if found.revision == chain().head:
        return
    db.autocommit = False  # SQLAlchemy's transaction is the driver's, begun by its first statement
    try:
        with _borrowed(db, "postgresql+psycopg://") as conn, conn.begin():
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            found = stored_schema(db)  # another replica may have migrated while this one waited
            refuse_newer(found, where)
            if found.revision != chain().head:
                _run(conn, found, where)
                _mark_postgres(db, found.legacy)
    finally:
        if not db.closed:
            db.autocommit = True


def _mark_postgres(db: Any, legacy: int) -> None:
    db.execute(_CREATE_LEGACY)
    applied_by = f"{socket.gethostname()} pid {os.getpid()}"
    for version in range(legacy + 1, LEGACY_HEAD + 1):
        db.execute(_INSERT_LEGACY, (version, time.time(), applied_by))


def _run(conn: Any, found: StoredSchema, where: object) -> None:
    """The chain from where `found` is to the head, in the caller's transaction on `conn` (SQLAlchemy's)."""
    from alembic import command

    config = alembic_config(conn)
    start = found.revision
    if start is None and (start := chain().stamp_for(found.legacy)) is not None:
        command.stamp(config, start)  # an older release's database: at the revision of its version
    command.upgrade(config, "head")
    if start is None and found.legacy == 0:  # a new database (the workers' in-memory ones too): nothing to report
        log.debug("the result store %s: schema created at revision %s", where, chain().head)
    else:
        log.info("the result store %s: schema upgraded from %s to revision %s", where, start or "nothing", chain().head)


class _Borrowed:
    """The store's DBAPI connection as SQLAlchemy's pool holds it: the raw connection in all but closing (it stays
    the store's, even when SQLAlchemy would discard it) and what SQLAlchemy adds on connect (SQL functions on
    SQLite, a notice handler on PostgreSQL)."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Any) -> None:
        object.__setattr__(self, "_raw", raw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._raw, name, value)

    def close(self) -> None:
        pass

    def create_function(self, *args: Any, **kwargs: Any) -> None:
        pass

    def add_notice_handler(self, handler: Any) -> None:
        pass


@contextlib.contextmanager
def _borrowed(raw: Any, url: str) -> Iterator[Any]:
    """A SQLAlchemy Connection on `raw`; the driver's own error raised for a failed statement (what the stores
    handle: sqlite3.Error, psycopg.Error), not SQLAlchemy's wrapper of it."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError
    from sqlalchemy.pool import StaticPool

    options = {"use_native_hstore": False} if url.startswith("postgresql") else {}
    engine = create_engine(url, creator=lambda: _Borrowed(raw), poolclass=StaticPool, **options)
    try:
        with engine.connect() as conn:
            yield conn
    except DBAPIError as exc:
        if exc.orig is None:
            raise
        raise exc.orig from None
