"""RawSpan: a received protobuf span decoded only as far as trace assembly needs; the rest stays in wire form.

A daemon's receiving process does the work every span needs before its trace is complete (ids, parent, kind,
end time: grouping, duplicates, the root) and nothing else: the span's attributes, events and links stay in
the span's own protobuf bytes (`payload`, re-serialized from the parsed request by the C parser) until the
evaluation worker that owns the trace turns it into a `SpanRecord` (`records_of`). Walking attributes into
Python objects is most of what decoding costs, so it moves to where the cores are; the bytes also pickle in a
fraction of the time the decoded record does. Resource attributes are decoded once per request (they are
shared by its spans and cheap) and travel as one shared dict.

Attributes nested too deep are then left out in the worker: they are counted per receiver in this process's
`DEEP_ATTRIBUTES` (taken with each batch's metrics tally) instead of in the receiver's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ..taken_counts import TakenCounts
from .otlp_proto import parse_request, span_from_proto, valid_spans
from .records import Attributes, DecodedBatch, LogRecord, RejectedSpan, SpanRecord

__all__ = ["DEEP_ATTRIBUTES", "RawBatch", "RawSpan", "ReceivedSpan", "decode_traces_raw", "records_of"]


@dataclass(slots=True)
class RawSpan:
    """One span as received: what assembly reads, decoded; everything else in `payload` (a `Span` message)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    end_time_unix_nano: int
    payload: bytes
    resource_attributes: Attributes
    scope_name: str
    scope_version: str
    source: str  # the receiver it came through: attributes dropped in decoding are counted under it


ReceivedSpan = SpanRecord | RawSpan


@dataclass(slots=True)
class RawBatch:
    """`DecodedBatch`'s shape for raw spans (a traces request has no log records)."""

    spans: list[RawSpan]
    rejected: list[RejectedSpan]
    dropped_attributes: int = 0  # cut while parsing (the C parser's depth limit) or from resources: spans' later
    logs: tuple[LogRecord, ...] = ()


def decode_traces_raw(data: bytes, where: str, source: str) -> RawBatch:
    """An ExportTraceServiceRequest's spans as RawSpans; raises TraceDecodeError like `decode_traces_protobuf`."""
    request = ExportTraceServiceRequest()
    checked = DecodedBatch(dropped_attributes=parse_request(request, data, where))  # rejections, resources' drops
    spans = [
        RawSpan(
            span.trace_id.hex(),
            span.span_id.hex(),
            span.parent_span_id.hex(),
            span.kind,
            span.end_time_unix_nano,
            span.SerializeToString(),
            resource,
            scope.name,
            scope.version,
            source,
        )
        for resource, scope, span in valid_spans(request, where, checked)
    ]
    return RawBatch(spans, checked.rejected, checked.dropped_attributes)


# attributes left out of raw spans decoded in this process for nesting too deep, per receiver
DEEP_ATTRIBUTES = TakenCounts()


def records_of(spans: Sequence[ReceivedSpan]) -> list[SpanRecord]:
    """The spans as SpanRecords: raw ones decoded (their too-deep attributes counted in DEEP_ATTRIBUTES)."""
    records: list[SpanRecord] = []
    for span in spans:
        if not isinstance(span, RawSpan):
            records.append(span)
            continue
        counter = DecodedBatch()
        record = span_from_proto(
            Span.FromString(span.payload), span.resource_attributes, span.scope_name, span.scope_version, counter
        )
        if counter.dropped_attributes:
            DEEP_ATTRIBUTES.add(span.source, counter.dropped_attributes)
        records.append(record)
    return records
