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
    """Checkpoints in the result store: its `poll_checkpoints` rows (monitor/store/poll_checkpoints.py)."""

    def __init__(self, store: QueuedResultStore) -> None:
        self.rows = store.poll_checkpoints

    def load(self, source: str) -> Checkpoint | None:
        row = self.rows.load(source)
        if row is None:
            return None
        return Checkpoint(row[0], json.loads(row[1]) if row[1] is not None else None)

    def unseen(self, source: str, trace_ids: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(trace_ids))
        return set(wanted) - self.rows.seen(source, wanted)

    def record(self, source: str, seen: Iterable[tuple[str, float]]) -> None:
        self.rows.record(source, list(seen))

    def save(self, source: str, checkpoint: Checkpoint, forget_before: float | None = None) -> None:
        state = json.dumps(checkpoint.state, separators=(",", ":")) if checkpoint.state is not None else None
        self.rows.save(source, checkpoint.mark, state, time.time(), forget_before)


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
