"""ResultRecorder: evaluated traces → Prometheus metrics and the result store, in the process that owns both."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from monitor.engine.trace_evaluation import Outcome
from monitor.logutil import RateLimitedLogger
from monitor.metrics import MetricsExporter
from monitor.results.rows import TraceFailure, TraceOutcome
from monitor.results.store import ResultStore

log = logging.getLogger(__name__)


class ResultRecorder:
    """Applies worker outcomes on the event loop thread: metrics at once, store rows queued for its writer."""

    def __init__(
        self,
        metrics: MetricsExporter,
        store: ResultStore | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics
        self.store = store
        self.clock = clock
        self.evaluated = 0
        self._failures = RateLimitedLogger(log, per_minute=10)

    def record(self, outcomes: Sequence[Outcome]) -> None:
        metrics = self.metrics
        evaluated: list[TraceOutcome] = []
        now = self.clock()
        for outcome in outcomes:
            if isinstance(outcome, TraceFailure):
                metrics.traces_dropped.labels(reason="evaluation_error").inc()
                self._failures.warning("trace_failed", "trace %s not evaluated: %s", outcome.trace_id, outcome.error)
                continue
            metrics.observe_trace(
                service=outcome.service,
                duration_seconds=outcome.duration_seconds,
                has_error=outcome.has_error,
                tokens=outcome.tokens,
                tools=outcome.tools,
                trace_id=outcome.trace_id,
                llm_calls=outcome.llm_calls,
            )
            metrics.observe_results(outcome.service, outcome.trace_id, outcome.results)
            metrics.completion_delay.observe(max(now - outcome.last_seen, 0.0))
            evaluated.append(outcome)
        if evaluated:
            metrics.traces_evaluated.inc(len(evaluated))
            self.evaluated += len(evaluated)
            if self.store is not None:
                self.store.write(evaluated)
