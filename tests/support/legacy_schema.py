"""The result store's schema as releases before the Alembic chain made it, frozen: SQLite's version 0 (`BASELINE`) and
versions 1 to 9 marked by `PRAGMA user_version`, PostgreSQL's versions 1 to 9 recorded in `agent_monitor_schema`
(copied from monitor/store/schema.py, postgres/schema.py, open_sessions_sqlite.py and pending_rows.py as they were
at 6c02950). The tests build older databases with it (`sqlite_at`, `postgres_at`) to check that the migrations
upgrade every one of them, keeping its rows. Never change it: it is what is out there."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

LATEST = 9

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
VARIANT_COLUMN = "ALTER TABLE traces ADD COLUMN variant TEXT NOT NULL DEFAULT ''"
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
OPEN_SESSION_TABLES = (
    """CREATE TABLE IF NOT EXISTS open_sessions (
    session_id TEXT PRIMARY KEY,
    service TEXT NOT NULL,
    source TEXT NOT NULL,
    first_arrival REAL NOT NULL,
    last_arrival REAL NOT NULL,
    completed_at REAL,
    turns INTEGER NOT NULL DEFAULT 0,
    turns_cut INTEGER NOT NULL DEFAULT 0
)""",
    "CREATE INDEX IF NOT EXISTS open_sessions_waiting ON open_sessions(last_arrival) WHERE completed_at IS NULL",
    "CREATE INDEX IF NOT EXISTS open_sessions_completed ON open_sessions(completed_at) WHERE completed_at IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS session_turns (
    session_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    replica TEXT NOT NULL,
    arrived_at REAL NOT NULL,
    turn TEXT NOT NULL,
    PRIMARY KEY (session_id, trace_id)
)""",
)
PENDING_TABLES = (
    """CREATE TABLE IF NOT EXISTS pending_judgements (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    owner TEXT NOT NULL,
    payload TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS pending_judgements_owner ON pending_judgements(owner, created_at)",
    """CREATE TABLE IF NOT EXISTS pending_owners (
    owner TEXT PRIMARY KEY,
    seen_at DOUBLE PRECISION NOT NULL
)""",
)


def _sqlite_v1(db: sqlite3.Connection) -> None:
    columns = {row[1] for row in db.execute("PRAGMA table_info(traces)")}
    for name in ("passed", "agents", "models", "tools", "detail"):
        if name not in columns:
            db.execute(f"ALTER TABLE traces ADD COLUMN {name} TEXT")
    db.execute("DROP INDEX IF EXISTS results_failing_time")
    db.execute("CREATE INDEX IF NOT EXISTS results_time ON results(created_at)")
    db.execute("CREATE INDEX IF NOT EXISTS results_passing ON results(created_at) WHERE passed = 1")


SQLITE: dict[int, tuple[str, ...]] = {
    1: (),  # _sqlite_v1
    2: POLL_TABLES,
    3: (VARIANT_COLUMN, "CREATE INDEX IF NOT EXISTS traces_variant ON traces(variant, created_at)"),
    4: (*SIGNATURE_TABLES, SIGNATURE_COLUMN, SIGNATURE_INDEX),
    5: (*SESSION_TABLES, SESSION_COLUMN, SESSION_INDEX),
    6: (),
    7: REVIEW_TABLES,
    8: OPEN_SESSION_TABLES,
    9: PENDING_TABLES,
}


def sqlite_at(db: sqlite3.Connection, version: int, *, baseline: tuple[str, ...] = BASELINE) -> None:
    """A new SQLite file as an earlier release left it at `version` (0: before versioning; `baseline`: that
    schema's statements), in WAL mode like the store's."""
    db.execute("PRAGMA auto_vacuum=INCREMENTAL")
    db.execute("PRAGMA journal_mode=WAL")
    for statement in baseline:
        db.execute(statement)
    for number in range(1, version + 1):
        if number == 1:
            _sqlite_v1(db)
        for statement in SQLITE[number]:
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()


POSTGRES_V1 = (
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
SHARED_SESSION_COLUMNS = (
    "ALTER TABLE open_sessions ADD COLUMN completed_at DOUBLE PRECISION,"
    " ADD COLUMN turns INTEGER NOT NULL DEFAULT 0, ADD COLUMN turns_cut INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX open_sessions_waiting ON open_sessions(last_arrival) WHERE completed_at IS NULL",
    "CREATE INDEX open_sessions_completed ON open_sessions(completed_at) WHERE completed_at IS NOT NULL",
)
POSTGRES: dict[int, tuple[str, ...]] = {
    1: POSTGRES_V1,
    2: POLL_TABLES,
    3: (VARIANT_COLUMN, "CREATE INDEX traces_variant ON traces(variant, created_at, id)"),
    4: (*SIGNATURE_TABLES, SIGNATURE_COLUMN, SIGNATURE_INDEX),
    5: (*SESSION_TABLES, *SHARED_SESSION_TABLES, SESSION_COLUMN, SESSION_INDEX),
    6: SHARED_SESSION_COLUMNS,
    7: REVIEW_TABLES,
    8: (),
    9: PENDING_TABLES,
}
SCHEMA_TABLE = "agent_monitor_schema"
# What the judges' shared limits created on the first count (postgres/judge_limits.py), beside the versions.
JUDGE_LIMITS = """CREATE TABLE IF NOT EXISTS judge_limits (
    scope TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (scope, window_start)
)"""


def postgres_at(db: psycopg.Connection[Any], version: int, *, judge_limits: bool = False) -> None:
    """An empty PostgreSQL database as an earlier release left it at `version` (1 to 9), with the judges' limits
    table when `judge_limits`."""
    with db.transaction():
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY,"
            " applied_at DOUBLE PRECISION NOT NULL, applied_by TEXT NOT NULL)"
        )
        for number in range(1, version + 1):
            for statement in POSTGRES[number]:
                db.execute(statement)
            db.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (%s, 0, 'an earlier release')", (number,))
        if judge_limits:
            db.execute(JUDGE_LIMITS)
