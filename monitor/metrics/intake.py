"""The intake's metrics, per receiver (the OpenTelemetry Collector's `obsrecv` is the model).

`IntakeMetrics` registers the receiver-labelled families once on the shared registry; each receiver (and the
poll feed) takes its own `ReceiverTelemetry` from it and counts what it answered: requests by code, spans
accepted, spans refused by reason, attributes dropped. The consumer behind a receiver counts none of these.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from monitor.consumer import IngestOutcome, Outcome

RECEIVERS = ("grpc", "http")
REFUSAL_REASONS = (
    "throttled",
    "pending_bytes",
    "timeout",
    "too_large",
    "malformed",
    "per_trace_cap",
    "invalid_id",
    "unauthenticated",
)


class IntakeMetrics:
    """`agent_monitor_spans_received`, `_spans_refused`, `_requests`, `_attributes_dropped`,
    `_metric_points_dropped` on one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.spans_received = Counter("agent_monitor_spans_received", "Spans accepted.", ["receiver"], registry=r)
        self.spans_refused = Counter(
            "agent_monitor_spans_refused", "Spans refused or dropped.", ["receiver", "reason"], registry=r
        )
        self.requests = Counter(
            "agent_monitor_requests", "Export requests by answer.", ["receiver", "code"], registry=r
        )
        self.attributes_dropped = Counter(
            "agent_monitor_attributes_dropped",
            "Attributes left out of accepted spans and log records (reason too_deep: nested past the decoders' limit).",
            ["receiver", "reason"],
            registry=r,
        )
        self.metric_points_dropped = Counter(
            "agent_monitor_metric_points_dropped",
            "OTLP metric data points received and dropped (the daemon keeps no metrics it is sent).",
            ["receiver"],
            registry=r,
        )
        # The known reasons start at 0: `increase()` and `rate()` only see a counter grow after its first scrape,
        # so a series born at 1 would hide the first refusal from the dashboards and the health alerts.
        for receiver in RECEIVERS:
            for reason in REFUSAL_REASONS:
                self.spans_refused.labels(receiver=receiver, reason=reason)
            self.metric_points_dropped.labels(receiver=receiver)

    def receiver(self, name: str) -> ReceiverTelemetry:
        """The telemetry of the receiver `name` (`grpc`, `http`, or the poll `feed`)."""
        return ReceiverTelemetry(self, name)


class ReceiverTelemetry:
    """What one receiver counts. A series is created on its first use (as `labels()` does), never before:
    the series present at 0 from start-up are `IntakeMetrics`'s."""

    __slots__ = ("_accepted", "_metrics", "_points_dropped", "_refused", "_requests", "name")

    def __init__(self, metrics: IntakeMetrics, name: str) -> None:
        self._metrics = metrics
        self.name = name
        self._accepted: Counter | None = None
        self._refused: dict[str, Counter] = {}
        self._requests: dict[str, Counter] = {}
        self._points_dropped: Counter | None = None

    def request(self, code: str) -> None:
        """One answered export request; `code` is a gRPC status name (see `monitor.consumer.grpc_code_of_http`)."""
        counter = self._requests.get(code)
        if counter is None:
            counter = self._requests[code] = self._metrics.requests.labels(receiver=self.name, code=code)
        counter.inc()

    def refused(self, reason: str, spans: int = 1) -> None:
        """`spans` refused for `reason` (one per request when the count is unknown)."""
        counter = self._refused.get(reason)
        if counter is None:
            counter = self._refused[reason] = self._metrics.spans_refused.labels(receiver=self.name, reason=reason)
        counter.inc(spans)

    def accepted(self, spans: int) -> None:
        """`spans` accepted (0 still creates the series, as a first accepted request always did)."""
        if self._accepted is None:
            self._accepted = self._metrics.spans_received.labels(receiver=self.name)
        self._accepted.inc(spans)

    def metric_points_dropped(self, points: int) -> None:
        """`points` OTLP metric data points of an accepted metrics request, dropped."""
        if self._points_dropped is None:
            self._points_dropped = self._metrics.metric_points_dropped.labels(receiver=self.name)
        self._points_dropped.inc(points)

    def attributes_dropped(self, reason: str, count: int) -> None:
        """`count` attributes left out of accepted records (`too_deep`)."""
        self._metrics.attributes_dropped.labels(receiver=self.name, reason=reason).inc(count)

    def ingested(self, outcome: IngestOutcome) -> None:
        """Count what the consumer's answer says: spans refused by reason; accepted spans and the attributes
        dropped from them, when the request was accepted."""
        for reason, spans in outcome.refused:
            self.refused(reason, spans)
        if outcome.outcome is Outcome.ACCEPTED:
            self.accepted(outcome.accepted)
            if outcome.dropped_attributes:
                self.attributes_dropped("too_deep", outcome.dropped_attributes)
