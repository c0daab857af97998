"""Where each polled source is: its checkpoint (a time mark, and a source's own state such as file offsets) and
the trace ids it evaluated near the mark, in the result store's `poll_checkpoints` and `poll_seen` tables (schema
version 2, SQLite or PostgreSQL), so a restart resumes where the last run stopped and counts nothing twice.

StoreCheckpoints keeps them in the result store; MemoryCheckpoints (no store: `store.enabled: false`, and the
one-shot `agent-monitor poll`) in the process only. Every method is synchronous: the runner calls them in a thread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from monitor.store.writer import QueuedResultStore


ID_CHUNK = 500  # ids per IN (...) query


@dataclass(slots=True)
class Checkpoint:
    mark: float | None  # traces that started before it (minus the overlap) are done; None: a span feed
    state: Any = None  # JSON-serialisable: a span feed's position


class CheckpointStore(Protocol):
    def load(self, source: str) -> Checkpoint | None: ...

    def unseen(self, source: str, trace_ids: Sequence[str]) -> set[str]:
        """Those of `trace_ids` this source has not evaluated."""
        ...

    def record(self, source: str, seen: Iterable[tuple[str, float]]) -> None:
        """Remember (trace id, start) pairs as evaluated."""
        ...

    def save(self, source: str, checkpoint: Checkpoint, forget_before: float | None = None) -> None:
        """Store the checkpoint; forget the seen ids of traces that started before `forget_before`."""
        ...


class StoreCheckpoints:
    def __init__(self, store: QueuedResultStore) -> None:
        self.store = store

    def load(self, source: str) -> Checkpoint | None:
        def read(db: Any) -> Checkpoint | None:
            row = db.execute("SELECT mark, state FROM poll_checkpoints WHERE source = ?", (source,)).fetchone()
            if row is None:
                return None
            return Checkpoint(row[0], json.loads(row[1]) if row[1] is not None else None)

        return self.store.transaction(read)

    def unseen(self, source: str, trace_ids: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(trace_ids))

        def read(db: Any) -> set[str]:
            seen: set[str] = set()
            for start in range(0, len(wanted), ID_CHUNK):
                chunk = wanted[start : start + ID_CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT trace_id FROM poll_seen WHERE source = ? AND trace_id IN ({marks})", (source, *chunk)
                ).fetchall()
                seen.update(trace_id for (trace_id,) in rows)
            return set(wanted) - seen

        return self.store.transaction(read) if wanted else set()

    def record(self, source: str, seen: Iterable[tuple[str, float]]) -> None:
        rows = [(source, trace_id, started) for trace_id, started in seen]
        if rows:
            self.store.transaction(
                lambda db: db.executemany(
                    "INSERT INTO poll_seen (source, trace_id, started_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (source, trace_id) DO NOTHING",
                    rows,
                )
            )

    def save(self, source: str, checkpoint: Checkpoint, forget_before: float | None = None) -> None:
        state = json.dumps(checkpoint.state, separators=(",", ":")) if checkpoint.state is not None else None

        def write(db: Any) -> None:
            db.execute(
                "INSERT INTO poll_checkpoints (source, mark, state, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (source) DO UPDATE SET mark = excluded.mark, state = excluded.state,"
                " updated_at = excluded.updated_at",
                (source, checkpoint.mark, state, time.time()),
            )
            if forget_before is not None:
                db.execute("DELETE FROM poll_seen WHERE source = ? AND started_at < ?", (source, forget_before))

        self.store.transaction(write)


class MemoryCheckpoints:
    def __init__(self) -> None:
        self.checkpoints: dict[str, Checkpoint] = {}
        self.seen: dict[str, dict[str, float]] = {}

    def load(self, source: str) -> Checkpoint | None:
        return self.checkpoints.get(source)

    def unseen(self, source: str, trace_ids: Sequence[str]) -> set[str]:
        seen = self.seen.get(source, {})
        return {t for t in trace_ids if t not in seen}

    def record(self, source: str, seen: Iterable[tuple[str, float]]) -> None:
        self.seen.setdefault(source, {}).update(seen)

    def save(self, source: str, checkpoint: Checkpoint, forget_before: float | None = None) -> None:
        self.checkpoints[source] = Checkpoint(checkpoint.mark, json.loads(json.dumps(checkpoint.state)))
        if forget_before is not None:
            seen = self.seen.get(source, {})
            for trace_id in [t for t, started in seen.items() if started < forget_before]:
                del seen[trace_id]
