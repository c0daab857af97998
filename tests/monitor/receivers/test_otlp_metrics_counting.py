"""The OTLP metrics receiver path counts a request's data points (every kind of metric, protobuf and JSON) from a
cut-down message that skips everything else, and calls anything else malformed without counting."""

from __future__ import annotations

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from monitor.consumer import Outcome
from monitor.receivers.otlp_metrics import MalformedMetrics, data_points, drop_metrics


def request() -> ExportMetricsServiceRequest:
    """Two resources; 2 sum + 1 gauge + 3 histogram + 1 exponential histogram + 2 summary points, and a metric
    without data."""
    message = ExportMetricsServiceRequest()
    first = message.resource_metrics.add()
    first.resource.attributes.add(key="service.name").value.string_value = "adk-agent"
    scope = first.scope_metrics.add()
    scope.scope.name = "agent"
    total = scope.metrics.add(name="calls", unit="1")
    for value in (1, 2):
        point = total.sum.data_points.add(as_int=value)
        point.attributes.add(key="tool").value.string_value = f"tool{value}"
    scope.metrics.add(name="temperature").gauge.data_points.add(as_double=21.5)
    scope.metrics.add(name="empty")
    second = message.resource_metrics.add().scope_metrics.add()
    latency = second.metrics.add(name="latency")
    for count in (1, 2, 3):
        latency.histogram.data_points.add(count=count, bucket_counts=[count], explicit_bounds=[])
    second.metrics.add(name="sizes").exponential_histogram.data_points.add(count=1, scale=2)
    summary = second.metrics.add(name="durations").summary
    summary.data_points.add(count=1)
    summary.data_points.add(count=2)
    return message


def test_every_kind_of_point_counts_in_protobuf_and_json() -> None:
    message = request()
    assert data_points(message.SerializeToString(), "protobuf") == 9
    assert data_points(json_format.MessageToJson(message).encode(), "json") == 9
    names = json_format.MessageToJson(message, preserving_proto_field_name=True).encode()
    assert data_points(names, "json") == 9  # snake_case field names, as the proto3 JSON mapping allows
    assert data_points(b"", "protobuf") == 0 and data_points(b"{}", "json") == 0


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (b"\xff\xff\xff", "protobuf"),
        (b"\x0a\x05\x12\x03", "protobuf"),  # a length past the end
        (b"not json", "json"),
        (b"[1, 2]", "json"),
        (b'{"resourceMetrics": 3}', "json"),
        (b'{"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"sum": {"dataPoints": [7]}}]}]}]}', "json"),
        (b"[" * 100_000 + b"]" * 100_000, "json"),
    ],
)
def test_anything_else_is_malformed_and_counts_nothing(body: bytes, encoding: str) -> None:
    with pytest.raises(MalformedMetrics):
        data_points(body, encoding)
    counted: list[int] = []
    outcome = drop_metrics(body, encoding, counted.append)
    assert outcome.outcome is Outcome.MALFORMED and "invalid OTLP metrics request" in outcome.message
    assert counted == []


def test_an_accepted_request_counts_its_points_once() -> None:
    counted: list[int] = []
    outcome = drop_metrics(request().SerializeToString(), "protobuf", counted.append)
    assert outcome.outcome is Outcome.ACCEPTED and (outcome.accepted, outcome.rejected) == (0, 0)
    assert counted == [9]
