"""Hand-built OTLP requests and raw senders (HTTP via urllib, gRPC via a plain channel) for edge cases."""

from __future__ import annotations

import gzip
import urllib.error
import urllib.request

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

EXPORT_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def span(
    trace_id: str,
    span_id: str,
    parent: str = "",
    name: str = "step",
    *,
    attrs: dict | None = None,
    error: bool = False,
    start: int = 1_700_000_000_000_000_000,
    duration_ns: int = 1_000_000,
) -> Span:
    result = Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=bytes.fromhex(span_id),
        parent_span_id=bytes.fromhex(parent) if parent else b"",
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=start + duration_ns,
    )
    for key, value in (attrs or {}).items():
        any_value = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=str(value))
        result.attributes.append(KeyValue(key=key, value=any_value))
    if error:
        result.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="boom"))
    return result


def request(spans: list[Span], service: str = "raw-agent") -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = ResourceSpans()
    rs.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value=service)))
    ss = ScopeSpans()
    ss.spans.extend(spans)
    rs.scope_spans.append(ss)
    req.resource_spans.append(rs)
    return req


def post(
    port: int,
    body: bytes,
    content_type: str = "application/x-protobuf",
    *,
    gzip_body: bool = False,
    headers: dict[str, str] | None = None,
    path: str = "/v1/traces",
) -> tuple[int, bytes, dict[str, str]]:
    all_headers = {"Content-Type": content_type, **(headers or {})}
    if gzip_body:
        body = gzip.compress(body)
        all_headers["Content-Encoding"] = "gzip"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=all_headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def grpc_export(port: int, payload: bytes, metadata: tuple = ()) -> ExportTraceServiceResponse:
    """Raw bytes to TraceService/Export; raises grpc.RpcError on a non-OK status."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            EXPORT_PATH, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        return call(payload, timeout=10, metadata=metadata)
