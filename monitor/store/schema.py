"""The result store's schema: the names other modules share (the traces' and sessions' columns, the turn fields),
the error for a database from a newer release, and the legacy version marker.

The schema is made and upgraded by one Alembic chain on both databases (monitor/store/migrations: each revision's
docstring says what it changed; monitor/store/migrate.py runs it). Releases before the chain marked the schema's
version themselves (SQLite: `PRAGMA user_version`; PostgreSQL: `agent_monitor_schema`), 0 to 9; the markers are
still written (`SCHEMA_VERSION`, the version the head is equivalent to: migrate.py says why) and checked by the
readers that never migrate.
"""

from __future__ import annotations

from typing import Any, Protocol

BUSY_TIMEOUT_SECONDS = 30.0  # how long a writer waits for another process's transaction


class Database(Protocol):
    """What retention and the review readers need of a connection (sqlite3's, or the PostgreSQL one of
    postgres/connection.py): `execute` with the SQL a statement compiles to for its database (statements.py),
    giving rows to iterate, `fetchone` or `fetchall`."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...


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
    """The database was written by a newer agent-monitor (its schema version or revision is unknown here)."""


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


# The legacy version marker this release writes and the newest it accepts: the head revision's `legacy_version`
# (migrate.py; a test holds the two equal).
SCHEMA_VERSION = 9


def check_version(version: int, where: object) -> None:
    if version > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{where} has result store schema version {version}, newer than this agent-monitor knows "
            f"({SCHEMA_VERSION}): it was written by a newer release; use that release or another store.path"
        )
