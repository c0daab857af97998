"""EXPORTS: this process's evaluation records by outcome (exported, dropped, failed), taken by the one reader that
counts them in `agent_monitor_evaluation_exports_total` (a worker's batch tally, the main process's scrape)."""

from __future__ import annotations

import threading

OUTCOMES = ("exported", "dropped", "failed")


class ExportCounts:
    """Thread-safe counts of records by outcome; `take()` returns those added since the last take."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, outcome: str, count: int) -> None:
        if count <= 0:
            return
        with self._lock:
            self._counts[outcome] = self._counts.get(outcome, 0) + count

    def take(self) -> dict[str, int]:
        """{outcome: records} since the last take (non-zero only)."""
        with self._lock:
            taken, self._counts = self._counts, {}
        return taken


EXPORTS = ExportCounts()
