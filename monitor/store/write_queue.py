"""WriteQueue: the result store's bounded queue of evaluated traces and the writer thread that empties it.

The thread hands what is waiting to `insert` in batches (everything already queued, up to
MAX_TRACES_PER_TRANSACTION, goes in one call), and calls `maintain` after each batch and whenever it has waited
`idle_seconds` for one. The queue holds MAX_QUEUED_TRACES at most: `put` refuses what does not fit (the caller
counts it), so neither the event loop nor an evaluation worker is ever held by a database that is slow or hangs.
`put(wait=...)` waits that long for its traces to be written, and stops waiting at all once a wait was given up
on, until the writer has caught up.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.store.packing import Written

MAX_TRACES_PER_TRANSACTION = 2000
MAX_QUEUED_TRACES = 4096  # traces waiting for the writer thread; more are refused while it is behind


@dataclass(slots=True)
class _FlushMarker:
    done: threading.Event


class WriteQueue:
    def __init__(
        self,
        insert: Callable[[list[Written]], None],
        maintain: Callable[[], None],
        *,
        idle_seconds: float,
        name: str = "result-store",
    ) -> None:
        """`insert(traces)`: write them (never raises); `maintain()`: after each batch and when idle."""
        self._insert = insert
        self._maintain = maintain
        self._idle_seconds = idle_seconds
        self._name = name
        self._queue: queue.Queue[list[Written | _FlushMarker] | None] = queue.Queue()
        self._queued = 0  # traces in the queue (bounded by MAX_QUEUED_TRACES)
        self._queued_lock = threading.Lock()
        self._behind = False  # a `put(wait=...)` gave up waiting: no more waits until the writer catches up
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

    def put(self, traces: Sequence[Written], wait: float = 0.0) -> bool:
        """Queue traces for the writer thread; False, queuing nothing, when they do not fit. `wait`: seconds to
        wait for them to be written."""
        with self._queued_lock:
            room = self._queued + len(traces) <= MAX_QUEUED_TRACES
            if room:
                self._queued += len(traces)
        if not room:
            return False
        done = threading.Event() if wait > 0 and not self._behind else None
        self._queue.put([*traces, _FlushMarker(done)] if done is not None else list(traces))
        if done is not None and not done.wait(wait):
            self._behind = True
        return True

    def flush(self, timeout: float = 30.0) -> None:
        """Block until everything queued so far is written (tests, shutdown)."""
        if self._thread is None:
            return
        done = threading.Event()
        self._queue.put([_FlushMarker(done)])
        done.wait(timeout)

    def take(self) -> list[Written]:
        """Everything still queued, taken out of the queue (its waiters released)."""
        pending: list[Written] = []
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
            try:
                item = self._queue.get(timeout=self._idle_seconds)
            except queue.Empty:  # nothing to write: what is due still falls due here
                self._maintain()
                continue
            if item is None:
                return
            batch: list[Written | _FlushMarker] = list(item)
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

    def _write(self, batch: Sequence[Written | _FlushMarker]) -> None:
        markers = [o for o in batch if isinstance(o, _FlushMarker)]
        traces = [o for o in batch if not isinstance(o, _FlushMarker)]
        self._taken(len(traces))
        try:
            if traces:
                self._insert(traces)
        finally:
            for marker in markers:
                marker.done.set()
        self._maintain()

    def _taken(self, traces: int) -> None:
        with self._queued_lock:
            self._queued = max(self._queued - traces, 0)
