"""The evaluation pool's metrics: traces not evaluated (by reason), worker processes replaced, and the queue depth
and capacity, which are read from the pool at scrape time.

The pool, its shutdown drain (`monitor.engine.drain.PendingTraces`) and the recorder of its batches' failures
count a trace not evaluated through `dropped`; the pool counts a replaced worker through `restarted`. /metrics is
rendered on the event loop thread, where the pool changes, so the gauges read one state.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.metrics.zeroed import counter_at_zero

DROP_REASONS = ("shutdown_timeout", "evaluation_error", "worker_crash", "worker_stalled")


class PoolState(Protocol):
    """What the metrics read of the evaluation pool."""

    @property
    def depth(self) -> int: ...
    @property
    def capacity(self) -> float: ...


class EvaluationMetrics:
    """`agent_monitor_traces_dropped_total{reason}`, `_worker_restarts_total`, `_evaluation_capacity_spans`,
    `_queue_depth`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.traces_dropped = counter_at_zero(
            "agent_monitor_traces_dropped", "Traces not evaluated.", "reason", DROP_REASONS, r
        )
        self.worker_restarts = Counter(
            "agent_monitor_worker_restarts", "Evaluation worker processes replaced after dying.", registry=r
        )
        self.capacity = Gauge(
            "agent_monitor_evaluation_capacity_spans",
            "Spans per second the daemon evaluates when saturated, as admission control estimates it.",
            registry=r,
        )
        self.queue_depth = Gauge("agent_monitor_queue_depth", "Traces waiting for evaluation.", registry=r)

    def observe(self, pool: PoolState) -> None:
        """Read the queue depth and the capacity estimate from `pool` at every scrape from now on."""
        self.queue_depth.set_function(lambda: pool.depth)
        self.capacity.set_function(lambda: pool.capacity)

    def dropped(self, reason: str, traces: int) -> None:
        """`traces` not evaluated, for `reason` (one of DROP_REASONS)."""
        self.traces_dropped.labels(reason=reason).inc(traces)

    def restarted(self) -> None:
        """A worker process replaced after dying."""
        self.worker_restarts.inc()
