"""The statements that write a completed conversation's `sessions` row, the same on SQLite and PostgreSQL: the
upsert of the row, and the removal of an earlier completion's rows before it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, case, delete, select
from sqlalchemy.dialects.postgresql import insert  # its ON CONFLICT compiles on SQLite too

from monitor.store.schema import SESSION_COLUMNS
from monitor.store.statements import RowStatement, executemany_rows
from monitor.store.tables import results, sessions

# A session completed again (evaluated again: its id forgotten, or claimed again after a crash) replaces what its
# earlier completion left: before a write of a completion, the session's rows of another `completed_at` go, its
# session-level results with them (each row: session_id, completed_at).
_COMPLETION = ("session_id", "completed_at")
_EARLIER = (sessions.c.session_id == bindparam("session_id"), sessions.c.completed_at != bindparam("completed_at"))
FORGET_EARLIER_RESULTS = RowStatement(
    delete(results).where(
        results.c.session_id == bindparam("session_id"),
        results.c.session_id.in_(select(sessions.c.session_id).where(*_EARLIER)),
    ),
    _COMPLETION,
)
FORGET_EARLIER_SESSION = RowStatement(delete(sessions).where(*_EARLIER), _COMPLETION)

# The upsert of one `sessions` row (SESSION_COLUMNS), the same on both databases: a session completed again
# (another `completed_at`) replaces its row (an earlier completion's rows are gone by then: FORGET_EARLIER_*);
# another write of the same completion (its LLM judges' results after its rules') adds its failing results to
# `failed`.
_session = insert(sessions).values({name: bindparam(name) for name in SESSION_COLUMNS})
_kept = {name: _session.excluded[name] for name in SESSION_COLUMNS if name not in ("session_id", "failed")}
_failed = case(
    (sessions.c.completed_at == _session.excluded.completed_at, sessions.c.failed + _session.excluded.failed),
    else_=_session.excluded.failed,
)
UPSERT_SESSION = RowStatement(
    _session.on_conflict_do_update(index_elements=[sessions.c.session_id], set_={**_kept, "failed": _failed}),
    SESSION_COLUMNS,
)


def forget_earlier_completions(db: Any, completions: Sequence[tuple[str, float]]) -> None:
    """Delete the `sessions` rows and session-level results of earlier completions (another `completed_at`) of the
    sessions in `completions` (session_id, completed_at), in the transaction that writes these; `db`: either
    store's connection."""
    executemany_rows(db, FORGET_EARLIER_RESULTS, completions)
    executemany_rows(db, FORGET_EARLIER_SESSION, completions)
