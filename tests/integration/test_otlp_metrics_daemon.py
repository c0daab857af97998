"""OTLP metrics sent to a real daemon's receivers by the real OpenTelemetry SDK metric exporters (gRPC and HTTP,
plain and gzip): accepted as a Collector without a metrics pipeline accepts them (the export succeeds, the
exporter logs nothing), their data points counted in `agent_monitor_metric_points_dropped_total{receiver}`, under
the receivers' token; OTLP/JSON gets a JSON ExportMetricsServiceResponse, a malformed or oversized request the
same refusals as traces."""

from __future__ import annotations

import gzip
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess

pytestmark = pytest.mark.integration

TOKEN = "metrics-test-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
DROPPED = "agent_monitor_metric_points_dropped_total"
MAX_BYTES = 256 * 1024  # both receivers' size limit here
EXPORT_METHOD = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    workdir = tmp_path_factory.mktemp("metrics-daemon")
    config = {
        "receivers": {
            "auth": {"bearer_token": TOKEN},
            "grpc": {"max_message_bytes": MAX_BYTES},
            "http": {"max_body_bytes": MAX_BYTES},
        },
        "evaluators": [{"name": "error_free"}],
    }
    with DaemonProcess(workdir, config, env=project_env()) as process:
        yield process


def _instrumented(reader) -> MeterProvider:
    """A meter provider whose instruments hold 6 data points: a counter over two tools, a histogram, an
    up-down counter, an observable gauge over two rooms."""
    provider = MeterProvider(metric_readers=[reader], resource=Resource({"service.name": "adk-agent"}))
    meter = provider.get_meter("agent", "1.0")
    calls = meter.create_counter("tool.calls")
    calls.add(1, {"tool": "get_weather"})
    calls.add(2, {"tool": "book_flight"})
    meter.create_histogram("llm.latency", unit="s").record(0.25, {"model": "gemini"})
    meter.create_up_down_counter("sessions.open").add(3)

    def rooms(options: CallbackOptions) -> list[Observation]:
        return [Observation(21.5, {"room": "a"}), Observation(19.0, {"room": "b"})]

    meter.create_observable_gauge("temperature", callbacks=[rooms])
    return provider


def _metrics_data() -> tuple[MetricsData, int]:
    """What the SDK collects from `_instrumented`, and its data points counted from the SDK's own objects."""
    reader = InMemoryMetricReader()
    provider = _instrumented(reader)
    data = reader.get_metrics_data()
    provider.shutdown()
    assert data is not None
    points = sum(
        len(list(metric.data.data_points))
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    )
    assert points == 6
    return data, points


def _exporter(daemon: DaemonProcess, receiver: str, headers: dict[str, str] | None, gzipped: bool):
    if receiver == "grpc":
        compression = grpc.Compression.Gzip if gzipped else grpc.Compression.NoCompression
        endpoint = f"127.0.0.1:{daemon.grpc_port}"
        return GrpcMetricExporter(
            endpoint=endpoint, insecure=True, headers=headers, compression=compression, timeout=10
        )
    endpoint = f"http://127.0.0.1:{daemon.http_port}/v1/metrics"
    compression = Compression.Gzip if gzipped else Compression.NoCompression
    return HttpMetricExporter(endpoint=endpoint, headers=headers, compression=compression, timeout=10)


def _errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name.startswith("opentelemetry") and r.levelno >= logging.WARNING
    ]


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("receiver", ["grpc", "http"])
def test_the_sdk_exporters_succeed_and_the_points_are_counted_dropped(
    daemon: DaemonProcess, receiver: str, gzipped: bool, caplog: pytest.LogCaptureFixture
) -> None:
    data, points = _metrics_data()
    before = daemon.value(DROPPED, receiver=receiver)
    exporter = _exporter(daemon, receiver, AUTH, gzipped)
    caplog.set_level(logging.WARNING, logger="opentelemetry")
    try:
        assert exporter.export(data) is MetricExportResult.SUCCESS
        assert exporter.export(data) is MetricExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert daemon.value(DROPPED, receiver=receiver) - before == 2 * points
    assert not _errors_logged(caplog)
    assert daemon.value("agent_monitor_spans_received_total", receiver=receiver) == 0  # nothing taken for spans


@pytest.mark.parametrize("receiver", ["grpc", "http"])
def test_a_periodic_reader_exports_every_interval_without_an_error(
    daemon: DaemonProcess, receiver: str, caplog: pytest.LogCaptureFixture
) -> None:
    """As ADK runs it: the SDK's periodic reader, exporting every 200 ms, then at shutdown."""
    caplog.set_level(logging.WARNING, logger="opentelemetry")
    before = daemon.value(DROPPED, receiver=receiver)
    reader = PeriodicExportingMetricReader(_exporter(daemon, receiver, AUTH, False), export_interval_millis=200)
    provider = _instrumented(reader)
    time.sleep(1.0)
    provider.shutdown(timeout_millis=10_000)
    assert not _errors_logged(caplog)
    assert daemon.value(DROPPED, receiver=receiver) - before >= 3 * 6  # several intervals of 6 points


@pytest.mark.parametrize("receiver", ["grpc", "http"])
def test_without_the_token_the_export_fails_and_nothing_is_counted(daemon: DaemonProcess, receiver: str) -> None:
    data, _ = _metrics_data()
    dropped = daemon.value(DROPPED, receiver=receiver)
    refused = daemon.value("agent_monitor_spans_refused_total", receiver=receiver, reason="unauthenticated")
    for headers in (None, {"authorization": "Bearer wrong"}):
        exporter = _exporter(daemon, receiver, headers, False)
        try:
            assert exporter.export(data) is MetricExportResult.FAILURE
        finally:
            exporter.shutdown()
    assert daemon.value(DROPPED, receiver=receiver) == dropped
    after = daemon.value("agent_monitor_spans_refused_total", receiver=receiver, reason="unauthenticated")
    assert after - refused == 2
    assert daemon.value("agent_monitor_requests_total", receiver=receiver, code="UNAUTHENTICATED") >= 2


def _post(daemon: DaemonProcess, body: bytes, content_type: str, **headers: str) -> tuple[int, bytes, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{daemon.http_port}/v1/metrics",
        data=body,
        method="POST",
        headers={"Content-Type": content_type, **AUTH, **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers["Content-Type"]


def _request() -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    metric = request.resource_metrics.add().scope_metrics.add().metrics.add(name="tool.calls")
    for value in (1, 2, 3):
        metric.sum.data_points.add(as_int=value)
    metric = request.resource_metrics[0].scope_metrics[0].metrics.add(name="latency")
    metric.histogram.data_points.add(count=4, sum=1.0)
    return request


def test_otlp_json_gets_a_json_response_and_its_points_count(daemon: DaemonProcess) -> None:
    before = daemon.value(DROPPED, receiver="http")
    body = json_format.MessageToJson(_request()).encode()
    status, answer, content_type = _post(daemon, body, "application/json")
    assert (status, content_type) == (200, "application/json")
    json_format.Parse(answer, ExportMetricsServiceResponse())  # a valid response, and no partial_success
    assert "partialSuccess" not in json.loads(answer)
    status, answer, content_type = _post(
        daemon, gzip.compress(body), "application/json", **{"Content-Encoding": "gzip"}
    )
    assert status == 200
    assert daemon.value(DROPPED, receiver="http") - before == 2 * 4


def test_malformed_and_oversized_requests_are_refused_as_for_traces(daemon: DaemonProcess) -> None:
    before = daemon.value(DROPPED, receiver="http")
    status, answer, content_type = _post(daemon, b"\xff\xff\xff", "application/x-protobuf")
    assert (status, content_type) == (400, "application/x-protobuf")
    assert status_pb2.Status.FromString(answer).code == 3  # INVALID_ARGUMENT
    assert _post(daemon, b"[1, 2]", "application/json")[0] == 400
    assert _post(daemon, b"x" * (MAX_BYTES + 1), "application/x-protobuf")[0] == 413
    bomb = gzip.compress(_request().SerializeToString() + b"\x00" * (MAX_BYTES + 1))
    assert _post(daemon, bomb, "application/x-protobuf", **{"Content-Encoding": "gzip"})[0] == 413
    assert _post(daemon, b"{}", "text/plain")[0] == 415
    assert daemon.value(DROPPED, receiver="http") == before

    with grpc.insecure_channel(f"127.0.0.1:{daemon.grpc_port}") as channel:
        export = channel.unary_unary(EXPORT_METHOD)
        assert (
            ExportMetricsServiceResponse.FromString(
                export(_request().SerializeToString(), metadata=tuple(AUTH.items()), timeout=10)
            )
            == ExportMetricsServiceResponse()
        )
        for body, code in ((b"\xff\xff\xff", grpc.StatusCode.INVALID_ARGUMENT),
                           (b"\x00" * (MAX_BYTES + 1), grpc.StatusCode.RESOURCE_EXHAUSTED)):  # fmt: skip
            with pytest.raises(grpc.RpcError) as refused:
                export(body, metadata=tuple(AUTH.items()), timeout=10)
            assert refused.value.code() is code
    assert daemon.value(DROPPED, receiver="grpc") >= 4


def test_an_empty_request_is_answered_and_the_404_hint_names_metrics(daemon: DaemonProcess) -> None:
    status, body, _ = _post(daemon, b"", "application/x-protobuf")
    assert status == 200 and body == b""  # an empty request: no points, a valid (empty) response
    request = urllib.request.Request(f"http://127.0.0.1:{daemon.http_port}/v1/other", data=b"", method="POST")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(request, timeout=10)
    assert missing.value.code == 404 and b"/v1/metrics" in missing.value.read()
