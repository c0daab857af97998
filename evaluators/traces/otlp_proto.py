"""Decode OTLP protobuf (ExportTraceServiceRequest / TracesData, and the logs equivalents).

An attribute value nested past MAX_VALUE_DEPTH levels drops that attribute (counted in
`DecodedBatch.dropped_attributes`), never the request: see `otlp_depth`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .errors import TraceDecodeError
from .otlp_depth import MAX_VALUE_DEPTH, MalformedWire, TooDeep, prune_protobuf
from .records import (
    Attributes,
    DecodedBatch,
    LogRecord,
    RejectedSpan,
    SpanEvent,
    SpanLink,
    SpanRecord,
)

_PARSE_ERRORS = (ProtobufDecodeError, ValueError, TypeError, RuntimeError)


def _any_value(value: Any, level: int = 1) -> Any:
    """The Python value of an AnyValue at nesting `level`; TooDeep past MAX_VALUE_DEPTH levels."""
    if level > MAX_VALUE_DEPTH:
        raise TooDeep
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
        return [_any_value(v, level + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value(kv.value, level + 1) for kv in value.kvlist_value.values}
    return None


def attributes_from_proto(key_values: Any, batch: DecodedBatch | None = None) -> Attributes:
    """KeyValue list to a dict; a repeated key keeps its last value.

    An attribute whose value nests too deep is left out and counted in `batch.dropped_attributes`.
    """
    result: Attributes = {}
    for kv in key_values:
        value = kv.value
        text = value.string_value  # "" unless the oneof holds a string: a non-empty one needs no WhichOneof
        if text:
            result[kv.key] = text
            continue
        which = value.WhichOneof("value")
        if which == "string_value":
            result[kv.key] = text
            continue
        if which == "int_value":
            result[kv.key] = value.int_value
            continue
        try:
            result[kv.key] = _any_value(value)
        except TooDeep:
            if batch is not None:
                batch.dropped_attributes += 1
    return result


def parse_request(message: Any, data: bytes, where: str, logs: bool = False) -> int:
    """Parse `data` into `message`; returns how many over-deep attributes had to be cut for it to parse.

    The C parser refuses a whole message nested past its depth limit: such a request is parsed again
    with its over-deep attributes cut out (`prune_protobuf`). Other bad bytes raise TraceDecodeError.
    """
    try:
        message.ParseFromString(data)
        return 0
    except _PARSE_ERRORS as exc:
        error = TraceDecodeError(f"not a valid OTLP {type(message).__name__}: {exc}", where)
    try:
        pruned, dropped = prune_protobuf(data, logs=logs)
    except MalformedWire:
        raise error from None
    if not dropped:
        raise error
    try:
        message.ParseFromString(pruned)
    except _PARSE_ERRORS:
        raise error from None
    return dropped


def span_from_proto(
    span: Any, resource_attrs: Attributes, scope_name: str, scope_version: str, batch: DecodedBatch
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
        attributes=attributes_from_proto(span.attributes, batch),
        events=[SpanEvent(e.name, e.time_unix_nano, attributes_from_proto(e.attributes, batch)) for e in span.events],
        links=[
            SpanLink(link.trace_id.hex(), link.span_id.hex(), attributes_from_proto(link.attributes, batch))
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
    return _traces_of(request, parse_request(request, data, where), where)


def _traces_of(request: ExportTraceServiceRequest, dropped: int, where: str) -> DecodedBatch:
    """The span records of a parsed request (`dropped`: the attributes cut for it to parse)."""
    batch = DecodedBatch(dropped_attributes=dropped)
    for resource_attrs, scope, span in valid_spans(request, where, batch):
        batch.spans.append(span_from_proto(span, resource_attrs, scope.name, scope.version, batch))
    return batch


def _has_real_spans(request: ExportTraceServiceRequest) -> bool:
    """Whether a parsed request holds a span with a 16-byte trace id. A log record's field 1 is a fixed64, so only
    real spans parse with one (an unnamed span could otherwise pass for a log record and be dropped)."""
    return any(len(span.trace_id) == 16 for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans)


def valid_spans(request: ExportTraceServiceRequest, where: str, batch: DecodedBatch) -> Iterator[tuple]:
    """(resource attributes, scope, span) of every span of a parsed request whose ids are valid; the others go to
    `batch.rejected`, and resource attributes nested too deep are counted in `batch.dropped_attributes`."""
    for r_index, resource_spans in enumerate(request.resource_spans):
        resource_attrs = attributes_from_proto(resource_spans.resource.attributes, batch)
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
                yield resource_attrs, scope, span


def decode_logs_protobuf(data: bytes, where: str = "protobuf") -> DecodedBatch:
    """ExportLogsServiceRequest (or LogsData) to log records; only records naming a span are kept."""
    request = ExportLogsServiceRequest()
    return _logs_of(request, parse_request(request, data, where, logs=True))


def _logs_of(request: ExportLogsServiceRequest, dropped: int) -> DecodedBatch:
    """The log records of a parsed request (`dropped`: the attributes cut for it to parse)."""
    batch = DecodedBatch(dropped_attributes=dropped)
    for resource_logs in request.resource_logs:
        resource_attrs = attributes_from_proto(resource_logs.resource.attributes, batch)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                if len(record.trace_id) != 16 or len(record.span_id) != 8:
                    continue
                attrs = attributes_from_proto(record.attributes, batch)
                event_name = record.event_name or str(attrs.get("event.name") or "")
                batch.logs.append(
                    LogRecord(
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        event_name=event_name,
                        time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano,
                        body=_body(record.body, batch),
                        attributes=attrs,
                        resource_attributes=resource_attrs,
                        scope_name=scope_logs.scope.name,
                    )
                )
    return batch


def _body(value: Any, batch: DecodedBatch) -> Any:
    """A log record's body; None (counted as a dropped attribute) when it nests too deep."""
    try:
        return _any_value(value)
    except TooDeep:
        batch.dropped_attributes += 1
        return None


def decode_protobuf(data: bytes, where: str = "protobuf") -> DecodedBatch:
    """A traces or a logs export, told apart by content and parsed once as each at most: spans if a span has a
    16-byte trace id (a log record's field 1 is a fixed64, so only real spans parse with one: an unnamed span
    could otherwise pass for a log record and be dropped), else log records if the bytes parse as a logs export
    whose records carry ids, else spans (or the traces parser's error)."""
    traces = ExportTraceServiceRequest()
    error: TraceDecodeError | None = None
    dropped = 0
    try:
        dropped = parse_request(traces, data, where)
    except TraceDecodeError as exc:
        error = exc
    else:
        if _has_real_spans(traces):
            return _traces_of(traces, dropped, where)
    logs = ExportLogsServiceRequest()
    try:
        logs_dropped = parse_request(logs, data, where, logs=True)
    except TraceDecodeError:
        logs_dropped = None
    if logs_dropped is not None and any(
        len(rec.trace_id) == 16 or rec.event_name
        for rl in logs.resource_logs
        for sl in rl.scope_logs
        for rec in sl.log_records
    ):
        return _logs_of(logs, logs_dropped)
    if error is not None:
        raise error
    return _traces_of(traces, dropped, where)


__all__ = [
    "attributes_from_proto",
    "decode_logs_protobuf",
    "decode_protobuf",
    "decode_traces_protobuf",
    "parse_request",
    "span_from_proto",
    "valid_spans",
]
