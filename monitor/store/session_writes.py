"""The statements that write a completed conversation's `sessions` row, the same on SQLite and PostgreSQL (their
placeholders aside): the upsert of the row, and the removal of an earlier completion's rows before it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.store.schema import SESSION_COLUMNS

# A session completed again (evaluated again: its id forgotten, or claimed again after a crash) replaces what its
# earlier completion left: before a write of a completion, the session's rows of another `completed_at` go, its
# session-level results with them (params: session_id, session_id, completed_at; then session_id, completed_at).
FORGET_EARLIER_RESULTS = (
    "DELETE FROM results WHERE session_id = ? AND session_id IN"
    " (SELECT session_id FROM sessions WHERE session_id = ? AND completed_at <> ?)"
)
FORGET_EARLIER_SESSION = "DELETE FROM sessions WHERE session_id = ? AND completed_at <> ?"


def forget_earlier_completions(db: Any, completions: Sequence[tuple[str, float]]) -> None:
    """Delete the `sessions` rows and session-level results of earlier completions (another `completed_at`) of the
    sessions in `completions` (session_id, completed_at), in the transaction that writes these; `db`: either
    store's connection (`?` placeholders)."""
    db.executemany(FORGET_EARLIER_RESULTS, [(session_id, session_id, at) for session_id, at in completions])
    db.executemany(FORGET_EARLIER_SESSION, list(completions))


def upsert_session_sql(mark: str) -> str:
    """The upsert of one `sessions` row (SESSION_COLUMNS; `mark`: the driver's placeholder), the same on both
    databases: a session completed again (another `completed_at`) replaces its row (an earlier completion's rows
    are gone by then: FORGET_EARLIER_*); another write of the same completion (its LLM judges' results after its
    rules') adds its failing results to `failed`."""
    kept = ", ".join(f"{c} = excluded.{c}" for c in SESSION_COLUMNS if c not in ("session_id", "failed"))
    return (
        f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) VALUES ({', '.join([mark] * len(SESSION_COLUMNS))})"
        f" ON CONFLICT (session_id) DO UPDATE SET {kept}, failed = CASE WHEN sessions.completed_at ="
        " excluded.completed_at THEN sessions.failed + excluded.failed ELSE excluded.failed END"
    )
