"""The assembler's metrics, read from the assembler at scrape time: traces, spans and bytes it holds, and the
spans it dropped as late or duplicate.

The assembler keeps these figures itself (`monitor.engine.assembler.TraceAssembler`); nothing pushes them here.
/metrics is rendered on the event loop thread, where the assembler changes, so one scrape reads one state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

GAUGES = (
    ("agent_monitor_traces_pending", "Traces held by the assembler.", "traces_pending"),
    ("agent_monitor_spans_pending", "Spans held by the assembler.", "spans_held"),
    ("agent_monitor_bytes_pending", "Estimated bytes of the spans held by the assembler.", "bytes_held"),
)
COUNTERS = (
    ("agent_monitor_late_spans", "Spans arriving after their trace was evaluated.", "late_spans"),
    ("agent_monitor_duplicate_spans", "Spans repeating a span id.", "duplicate_spans"),
)


class AssemblerState(Protocol):
    """What the metrics read of the assembler (running totals and what it holds now)."""

    @property
    def traces_pending(self) -> int: ...
    @property
    def spans_held(self) -> int: ...
    @property
    def bytes_held(self) -> int: ...
    @property
    def late_spans(self) -> int: ...
    @property
    def duplicate_spans(self) -> int: ...


class AssemblyMetrics(Collector):
    """`agent_monitor_{traces,spans,bytes}_pending` and `agent_monitor_{late,duplicate}_spans_total`: 0 until
    `observe(assembler)`, then the assembler's own figures at every scrape."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._assembler: AssemblerState | None = None
        registry.register(self)

    def observe(self, assembler: AssemblerState) -> None:
        """Read `assembler` at every scrape from now on."""
        self._assembler = assembler

    def describe(self) -> Iterator[Metric]:
        for name, text, _ in GAUGES:
            yield GaugeMetricFamily(name, text)
        for name, text, _ in COUNTERS:
            yield CounterMetricFamily(name, text)

    def collect(self) -> Iterator[Metric]:
        source = self._assembler
        for name, text, field in GAUGES:
            yield GaugeMetricFamily(name, text, value=getattr(source, field) if source is not None else 0)
        for name, text, field in COUNTERS:
            yield CounterMetricFamily(name, text, value=getattr(source, field) if source is not None else 0)
