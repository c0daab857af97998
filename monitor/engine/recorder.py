"""ResultRecorder: the tallies of evaluated batches → Prometheus metrics, in the process that owns the registry.

The result store is written where a batch is evaluated (batch_run.py), so only the metrics tally crosses over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from monitor.logutil import RateLimitedLogger
from monitor.metrics.recording import RecordingMetrics
from monitor.metrics.tally import MetricsTally

log = logging.getLogger(__name__)


class ResultRecorder:
    """Applies batch tallies on the event loop thread: the results to the result metrics (`apply_tally`), the
    traces evaluated and their delay to its own group, the failed traces as dropped (`count_dropped`, the
    evaluation pool's group)."""

    def __init__(
        self,
        telemetry: RecordingMetrics,
        apply_tally: Callable[[MetricsTally], None],
        count_dropped: Callable[[str, int], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.telemetry = telemetry
        self.apply_tally = apply_tally
        self.count_dropped = count_dropped
        self.clock = clock
        self.evaluated = 0
        self._failures = RateLimitedLogger(log, per_minute=10)

    def record(self, tally: MetricsTally) -> None:
        for trace_id, error in tally.failures:
            self._failures.warning("trace_failed", "trace %s not evaluated: %s", trace_id, error)
        if tally.failures:
            self.count_dropped("evaluation_error", len(tally.failures))
        self.apply_tally(tally)
        now = self.clock()
        self.telemetry.recorded(tally.evaluated, (now - last_seen for last_seen in tally.delays_from))
        self.evaluated += tally.evaluated
