"""The result recorder's metrics: traces run through the evaluators, and how long after their last span their
metrics were updated (`monitor.engine.recorder.ResultRecorder` is the only code that updates them)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram

DELAY_BUCKETS = (0.5, 1, 2, 3, 4, 5, 5.25, 5.5, 6, 7, 10, 15, 30, 60, 120, 300)


class RecordingMetrics:
    """`agent_monitor_traces_evaluated_total` and `agent_monitor_trace_delay_seconds`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.traces_evaluated = Counter(
            "agent_monitor_traces_evaluated", "Traces run through the evaluators.", registry=registry
        )
        self.completion_delay = Histogram(
            "agent_monitor_trace_delay_seconds",
            "From the last span of a trace arriving to its metrics being updated (includes the quiet period).",
            buckets=DELAY_BUCKETS,
            registry=registry,
        )

    def recorded(self, evaluated: int, delays: Iterable[float]) -> None:
        """A batch recorded: `evaluated` traces, each trace's delay from its last span (seconds, clamped at 0)."""
        for seconds in delays:
            self.completion_delay.observe(max(seconds, 0.0))
        if evaluated:
            self.traces_evaluated.inc(evaluated)
