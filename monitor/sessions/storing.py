"""Evaluated sessions to the result store: the hook the tracker (its rule evaluators' rows) and SessionJudging (its
LLM judges' rows) call with each session and its session-level result rows.

Each call queues one `SessionOutcome` on the store's bounded write queue (`QueuedResultStore.write`: never blocks
the event loop, never raises; a store that is slow, full or down drops and counts the rows, evaluation goes on).
The store keeps, or not, the session by `store.results` and upserts its row (packing.pack_session).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evaluators.sessions import Session
from monitor.outcomes import ResultRow, SessionOutcome

StoreWrite = Callable[[Sequence[SessionOutcome]], None]
OnEvaluated = Callable[..., None]  # (session, rows[, the kept judgements they settle])


def session_writer(write: StoreWrite) -> OnEvaluated:
    """`on_evaluated(session, rows)` writing through `write` (the store's `write`)."""

    def written(session: Session, rows: Sequence[ResultRow], resolved: Sequence[str] = ()) -> None:
        write([SessionOutcome(session, tuple(rows), tuple(resolved))])

    return written
