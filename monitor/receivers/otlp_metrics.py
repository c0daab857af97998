"""OTLP metrics, answered as a Collector without a metrics pipeline would: accepted and dropped.

SDKs configured with `OTEL_EXPORTER_OTLP_ENDPOINT` export metrics there too (Google ADK does): an error answer
would have their exporter log a failure every interval. The receivers take `/v1/metrics` and the gRPC
MetricsService/Export through the same checks as traces and logs (token, size limits, gzip, in-flight budget),
count the request's data points, answer success (an empty ExportMetricsServiceResponse: nothing to retry or warn
about) and keep nothing. Counting reads only the nesting down to the data points (`_COUNTING`): the points, their
attributes and the resources are skipped, never decoded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse

from monitor.consumer import IngestOutcome, Outcome

SIGNAL = "metrics"
SERVICE_NAME = "opentelemetry.proto.collector.metrics.v1.MetricsService"
POINT_KINDS = {"gauge": 5, "sum": 7, "histogram": 9, "exponential_histogram": 10, "summary": 11}  # Metric's fields


def _counting_request() -> type[Message]:
    """ExportMetricsServiceRequest cut down to its path to the data points, with the real field numbers and JSON
    names (metrics.proto): Request.resource_metrics(1) → ResourceMetrics.scope_metrics(2) → ScopeMetrics.metrics(2)
    → Metric.gauge | sum | histogram | exponential_histogram | summary → .data_points(1). Every other field is
    unknown to it: skipped by the parser."""
    file = descriptor_pb2.FileDescriptorProto(name="agent_monitor/otlp_metrics_counting.proto", package="counting")
    repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    kind = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE

    def message(name: str, *fields: tuple[str, int, str, int]) -> None:
        proto = file.message_type.add(name=name)
        for field_name, number, type_name, label in fields:
            proto.field.add(name=field_name, number=number, type=kind, type_name=f".counting.{type_name}", label=label)

    message("Point")
    message("Points", ("data_points", 1, "Point", repeated))
    message("Metric", *((name, number, "Points", optional) for name, number in POINT_KINDS.items()))
    message("ScopeMetrics", ("metrics", 2, "Metric", repeated))
    message("ResourceMetrics", ("scope_metrics", 2, "ScopeMetrics", repeated))
    message("Request", ("resource_metrics", 1, "ResourceMetrics", repeated))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("counting.Request"))


_COUNTING = _counting_request()


class MalformedMetrics(Exception):
    pass


def data_points(payload: bytes, encoding: str) -> int:
    """The data points of one ExportMetricsServiceRequest body ("protobuf" or "json"); MalformedMetrics when it
    is not one."""
    request: Any = _COUNTING()  # a class built at run time: its fields are not known to the type checker
    try:
        if encoding == "json":
            document = json.loads(payload)
            if not isinstance(document, dict):
                raise MalformedMetrics("invalid OTLP metrics request: not a JSON object")
            json_format.ParseDict(document, request, ignore_unknown_fields=True)
        else:
            request.ParseFromString(payload)
    except (DecodeError, json_format.ParseError, ValueError, TypeError, AttributeError, RecursionError) as exc:
        raise MalformedMetrics(f"invalid OTLP metrics request: {str(exc)[:200]}") from None
    return sum(
        len(getattr(metric, kind).data_points)
        for resource in request.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for kind in POINT_KINDS
    )


def drop_metrics(payload: bytes, encoding: str, count_dropped: Callable[[int], None]) -> IngestOutcome:
    """Count the body's data points with `count_dropped(points)` and accept it; MALFORMED when it is not a metrics
    request (nothing counted). The receivers answer it as they answer traces."""
    try:
        points = data_points(payload, encoding)
    except MalformedMetrics as exc:
        return IngestOutcome(Outcome.MALFORMED, message=str(exc))
    count_dropped(points)
    return IngestOutcome(Outcome.ACCEPTED)


def response() -> ExportMetricsServiceResponse:
    """The success answer: no partial_success (the SDKs would log the rejected points at every interval)."""
    return ExportMetricsServiceResponse()
