"""ResultRecorder: the tallies of evaluated batches → Prometheus metrics, in the process that owns the registry.

The result store is written where a batch is evaluated (batch_run.py), so only the metrics tally crosses over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from monitor.logutil import RateLimitedLogger
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.store.health import StoreHealth

log = logging.getLogger(__name__)


class ResultRecorder:
    """Applies batch tallies on the event loop thread."""

    def __init__(
        self,
        metrics: MetricsExporter,
        *,
        clock: Callable[[], float] = time.monotonic,
        store_health: StoreHealth | None = None,
    ) -> None:
        """`store_health`: the daemon's result store health, told what the workers' stores report."""
        self.metrics = metrics
        self.clock = clock
        self.store_health = store_health
        self.evaluated = 0
        self._failures = RateLimitedLogger(log, per_minute=10)

    def record(self, tally: MetricsTally) -> None:
        metrics = self.metrics
        for trace_id, error in tally.failures:
            self._failures.warning("trace_failed", "trace %s not evaluated: %s", trace_id, error)
        if tally.failures:
            metrics.traces_dropped.labels(reason="evaluation_error").inc(len(tally.failures))
        metrics.apply_tally(tally)
        now = self.clock()
        delay = metrics.completion_delay
        for last_seen in tally.delays_from:
            delay.observe(max(now - last_seen, 0.0))
        if tally.evaluated:
            metrics.traces_evaluated.inc(tally.evaluated)
            self.evaluated += tally.evaluated
