"""RecentCounts: what was counted, by label values, within the last `horizon` seconds, from a bounded memory.

It backs the gauge `agent_eval_failure_signatures_new_recent`: a count that a fresh Prometheus reads at its first
scrape, where `increase()` over a counter needs the counter's series to have been scraped before it grew.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

MAX_EVENTS = 50_000  # entries remembered; the oldest are dropped past it
MERGE_SECONDS = 1.0  # counts of one key within this of its last entry join that entry

Key = tuple[str, ...]


class RecentCounts:
    """`add(key, count)` now; `counts()`: the sums by key within the horizon, 0 for every key counted before
    (its series stays, as a counter's would). Thread-safe."""

    def __init__(self, horizon: float, clock: Callable[[], float], max_events: int = MAX_EVENTS) -> None:
        self.horizon = horizon
        self._clock = clock
        self.max_events = max_events
        self._lock = threading.Lock()
        self._events: deque[list] = deque()  # [when, key, count], oldest first
        self._keys: set[Key] = set()

    def add(self, key: Key, count: int = 1) -> None:
        now = self._clock()
        with self._lock:
            self._keys.add(key)
            last = self._events[-1] if self._events else None
            if last is not None and last[1] == key and 0 <= now - last[0] < MERGE_SECONDS:
                last[2] += count
                return
            self._events.append([now, key, count])
            while len(self._events) > self.max_events:
                self._events.popleft()

    def counts(self) -> dict[Key, int]:
        since = self._clock() - self.horizon
        with self._lock:
            while self._events and self._events[0][0] < since:
                self._events.popleft()
            counts = dict.fromkeys(self._keys, 0)
            for _, key, count in self._events:
                counts[key] += count
        return counts
