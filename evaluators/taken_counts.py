"""TakenCounts: thread-safe counts by key that one reader takes, each take returning what was added since the last
(a worker's figures that travel with its next batch: too-deep attributes per receiver, exported records by
outcome)."""

from __future__ import annotations

import threading


class TakenCounts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, key: str, count: int) -> None:
        """`count` more of `key` (nothing for a count under 1)."""
        if count <= 0:
            return
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + count

    def take(self) -> dict[str, int]:
        """{key: count} added since the last take (non-zero only)."""
        with self._lock:
            taken, self._counts = self._counts, {}
        return taken


__all__ = ["TakenCounts"]
