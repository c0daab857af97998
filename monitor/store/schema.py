"""The result store's schema, versioned with `PRAGMA user_version`, and its migrations.

Version 0 is the schema from before versioning (`BASELINE`, possibly without `traces.passed`). Each entry of
`MIGRATIONS` takes the schema one version up. `set_up` applies the missing ones in order, in one transaction
(`BEGIN IMMEDIATE`: when several processes open the database at once, one migrates, the others wait and find
it done), and refuses a database from a newer agent-monitor. A database at the latest version is not written.

Version 1: `traces` gains `agents`, `models`, `tools` (JSON arrays of names: what the review filters and groups
on, with json_each) and `detail` (JSON: steps, model usage, error spans); `results` gets an index on time for
every row (the review lists skips too), replacing the failing-only one, and one for the passing rows of the
oldest databases. New databases use `auto_vacuum=INCREMENTAL`, so deleting rows can shrink the file.

Version 2: `poll_checkpoints` (per polled source: its time mark and its own state, e.g. file offsets) and
`poll_seen` (the trace ids a source evaluated near its mark), for poll mode.

Version 3: `traces.variant` (the agent version that produced the trace, `variants.attribute`; '' when variants are
off, for the trace's lacking the attribute and for every row written before), with an index on (variant, time)
for the review's variant filter.

Version 4: failure signatures (`signatures`: one row per failure mode, evaluators.signatures) and
`results.signature` (the signature id of a failing result, NULL for the others and for every row written before),
indexed for the signature's results over time.

Version 5: conversations (`sessions`: one row per evaluated session, its turns as bounded, masked JSON summaries)
and `results.session_id` (the session a session-level result is about, NULL for the others), indexed.

Version 6 changed PostgreSQL only; version 7: reviewers' verdicts (`reviews`).

Version 8: open conversations (`open_sessions`, `session_turns`: open_sessions_sqlite.py), kept in the file so that
a restart neither cuts nor splits them (PostgreSQL has had its own since versions 5 and 6).

Version 9: the judgements still waiting for the judge model (`pending_judgements`: an LLM judge's JudgeJob, a
pairwise offer waiting for its partner or being judged), kept until their result is written so that a restart
does them (monitor/engine/pending.py), and `pending_owners` (with PostgreSQL: each replica's heartbeat, so a
replica adopts the waiting judgements of one that is gone).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, Protocol

from monitor.store import open_sessions_sqlite
from monitor.store.pending_rows import PENDING_TABLES

BUSY_TIMEOUT_SECONDS = 30.0  # how long a writer waits for another process's transaction


class Database(Protocol):
    """What retention and the review readers need of a connection (sqlite3's, or the PostgreSQL one of
    postgres/connection.py): `execute` with `?` placeholders, giving rows to iterate, `fetchone` or `fetchall`."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...


# Version 0, as the store created it before versioning (every statement idempotent).
BASELINE = (
    """CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT,
    service TEXT,
    agent TEXT,
    model TEXT,
    evaluator TEXT NOT NULL,
    level TEXT NOT NULL,
    score REAL,
    passed INTEGER,
    skip_reason TEXT,
    explanation TEXT,
    details TEXT
)""",
    "CREATE INDEX IF NOT EXISTS results_trace ON results(trace_id)",
    "DROP INDEX IF EXISTS results_eval_time",
    "CREATE INDEX IF NOT EXISTS results_failing ON results(evaluator, created_at) WHERE passed = 0",
    "CREATE INDEX IF NOT EXISTS results_failing_time ON results(created_at) WHERE passed = 0",
    """CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    service TEXT,
    input TEXT,
    output TEXT,
    span_count INTEGER,
    duration_ms REAL,
    has_errors INTEGER,
    passed TEXT
)""",
    "CREATE INDEX IF NOT EXISTS traces_time ON traces(created_at)",
)

TRACE_COLUMNS = (
    "trace_id",
    "created_at",
    "service",
    "input",
    "output",
    "span_count",
    "duration_ms",
    "has_errors",
    "passed",
    "agents",
    "models",
    "tools",
    "detail",
    "variant",
)


class StoreSchemaError(RuntimeError):
    """The database was written by a newer agent-monitor (its schema version is unknown here)."""


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _to_v1(db: sqlite3.Connection) -> None:
    columns = _columns(db, "traces")
    for name in ("passed", "agents", "models", "tools", "detail"):  # `passed` is missing in the oldest databases
        if name not in columns:
            db.execute(f"ALTER TABLE traces ADD COLUMN {name} TEXT")
    db.execute("DROP INDEX IF EXISTS results_failing_time")
    db.execute("CREATE INDEX IF NOT EXISTS results_time ON results(created_at)")
    # Passing results had a row each before they were packed per trace: found by the review through this index
    # (empty, so free, in every database written since).
    db.execute("CREATE INDEX IF NOT EXISTS results_passing ON results(created_at) WHERE passed = 1")


# Version 2: poll mode's checkpoints (monitor/sources/checkpoints.py), the same statements on both databases.
POLL_TABLES = (
    """CREATE TABLE IF NOT EXISTS poll_checkpoints (
    source TEXT PRIMARY KEY,
    mark DOUBLE PRECISION,
    state TEXT,
    updated_at DOUBLE PRECISION NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS poll_seen (
    source TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (source, trace_id)
)""",
    "CREATE INDEX IF NOT EXISTS poll_seen_time ON poll_seen(source, started_at)",
)


def _to_v2(db: sqlite3.Connection) -> None:
    for statement in POLL_TABLES:
        db.execute(statement)


# Version 3: the trace's variant, the same column on both databases (the indexes differ: see postgres/schema.py).
VARIANT_COLUMN = "ALTER TABLE traces ADD COLUMN variant TEXT NOT NULL DEFAULT ''"


def _to_v3(db: sqlite3.Connection) -> None:
    db.execute(VARIANT_COLUMN)  # a constant default: SQLite rewrites no row
    db.execute("CREATE INDEX IF NOT EXISTS traces_variant ON traces(variant, created_at)")


# Version 4: failure signatures, the same statements on both databases (DOUBLE PRECISION is REAL to SQLite). The
# JSON columns hold bounded arrays (store/signatures.py keeps the bounds): the services, agents, models, variants
# and versions a signature was seen in, and example trace ids (newest last). `regressed_at`: when it was seen again
# after `signatures.resolve_after` without a sighting (NULL: never).
SIGNATURE_TABLES = (
    """CREATE TABLE IF NOT EXISTS signatures (
    id TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    level TEXT NOT NULL,
    agent TEXT NOT NULL,
    step_kind TEXT NOT NULL,
    step_name TEXT NOT NULL,
    error_type TEXT NOT NULL,
    template TEXT NOT NULL,
    example TEXT NOT NULL,
    first_seen DOUBLE PRECISION NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL,
    count BIGINT NOT NULL,
    services TEXT NOT NULL,
    agents TEXT NOT NULL,
    models TEXT NOT NULL,
    variants TEXT NOT NULL,
    versions TEXT NOT NULL,
    example_traces TEXT NOT NULL,
    regressed_at DOUBLE PRECISION
)""",
    "CREATE INDEX IF NOT EXISTS signatures_last_seen ON signatures(last_seen)",
    "CREATE INDEX IF NOT EXISTS signatures_evaluator ON signatures(evaluator, last_seen)",
)
SIGNATURE_COLUMN = "ALTER TABLE results ADD COLUMN signature TEXT"
SIGNATURE_INDEX = (
    "CREATE INDEX IF NOT EXISTS results_signature ON results(signature, created_at) WHERE signature IS NOT NULL"
)


def _to_v4(db: sqlite3.Connection) -> None:
    for statement in SIGNATURE_TABLES:
        db.execute(statement)
    db.execute(SIGNATURE_COLUMN)
    db.execute(SIGNATURE_INDEX)


# Version 5: sessions, the same statements on both databases. `turns`: a JSON array of turn summaries in start order
# (SESSION_TURN_FIELDS), their texts masked and bounded like the traces'; `started_at`: the first turn's start,
# `last_turn_at`: the last turn's end (epoch seconds, the spans' clocks); `completed_at`: when the daemon completed
# it (`ended`: idle, explicit_end or cut); `failed`: its failing session-level results. A session evaluated again
# (its id forgotten, `sessions.max_open_sessions`, or claimed again) replaces its row and its session-level results.
SESSION_TABLES = (
    """CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    service TEXT NOT NULL,
    source TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    last_turn_at DOUBLE PRECISION NOT NULL,
    completed_at DOUBLE PRECISION NOT NULL,
    ended TEXT NOT NULL,
    turn_count INTEGER NOT NULL,
    turns_cut INTEGER NOT NULL,
    total_tokens BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION,
    failed INTEGER NOT NULL,
    turns TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS sessions_completed ON sessions(completed_at)",
    "CREATE INDEX IF NOT EXISTS sessions_service ON sessions(service, completed_at)",
)
SESSION_COLUMN = "ALTER TABLE results ADD COLUMN session_id TEXT"
SESSION_INDEX = "CREATE INDEX IF NOT EXISTS results_session ON results(session_id) WHERE session_id IS NOT NULL"
SESSION_COLUMNS = (
    "session_id",
    "service",
    "source",
    "started_at",
    "last_turn_at",
    "completed_at",
    "ended",
    "turn_count",
    "turns_cut",
    "total_tokens",
    "cost_usd",
    "failed",
    "turns",
)


# The order of a stored turn's fields (`turns` holds one JSON array per turn).
SESSION_TURN_FIELDS = (
    "trace_id",
    "start_ns",
    "end_ns",
    "user_message",
    "answer",
    "tool_calls",
    "errors",  # [[kind, name, message], ...]
    "agents",
    "input_tokens",
    "output_tokens",
    "cost_usd",
)


def _to_v5(db: sqlite3.Connection) -> None:
    for statement in SESSION_TABLES:
        db.execute(statement)
    db.execute(SESSION_COLUMN)
    db.execute(SESSION_INDEX)


def _to_v6(db: sqlite3.Connection) -> None:
    """Version 6 changed only PostgreSQL's tables that share open conversations between replicas (a SQLite store
    belongs to one replica)."""


# Version 7: reviewers' verdicts on results, the same statements on both databases (monitor/store/reviews.py). A
# result is named by (trace_id, evaluator, level, span_id: '' when it names no span), so a passing result kept in
# `traces.passed` can be reviewed like a stored row. Every change of a review is a new row: the one in force has
# `superseded_at` NULL (one per result: the unique index), the earlier ones the time they were replaced (the audit
# trail). `verdict_*`: the evaluator's verdict as the reviewer saw it; `task`: a JSON snapshot of the trace (input,
# output, tools in order, duration, cost, models) taken at review time, so a review outlives the trace's retention
# and becomes a dataset task. Reviews are not pruned with the results.
REVIEW_TABLES = (
    """CREATE TABLE IF NOT EXISTS reviews (
    review_id TEXT PRIMARY KEY,
    trace_id TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    level TEXT NOT NULL,
    span_id TEXT NOT NULL,
    session_id TEXT,
    service TEXT,
    verdict_passed INTEGER,
    verdict_score DOUBLE PRECISION,
    verdict_signature TEXT,
    agreement TEXT NOT NULL,
    corrected_score DOUBLE PRECISION,
    corrected_label TEXT,
    note TEXT,
    reviewer TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    superseded_at DOUBLE PRECISION,
    task TEXT
)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS reviews_in_force ON reviews(trace_id, evaluator, level, span_id)"
    " WHERE superseded_at IS NULL",
    "CREATE INDEX IF NOT EXISTS reviews_evaluator ON reviews(evaluator, created_at) WHERE superseded_at IS NULL",
    "CREATE INDEX IF NOT EXISTS reviews_time ON reviews(created_at)",
)


def _to_v7(db: sqlite3.Connection) -> None:
    for statement in REVIEW_TABLES:
        db.execute(statement)


def _to_v8(db: sqlite3.Connection) -> None:
    """Version 8: the open conversations' tables (open_sessions_sqlite.py)."""
    open_sessions_sqlite.create_tables(db)


def _to_v9(db: sqlite3.Connection) -> None:
    for statement in PENDING_TABLES:
        db.execute(statement)


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _to_v1, _to_v2, _to_v3, _to_v4, _to_v5, _to_v6, _to_v7, _to_v8, _to_v9
)  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def check_version(version: int, where: object) -> None:
    if version > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{where} has result store schema version {version}, newer than this agent-monitor knows "
            f"({SCHEMA_VERSION}): it was written by a newer release; use that release or another store.path"
        )


def set_up(db: sqlite3.Connection, where: object) -> None:
    """WAL mode and the latest schema on a read-write connection (autocommit). SQLite answers "database is
    locked" at once, without the busy timeout, when two connections would deadlock upgrading their locks (worker
    processes opening a new database together): that answer is retried here, within the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            # Only what is missing: a database already set up is opened without taking a lock.
            if db.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file: before anything is written
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            version = schema_version(db)
            check_version(version, where)
            if version < SCHEMA_VERSION:
                _migrate(db, where)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            if db.in_transaction:
                db.execute("ROLLBACK")
            time.sleep(0.05)


def _migrate(db: sqlite3.Connection, where: object) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(db)  # another process may have migrated while this one waited
        check_version(version, where)
        if version == 0:
            for statement in BASELINE:
                db.execute(statement)
        for migration in MIGRATIONS[version:]:
            migration(db)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
