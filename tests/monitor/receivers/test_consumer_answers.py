"""Both receivers answer as their consumer says and count it in their own telemetry, against a `TracesSink`
(no engine): accepted with a partial success, throttled (the OTLP retry answer), malformed; and what they pass
the consumer (encoding, signal, the decompressed bytes)."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from prometheus_client import CollectorRegistry

from monitor.auth import BearerAuth
from monitor.config import GrpcReceiverConfig, ReceiversConfig
from monitor.consumer import IngestOutcome, Outcome
from monitor.metrics.intake import IntakeMetrics
from monitor.receivers.grpc_receiver import GrpcReceiver
from tests.monitor.receivers.test_otlp_http import Receiver, payload
from tests.support.sink import TracesSink

pytestmark = pytest.mark.integration  # each test starts a process or a server

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
PARTIAL = IngestOutcome(
    Outcome.ACCEPTED, accepted=1, rejected=2, message="2 spans with invalid ids", refused=[("invalid_id", 2)],
    dropped_attributes=3,
)  # fmt: skip


@pytest.fixture
def http() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


def test_http_passes_the_decompressed_body_with_its_encoding_and_signal(http):
    body = payload(2)
    assert http.post(gzip.compress(body), {"Content-Encoding": "gzip"})[0] == 200
    conn = http.connection()
    try:
        conn.request("POST", "/v1/logs", body=b"{}", headers={"Content-Type": "application/json"})
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    [first, second] = http.sink.requests
    assert (first.payload, first.encoding, first.signal, first.receiver) == (body, "protobuf", "traces", "http")
    assert (second.encoding, second.signal) == ("json", "logs")
    assert http.sink.span_count == 2 == http.received()


def test_http_counts_what_the_consumer_accepted_refused_and_dropped(http):
    http.sink.answer_with(PARTIAL)
    status, body, _ = http.post(payload())
    assert status == 200
    answer = ExportTraceServiceResponse.FromString(body)
    assert answer.partial_success.rejected_spans == 2 and "invalid ids" in answer.partial_success.error_message
    assert http.received() == 1 and http.refused("invalid_id") == 2 and http.requests("OK") == 1
    assert http.sample("agent_monitor_attributes_dropped_total", reason="too_deep") == 3


def test_http_throttled_by_the_consumer_gets_503_with_retry_after(http):
    http.sink.throttle("evaluation is behind", retry_after_seconds=2.5, spans=7)
    status, body, response = http.post(payload())
    assert status == 503 and response.getheader("Retry-After") == "3"
    assert status_pb2.Status.FromString(body).code == 14
    assert http.refused("throttled") == 7 and http.requests("UNAVAILABLE") == 1 and http.received() == 0
    http.sink.throttle(retry_after_seconds=0.25)
    assert http.post(payload())[2].getheader("Retry-After") == "1"  # never under a second


def test_http_malformed_by_the_consumer_gets_400(http):
    http.sink.malform("bad bytes")
    status, body, _ = http.post(payload())
    assert status == 400 and status_pb2.Status.FromString(body).message == "bad bytes"
    assert http.refused("malformed") == 1 and http.requests("INVALID_ARGUMENT") == 1


def _grpc(sink: TracesSink, body) -> CollectorRegistry:
    registry = CollectorRegistry()

    async def main() -> None:
        config = ReceiversConfig(grpc=GrpcReceiverConfig(host="127.0.0.1", port=0))
        receiver = GrpcReceiver(config, sink, auth=BearerAuth(), telemetry=IntakeMetrics(registry).receiver("grpc"))
        await receiver.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{receiver.bound_port}") as channel:
                await asyncio.wait_for(body(channel), timeout=30)
        finally:
            await receiver.shutdown(grace=0.5)

    asyncio.run(main())
    return registry


def _count(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, {"receiver": "grpc", **labels}) or 0.0


def test_grpc_answers_as_the_consumer_says_and_counts_it():
    sink = TracesSink()

    async def body(channel: grpc.aio.Channel) -> None:
        call = channel.unary_unary(TRACES)
        answer = ExportTraceServiceResponse.FromString(await call(payload(2), timeout=10))
        assert not answer.HasField("partial_success")
        assert await channel.unary_unary(LOGS)(ExportLogsServiceRequest().SerializeToString(), timeout=10) == b""
        sink.answer_with(PARTIAL)
        answer = ExportTraceServiceResponse.FromString(await call(payload(), timeout=10))
        assert answer.partial_success.rejected_spans == 2
        sink.throttle("evaluation is behind", retry_after_seconds=1.5, spans=5)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(payload(), timeout=10)
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
        retry = error_details_pb2.RetryInfo.FromString(
            dict(caught.value.trailing_metadata())["google.rpc.retryinfo-bin"]
        )
        assert (retry.retry_delay.seconds, retry.retry_delay.nanos) == (1, 500_000_000)
        sink.malform("bad bytes")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(payload(), timeout=10)
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT and caught.value.details() == "bad bytes"

    registry = _grpc(sink, body)
    assert [(r.encoding, r.signal) for r in sink.requests][:2] == [("protobuf", "traces"), ("protobuf", "logs")]
    assert _count(registry, "agent_monitor_spans_received_total") == 2 + 1
    assert _count(registry, "agent_monitor_spans_refused_total", reason="invalid_id") == 2
    assert _count(registry, "agent_monitor_spans_refused_total", reason="throttled") == 5
    assert _count(registry, "agent_monitor_spans_refused_total", reason="malformed") == 1
    assert _count(registry, "agent_monitor_attributes_dropped_total", reason="too_deep") == 3
    assert _count(registry, "agent_monitor_requests_total", code="OK") == 3
    assert _count(registry, "agent_monitor_requests_total", code="UNAVAILABLE") == 1
    assert _count(registry, "agent_monitor_requests_total", code="INVALID_ARGUMENT") == 1
