"""The PostgreSQL result store's schema: the same tables and versions as SQLite's (schema.py), in PostgreSQL types
(jsonb for the packed JSON, an identity column for the insertion order SQLite's rowid gives).

The version lives in `agent_monitor_schema`, a row per migration applied (version, when, by which host and
process). `set_up` applies the missing migrations in one transaction under a transaction-level advisory lock, so
that replicas starting together migrate once: one migrates, the others wait on the lock and find it done. A
database already at the latest version is read without taking the lock. A newer version is refused
(StoreSchemaError), as with SQLite.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

import psycopg

from monitor.store.pending_rows import PENDING_TABLES
from monitor.store.schema import (
    POLL_TABLES,
    REVIEW_TABLES,
    SCHEMA_VERSION,
    SESSION_COLUMN,
    SESSION_INDEX,
    SESSION_TABLES,
    SIGNATURE_COLUMN,
    SIGNATURE_INDEX,
    SIGNATURE_TABLES,
    TRACE_COLUMNS,
    VARIANT_COLUMN,
    check_version,
)

SCHEMA_TABLE = "agent_monitor_schema"
MIGRATION_LOCK = 0x61676D5F73636D61  # pg_advisory_xact_lock key: "agm_scma"

_V1 = (
    """CREATE TABLE results (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at DOUBLE PRECISION NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT,
    service TEXT,
    agent TEXT,
    model TEXT,
    evaluator TEXT NOT NULL,
    level TEXT NOT NULL,
    score DOUBLE PRECISION,
    passed SMALLINT,
    skip_reason TEXT,
    explanation TEXT,
    details TEXT
)""",
    "CREATE INDEX results_trace ON results(trace_id)",
    "CREATE INDEX results_failing ON results(evaluator, created_at) WHERE passed = 0",
    "CREATE INDEX results_time ON results(created_at, id)",
    """CREATE TABLE traces (
    id BIGINT GENERATED ALWAYS AS IDENTITY,
    trace_id TEXT PRIMARY KEY,
    created_at DOUBLE PRECISION NOT NULL,
    service TEXT,
    input TEXT,
    output TEXT,
    span_count INTEGER,
    duration_ms DOUBLE PRECISION,
    has_errors SMALLINT,
    passed JSONB,
    agents JSONB,
    models JSONB,
    tools JSONB,
    detail JSONB
)""",
    "CREATE INDEX traces_time ON traces(created_at, id)",
)


def _to_v1(db: psycopg.Connection[Any]) -> None:
    """Version 1, the first on PostgreSQL: SQLite's version-1 tables."""
    for statement in _V1:
        db.execute(statement)


def _to_v2(db: psycopg.Connection[Any]) -> None:
    """Version 2: poll mode's checkpoint tables, as on SQLite."""
    for statement in POLL_TABLES:
        db.execute(statement)


def _to_v3(db: psycopg.Connection[Any]) -> None:
    """Version 3: the trace's variant, as on SQLite (a constant default: PostgreSQL rewrites no row), indexed
    like `traces_time` within each variant."""
    db.execute(VARIANT_COLUMN)
    db.execute("CREATE INDEX traces_variant ON traces(variant, created_at, id)")


def _to_v4(db: psycopg.Connection[Any]) -> None:
    """Version 4: failure signatures and `results.signature`, as on SQLite."""
    for statement in SIGNATURE_TABLES:
        db.execute(statement)
    db.execute(SIGNATURE_COLUMN)
    db.execute(SIGNATURE_INDEX)


# Conversations split between replicas (the Collector routes by trace id): every replica writes the turns it
# evaluates to `session_turns` and keeps `open_sessions.last_arrival` (when a turn last arrived, by any replica);
# a session idle for `sessions.idle` is claimed by exactly one replica (`SELECT ... FOR UPDATE SKIP LOCKED`), which
# evaluates it from all its turns, writes `sessions` and marks it completed in one transaction (open_sessions.py).
SHARED_SESSION_TABLES = (
    """CREATE TABLE open_sessions (
    session_id TEXT PRIMARY KEY,
    service TEXT NOT NULL,
    source TEXT NOT NULL,
    first_arrival DOUBLE PRECISION NOT NULL,
    last_arrival DOUBLE PRECISION NOT NULL
)""",
    "CREATE INDEX open_sessions_idle ON open_sessions(last_arrival)",
    """CREATE TABLE session_turns (
    session_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    replica TEXT NOT NULL,
    arrived_at DOUBLE PRECISION NOT NULL,
    turn JSONB NOT NULL,
    PRIMARY KEY (session_id, trace_id)
)""",
)


def _to_v5(db: psycopg.Connection[Any]) -> None:
    """Version 5: sessions and `results.session_id`, as on SQLite, and the tables that share open conversations
    between replicas."""
    for statement in (*SESSION_TABLES, *SHARED_SESSION_TABLES):
        db.execute(statement)
    db.execute(SESSION_COLUMN)
    db.execute(SESSION_INDEX)


# Version 6: what sharing needs besides: when a session was completed (kept a while, so a late turn is counted
# late, not opened as a new conversation), its turns kept and cut (`sessions.max_turns` across replicas), and the
# open ones indexed by their last arrival (the idle claim's scan).
SHARED_SESSION_COLUMNS = (
    "ALTER TABLE open_sessions ADD COLUMN completed_at DOUBLE PRECISION,"
    " ADD COLUMN turns INTEGER NOT NULL DEFAULT 0, ADD COLUMN turns_cut INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX open_sessions_waiting ON open_sessions(last_arrival) WHERE completed_at IS NULL",
    "CREATE INDEX open_sessions_completed ON open_sessions(completed_at) WHERE completed_at IS NOT NULL",
)


def _to_v6(db: psycopg.Connection[Any]) -> None:
    """Version 6: open sessions' completion, turn counts and indexes (SHARED_SESSION_COLUMNS)."""
    for statement in SHARED_SESSION_COLUMNS:
        db.execute(statement)


def _to_v7(db: psycopg.Connection[Any]) -> None:
    """Version 7: reviewers' verdicts, as on SQLite."""
    for statement in REVIEW_TABLES:
        db.execute(statement)


def _to_v8(db: psycopg.Connection[Any]) -> None:
    """Version 8 changed only SQLite's tables (its open conversations: PostgreSQL has had them since 5 and 6)."""


def _to_v9(db: psycopg.Connection[Any]) -> None:
    """Version 9: the waiting judgements and their owners' heartbeats, as on SQLite."""
    for statement in PENDING_TABLES:
        db.execute(statement)


MIGRATIONS: tuple[Callable[[psycopg.Connection[Any]], None], ...] = (
    _to_v1, _to_v2, _to_v3, _to_v4, _to_v5, _to_v6, _to_v7, _to_v8, _to_v9
)  # fmt: skip
assert len(MIGRATIONS) == SCHEMA_VERSION, "a schema version migrates both databases"
JSON_COLUMNS = frozenset({"passed", "agents", "models", "tools", "detail"})
assert set(TRACE_COLUMNS) > JSON_COLUMNS


def schema_version(db: psycopg.Connection[Any]) -> int | None:
    """The version of the database (0: none yet), or None when it has tables but is not a result store's."""
    if db.execute("SELECT to_regclass(%s)", (SCHEMA_TABLE,)).fetchone()[0] is None:  # type: ignore[index]
        return 0
    row = db.execute(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}").fetchone()
    return int(row[0]) if row else 0


def set_up(db: psycopg.Connection[Any], where: str) -> None:
    """The latest schema on an autocommit connection; StoreSchemaError for a database from a newer release."""
    version = schema_version(db) or 0
    check_version(version, where)
    if version == SCHEMA_VERSION:
        return
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY,"
            " applied_at DOUBLE PRECISION NOT NULL, applied_by TEXT NOT NULL)"
        )
        version = schema_version(db) or 0  # another replica may have migrated while this one waited
        check_version(version, where)
        applied_by = f"{socket.gethostname()} pid {os.getpid()}"
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            migration(db)
            db.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (%s, %s, %s)", (number, time.time(), applied_by))
