"""WriteQueue: the result store's bounded queue of evaluated traces and the writer thread that empties it.

The thread hands what is waiting to `insert` in batches (everything already queued, up to
MAX_TRACES_PER_TRANSACTION, goes in one call), and calls `maintain` after each batch and whenever it has waited
`idle_seconds` for one. The queue holds MAX_QUEUED_TRACES at most: `put` refuses what does not fit (the caller
counts it), so neither the event loop nor an evaluation worker is ever held by a database that is slow or hangs.
`put(wait=...)` waits that long for its traces to be written, and stops waiting at all once a wait was given up
on, until the writer has caught up.

What `insert` gives back (the traces of a batch the database failed as a whole, kept: the intake log is on) is
tried again every RETRY_SECONDS, first, and what is queued meanwhile waits behind it untried; it still counts
against the queue's limit (`limit`: MAX_KEPT_TRACES then), so the memory it takes stays bounded.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.store.degrade import Item, Kept

MAX_TRACES_PER_TRANSACTION = 2000
MAX_QUEUED_TRACES = 4096  # traces waiting for the writer thread; more are refused while it is behind
MAX_KEPT_TRACES = 20_000  # the same, kept ones included, when failed writes are kept (the intake log is on)
RETRY_SECONDS = 1.0  # between two tries of the kept traces


@dataclass(slots=True)
class _FlushMarker:
    done: threading.Event


class WriteQueue:
    def __init__(
        self,
        insert: Callable[[list[Item]], list[Kept]],
        maintain: Callable[[], None],
        *,
        idle_seconds: float,
        name: str = "result-store",
    ) -> None:
        """`insert(traces)`: write them (never raises), giving back those kept for another try; `maintain()`:
        after each batch and when idle."""
        self._insert = insert
        self._maintain = maintain
        self._idle_seconds = idle_seconds
        self._name = name
        self._queue: queue.Queue[list[Item | _FlushMarker] | None] = queue.Queue()
        self.limit = MAX_QUEUED_TRACES
        self._queued = 0  # traces in the queue and kept (bounded by `limit`)
        self._kept: list[Item] = []  # kept by a failed write, then what was queued behind them: tried first
        self._retry_at = 0.0
        self._queued_lock = threading.Lock()
        self._behind = False  # a `put(wait=...)` gave up waiting: no more waits until the writer catches up
        self._previous: threading.Event | None = None  # the last `put(one_behind=True)`'s: written when set
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Start the writer thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the writer thread once it has written what was queued before; False when it did not finish within
        `timeout` (what it has not written stays queued: `take`)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        self._queue.put(None)
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def kept(self) -> int:
        """Traces kept by failed writes (and queued behind them), waiting for a retry."""
        return len(self._kept)

    def put(self, traces: Sequence[Item], wait: float = 0.0, *, one_behind: bool = False) -> bool:
        """Queue traces for the writer thread; False, queuing nothing, when they do not fit. `wait`: seconds to
        wait for them to be written or, `one_behind`, for those of the previous `put(one_behind=True)` (so the
        writer writes one batch while its caller computes the next, never more than one batch behind it)."""
        with self._queued_lock:
            room = self._queued + len(traces) <= self.limit
            if room:
                self._queued += len(traces)
        if not room:
            return False
        done = threading.Event() if wait > 0 and not self._behind else None
        self._queue.put([*traces, _FlushMarker(done)] if done is not None else list(traces))
        waited = self._previous if one_behind else done
        if one_behind:
            self._previous = done
        if waited is not None and not self._behind and not waited.wait(wait):
            self._behind = True
        return True

    def flush(self, timeout: float = 30.0) -> bool:
        """Block until everything queued so far is written (or failed, or kept for a retry); False when the writer
        did not get there within `timeout`."""
        if self._thread is None:
            return True
        done = threading.Event()
        self._queue.put([_FlushMarker(done)])
        return done.wait(timeout)

    def take(self) -> list[Item]:
        """Everything still queued or kept, taken out of the queue (its waiters released)."""
        pending, self._kept = self._kept, []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            for o in item or ():
                if isinstance(o, _FlushMarker):
                    o.done.set()
                else:
                    pending.append(o)
        self._taken(len(pending))
        return pending

    def _loop(self) -> None:
        while True:
            wait = max(self._retry_at - time.monotonic(), 0.0) if self._kept else self._idle_seconds
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:  # nothing to write: the kept traces' retry, and what is due, fall due here
                if self._kept:
                    self._write([])
                else:
                    self._maintain()
                continue
            if item is None:
                return
            batch: list[Item | _FlushMarker] = list(item)
            while len(batch) < MAX_TRACES_PER_TRANSACTION:  # everything already waiting goes in one transaction
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.extend(more)
            self._write(batch)
            if self._queue.empty():
                self._behind = False

    def _write(self, batch: Sequence[Item | _FlushMarker]) -> None:
        markers = [o for o in batch if isinstance(o, _FlushMarker)]
        traces = [o for o in batch if not isinstance(o, _FlushMarker)]
        try:
            if self._kept and time.monotonic() < self._retry_at:  # behind traces kept: they wait for the retry
                self._kept.extend(traces)
                return
            self._insert_all([*self._kept, *traces])
        finally:
            for marker in markers:
                marker.done.set()
        self._maintain()

    def _insert_all(self, traces: list[Item]) -> None:
        """Insert `traces`, MAX_TRACES_PER_TRANSACTION at a time; the first that gives back kept traces keeps
        them, and everything after it, for the next retry."""
        self._kept = []
        for start in range(0, len(traces), MAX_TRACES_PER_TRANSACTION):
            chunk = traces[start : start + MAX_TRACES_PER_TRANSACTION]
            kept = self._insert(chunk) if chunk else []
            self._taken(len(chunk) - len(kept))
            if kept:
                self._kept = [*kept, *traces[start + len(chunk) :]]
                self._retry_at = time.monotonic() + RETRY_SECONDS
                return

    def _taken(self, traces: int) -> None:
        with self._queued_lock:
            self._queued = max(self._queued - traces, 0)
