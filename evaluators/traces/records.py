"""The flat span record every decoder produces: one shape for protobuf, OTLP-JSON and pollers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Attribute values after decoding: str, bool, int, float, bytes, list of those, or dict (kvlist).
AttributeValue = Any
Attributes = dict[str, AttributeValue]

SPAN_KIND_NAMES = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
STATUS_NAMES = ("UNSET", "OK", "ERROR")


def service_of(resource_attributes: Attributes) -> str:
    """The `service.name` of a resource ("" when it has none)."""
    value = resource_attributes.get("service.name")
    return value if isinstance(value, str) else ""


@dataclass(slots=True)
class SpanEvent:
    """A span event, or a log record joined to its span (then `body` may be set)."""

    name: str
    time_unix_nano: int = 0
    attributes: Attributes = field(default_factory=dict)
    body: AttributeValue = None
    from_log: bool = False


@dataclass(slots=True)
class SpanLink:
    trace_id: str
    span_id: str
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True)
class SpanRecord:
    """One span, flattened with its resource and scope. Ids are lowercase hex ('' when absent)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int = 0
    start_time_unix_nano: int = 0
    end_time_unix_nano: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: Attributes = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    resource_attributes: Attributes = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    # Log records (OTLP logs signal) that name this span; filled by the log join.
    logs: list[SpanEvent] = field(default_factory=list)

    @property
    def duration_ms(self) -> float:
        """Duration in milliseconds; 0 for negative or missing timestamps."""
        if self.end_time_unix_nano <= 0 or self.end_time_unix_nano < self.start_time_unix_nano:
            return 0.0
        return (self.end_time_unix_nano - self.start_time_unix_nano) / 1e6

    @property
    def is_error(self) -> bool:
        return self.status_code == STATUS_ERROR

    @property
    def service_name(self) -> str:
        return service_of(self.resource_attributes)


@dataclass(slots=True)
class LogRecord:
    """A decoded OTLP log record; only those with a trace and span id are joined to spans."""

    trace_id: str
    span_id: str
    event_name: str
    time_unix_nano: int = 0
    body: AttributeValue = None
    attributes: Attributes = field(default_factory=dict)
    resource_attributes: Attributes = field(default_factory=dict)
    scope_name: str = ""

    @property
    def service_name(self) -> str:
        return service_of(self.resource_attributes)

    def as_event(self) -> SpanEvent:
        return SpanEvent(
            name=self.event_name,
            time_unix_nano=self.time_unix_nano,
            attributes=self.attributes,
            body=self.body,
            from_log=True,
        )


@dataclass(slots=True)
class RejectedSpan:
    """A span left out of an otherwise valid request (for OTLP partial_success)."""

    reason: str  # "invalid_id"
    where: str


@dataclass(slots=True)
class DecodedBatch:
    """What one decode call yields: spans, log records (for a logs export), spans left out, and how many
    attributes were left out because their value nested too deep (see `otlp_depth.MAX_VALUE_DEPTH`)."""

    spans: list[SpanRecord] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    rejected: list[RejectedSpan] = field(default_factory=list)
    dropped_attributes: int = 0

    def extend(self, other: DecodedBatch) -> None:
        self.spans.extend(other.spans)
        self.logs.extend(other.logs)
        self.rejected.extend(other.rejected)
        self.dropped_attributes += other.dropped_attributes


__all__ = [
    "SPAN_KIND_NAMES",
    "STATUS_NAMES",
    "AttributeValue",
    "Attributes",
    "DecodedBatch",
    "LogRecord",
    "RejectedSpan",
    "SpanEvent",
    "SpanLink",
    "SpanRecord",
]
