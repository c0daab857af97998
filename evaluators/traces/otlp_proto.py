"""Decode OTLP protobuf (ExportTraceServiceRequest / TracesData, and the logs equivalents)."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .errors import TraceDecodeError
from .records import (
    Attributes,
    DecodedBatch,
    LogRecord,
    RejectedSpan,
    SpanEvent,
    SpanLink,
    SpanRecord,
)

MAX_VALUE_DEPTH = 32


def _any_value(value: Any, depth: int = 0) -> Any:
    if depth > MAX_VALUE_DEPTH:
        return None
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if which == "bytes_value":
        return bytes(value.bytes_value)
    if which == "array_value":
        return [_any_value(v, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value(kv.value, depth + 1) for kv in value.kvlist_value.values}
    return None


def attributes_from_proto(key_values: Any) -> Attributes:
    """KeyValue list to a dict; a repeated key keeps its last value."""
    return {kv.key: _any_value(kv.value) for kv in key_values}


def _span_from_proto(
    span: Any, resource_attrs: Attributes, scope_name: str, scope_version: str
) -> SpanRecord:
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=span.name,
        kind=int(span.kind),
        start_time_unix_nano=span.start_time_unix_nano,
        end_time_unix_nano=span.end_time_unix_nano,
        status_code=int(span.status.code),
        status_message=span.status.message,
        attributes=attributes_from_proto(span.attributes),
        events=[
            SpanEvent(e.name, e.time_unix_nano, attributes_from_proto(e.attributes)) for e in span.events
        ],
        links=[
            SpanLink(link.trace_id.hex(), link.span_id.hex(), attributes_from_proto(link.attributes))
            for link in span.links
        ],
        resource_attributes=resource_attrs,
        scope_name=scope_name,
        scope_version=scope_version,
    )


def _id_problem(trace_id: bytes, span_id: bytes, parent_id: bytes) -> str | None:
    if len(trace_id) != 16 or not any(trace_id):
        return f"trace id must be 16 non-zero bytes, got {len(trace_id)} bytes"
    if len(span_id) != 8 or not any(span_id):
        return f"span id must be 8 non-zero bytes, got {len(span_id)} bytes"
    if parent_id and len(parent_id) != 8:
        return f"parent span id must be 8 bytes, got {len(parent_id)} bytes"
    return None


def decode_traces_protobuf(data: bytes, where: str = "protobuf") -> DecodedBatch:
    """ExportTraceServiceRequest (or TracesData, the same wire shape) to span records."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except (ProtobufDecodeError, ValueError, TypeError, RuntimeError) as exc:
        raise TraceDecodeError(f"not a valid OTLP ExportTraceServiceRequest: {exc}", where) from None
    batch = DecodedBatch()
    for r_index, resource_spans in enumerate(request.resource_spans):
        resource_attrs = attributes_from_proto(resource_spans.resource.attributes)
        for s_index, scope_spans in enumerate(resource_spans.scope_spans):
            scope = scope_spans.scope
            for index, span in enumerate(scope_spans.spans):
                problem = _id_problem(span.trace_id, span.span_id, span.parent_span_id)
                if problem:
                    batch.rejected.append(
                        RejectedSpan(
                            "invalid_id",
                            f"{where}: resourceSpans[{r_index}].scopeSpans[{s_index}].spans[{index}]: {problem}",
                        )
                    )
                    continue
                batch.spans.append(_span_from_proto(span, resource_attrs, scope.name, scope.version))
    return batch


def decode_logs_protobuf(data: bytes, where: str = "protobuf") -> DecodedBatch:
    """ExportLogsServiceRequest (or LogsData) to log records; only records naming a span are kept."""
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(data)
    except (ProtobufDecodeError, ValueError, TypeError, RuntimeError) as exc:
        raise TraceDecodeError(f"not a valid OTLP ExportLogsServiceRequest: {exc}", where) from None
    batch = DecodedBatch()
    for resource_logs in request.resource_logs:
        resource_attrs = attributes_from_proto(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                if len(record.trace_id) != 16 or len(record.span_id) != 8:
                    continue
                attrs = attributes_from_proto(record.attributes)
                event_name = record.event_name or str(attrs.get("event.name") or "")
                batch.logs.append(
                    LogRecord(
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        event_name=event_name,
                        time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano,
                        body=_any_value(record.body),
                        attributes=attrs,
                        resource_attributes=resource_attrs,
                        scope_name=scope_logs.scope.name,
                    )
                )
    return batch


def looks_like_logs_protobuf(data: bytes) -> bool:
    """True when bytes parse as a logs export whose records carry ids, and not as spans with ids."""
    traces = ExportTraceServiceRequest()
    logs = ExportLogsServiceRequest()
    try:
        traces.ParseFromString(data)
    except Exception:
        traces = None
    try:
        logs.ParseFromString(data)
    except Exception:
        return False
    if traces is not None:
        for rs in traces.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    # A log record's field 1 is a fixed64, so only real spans parse with a 16-byte trace id
                    # (an unnamed span can otherwise pass for a log record and be dropped).
                    if len(span.trace_id) == 16:
                        return False
    return any(
        len(rec.trace_id) == 16 or rec.event_name
        for rl in logs.resource_logs
        for sl in rl.scope_logs
        for rec in sl.log_records
    )
