"""The result store's metrics: failed operations, results it could not keep, and whether the review can be used.

`monitor.store.health.StoreHealth` reports failures and losses through `error` and `lost` (its `on_error` and
`on_lost`); `agent_monitor_review_available` reads the store's health at scrape time (`observe`). The store
degrades instead of stopping anything: these are how its failures show.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge

from monitor.metrics.zeroed import counter_at_zero

STORE_OPERATIONS = ("write", "prune", "read", "open", "sessions", "review")
STORE_LOSS_REASONS = ("rejected", "failed", "unavailable", "timeout", "queue_full")


class Availability(Protocol):
    """The store health as the metrics read it."""

    @property
    def available(self) -> bool: ...


class StoreMetrics:
    """`agent_monitor_store_errors_total{operation}`, `_store_results_lost_total{reason}`, `_review_available`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.errors = counter_at_zero(
            "agent_monitor_store_errors",
            "Result store operations that failed (rows not stored, retention not kept, reads not answered).",
            "operation",
            STORE_OPERATIONS,
            r,
        )
        self.results_lost = counter_at_zero(
            "agent_monitor_store_results_lost",
            "Evaluation results the result store could not keep (their metrics are counted all the same).",
            "reason",
            STORE_LOSS_REASONS,
            r,
        )
        self.review_available = Gauge(
            "agent_monitor_review_available",
            "1 while the result store works (the review can be used), 0 while it is failing or disabled.",
            registry=r,
        )

    def observe(self, health: Availability | None) -> None:
        """Read `health.available` at every scrape from now on (None: no store, 0)."""
        self.review_available.set_function(lambda: 1.0 if health is not None and health.available else 0.0)

    def error(self, operation: str, count: int = 1) -> None:
        """`count` failures of `operation` (StoreHealth's `on_error`)."""
        self.errors.labels(operation=operation).inc(count)

    def lost(self, reason: str, count: int) -> None:
        """`count` results the store could not keep, for `reason` (StoreHealth's `on_lost`)."""
        self.results_lost.labels(reason=reason).inc(count)
