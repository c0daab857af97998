"""EXPORTS: this process's evaluation records by outcome (exported, dropped, failed), taken by the one reader that
counts them in `agent_monitor_evaluation_exports_total` (a worker's batch tally, the main process's scrape)."""

from __future__ import annotations

from evaluators.taken_counts import TakenCounts

OUTCOMES = ("exported", "dropped", "failed")

EXPORTS = TakenCounts()

__all__ = ["EXPORTS", "OUTCOMES"]
