"""Poll mode's checkpoints in the result store (`poll_checkpoints`, `poll_seen`; schema version 2, SQLite or
PostgreSQL): the rows behind monitor/sources/checkpoints.py's StoreCheckpoints, which reaches them as
`QueuedResultStore.poll_checkpoints` (the sources do not import the store). Synchronous: the runner calls them in
a thread; each is one transaction of the store's writer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import bindparam, delete, select
from sqlalchemy.dialects.postgresql import insert  # its ON CONFLICT compiles on SQLite too

from monitor.store.statements import Statement, execute, executemany
from monitor.store.tables import poll_checkpoints, poll_seen

T = TypeVar("T")


class Transactions(Protocol):
    """What the rows need of the store (writer.QueuedResultStore): a unit of work run in one transaction."""

    def transaction(self, work: Callable[[Any], T]) -> T: ...


__all__ = ["PollCheckpointRows"]

ID_CHUNK = 500  # ids per IN (...) query

_LOAD = Statement(
    select(poll_checkpoints.c.mark, poll_checkpoints.c.state).where(poll_checkpoints.c.source == bindparam("source"))
)
_SEEN = Statement(
    select(poll_seen.c.trace_id).where(
        poll_seen.c.source == bindparam("source"), poll_seen.c.trace_id.in_(bindparam("ids", expanding=True))
    )
)
_RECORD = Statement(
    insert(poll_seen)
    .values(source=bindparam("source"), trace_id=bindparam("trace_id"), started_at=bindparam("started_at"))
    .on_conflict_do_nothing(index_elements=[poll_seen.c.source, poll_seen.c.trace_id])
)
_saved = insert(poll_checkpoints).values(
    source=bindparam("source"), mark=bindparam("mark"), state=bindparam("state"), updated_at=bindparam("updated_at")
)
_SAVE = Statement(
    _saved.on_conflict_do_update(
        index_elements=[poll_checkpoints.c.source],
        set_={"mark": _saved.excluded.mark, "state": _saved.excluded.state, "updated_at": _saved.excluded.updated_at},
    )
)
_FORGET = Statement(
    delete(poll_seen).where(poll_seen.c.source == bindparam("source"), poll_seen.c.started_at < bindparam("before"))
)


class PollCheckpointRows:
    """A store's checkpoint rows: (mark, state as JSON text) per source, and the trace ids each source evaluated."""

    def __init__(self, store: Transactions) -> None:
        self.store = store

    def load(self, source: str) -> tuple[float | None, str | None] | None:
        def read(db: Any) -> tuple[float | None, str | None] | None:
            row = execute(db, _LOAD, {"source": source}).fetchone()
            return None if row is None else (row[0], row[1])

        return self.store.transaction(read)

    def seen(self, source: str, trace_ids: Sequence[str]) -> set[str]:
        """Those of `trace_ids` (distinct) this source has evaluated."""

        def read(db: Any) -> set[str]:
            found: set[str] = set()
            for start in range(0, len(trace_ids), ID_CHUNK):
                chunk = list(trace_ids[start : start + ID_CHUNK])
                found.update(trace_id for (trace_id,) in execute(db, _SEEN, {"source": source, "ids": chunk}))
            return found

        return self.store.transaction(read) if trace_ids else set()

    def record(self, source: str, seen: Sequence[tuple[str, float]]) -> None:
        rows = [{"source": source, "trace_id": trace_id, "started_at": started} for trace_id, started in seen]
        if rows:
            self.store.transaction(lambda db: executemany(db, _RECORD, rows))

    def save(self, source: str, mark: float | None, state: str | None, now: float, forget_before: float | None) -> None:
        def write(db: Any) -> None:
            execute(db, _SAVE, {"source": source, "mark": mark, "state": state, "updated_at": now})
            if forget_before is not None:
                execute(db, _FORGET, {"source": source, "before": forget_before})

        self.store.transaction(write)
