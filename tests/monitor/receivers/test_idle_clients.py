"""Idle exporters cannot stop ingest: issue 23, defect 1, on the daemon's own receivers and default limits.

Four OTLP/gRPC Export calls whose message never comes and four OTLP/HTTP POSTs that declare 16 MiB and
send nothing are open at once against the receivers the daemon builds from the DEFAULT config (one
64 MiB in-flight budget, 16 MiB requests, read timeouts). Meanwhile the real OTel SDK exporters export
on both protocols and succeed; then the idle requests are cut by the read timeouts and counted.
Waits are bounded polls on the receivers' own state; no timing is asserted.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from monitor.config import load_config
from monitor.daemon import Daemon

pytestmark = pytest.mark.integration  # each test starts a process or a server

IDLE = 4
METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HEAD = (
    b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 16777216\r\n\r\n"
)
CONFIG = """\
receivers:
  grpc: {host: 127.0.0.1, port: 0}
  http: {host: 127.0.0.1, port: 0}
metrics: {host: 127.0.0.1, port: 0}
store: {enabled: false}
"""


def until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def finished_spans(count: int) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("idle-clients-test")
    for index in range(count):
        with tracer.start_as_current_span(f"agent-{index}"), tracer.start_as_current_span("llm"):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


class Receivers:
    """The daemon's two receivers (built by `Daemon` from the default config), served from a loop in a thread."""

    def __init__(self, tmp_path: Path) -> None:
        path = tmp_path / "config.yaml"
        path.write_text(CONFIG, encoding="utf-8")
        self.daemon = Daemon(load_config(path, env={}))
        assert self.daemon.grpc is not None and self.daemon.http is not None
        self.grpc, self.http = self.daemon.grpc, self.daemon.http
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coroutine) -> object:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def __enter__(self) -> Receivers:
        self.thread.start()
        self.run(self.grpc.start())
        self.run(self.http.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.run(self.grpc.shutdown(0.5))
        self.run(self.http.shutdown(0.5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def count(self, name: str, **labels: str) -> float:
        return self.daemon.metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
def receivers(tmp_path: Path) -> Iterator[Receivers]:
    with Receivers(tmp_path) as served:
        yield served


def read_answer(sock: socket.socket, seconds: float) -> bytes:
    sock.settimeout(seconds)
    data = b""
    try:
        while b"\r\n\r\n" not in data and (chunk := sock.recv(4096)):
            data += chunk
    except TimeoutError:
        pass
    return data


def test_four_idle_calls_on_each_protocol_stop_no_one_else_and_are_cut_after_the_read_timeouts(receivers):
    config = receivers.daemon.config.receivers
    assert config.max_inflight_bytes == 64 << 20 and config.grpc.max_message_bytes == 16 << 20  # the defaults
    budget = receivers.daemon.inflight
    never = threading.Event()

    def nothing() -> Iterator[bytes]:
        never.wait(60)
        return
        yield b""

    channel = grpc.insecure_channel(f"127.0.0.1:{receivers.grpc.bound_port}")
    sockets = [socket.create_connection(("127.0.0.1", receivers.http.bound_port), timeout=5) for _ in range(IDLE)]
    try:
        idle_calls = [channel.stream_unary(METHOD).future(nothing(), timeout=60) for _ in range(IDLE)]
        for sock in sockets:
            sock.sendall(HEAD)
        assert until(lambda: receivers.grpc.reads.in_use == IDLE and receivers.http.handler.reading == IDLE)
        assert budget.in_use == 0  # waiting requests hold no bytes

        grpc_exporter = GrpcSpanExporter(endpoint=f"127.0.0.1:{receivers.grpc.bound_port}", insecure=True, timeout=5)
        http_exporter = HttpSpanExporter(endpoint=f"http://127.0.0.1:{receivers.http.bound_port}/v1/traces", timeout=5)
        try:
            for _ in range(3):  # fresh spans each time (a repeated span id is a duplicate, not received)
                assert grpc_exporter.export(finished_spans(2)) is SpanExportResult.SUCCESS
                assert http_exporter.export(finished_spans(2)) is SpanExportResult.SUCCESS
        finally:
            grpc_exporter.shutdown()
            http_exporter.shutdown()
        # The idle requests were still open all along.
        assert receivers.grpc.reads.in_use == IDLE and receivers.http.handler.reading == IDLE
        assert receivers.count("agent_monitor_spans_received_total", receiver="grpc") == 3 * 4
        assert receivers.count("agent_monitor_spans_received_total", receiver="http") == 3 * 4
        assert receivers.count("agent_monitor_requests_total", receiver="grpc", code="UNAVAILABLE") == 0
        assert receivers.count("agent_monitor_requests_total", receiver="http", code="UNAVAILABLE") == 0

        # Then the read timeouts cut them: 408 and a closed connection over HTTP, DEADLINE_EXCEEDED over gRPC.
        for sock in sockets:
            assert read_answer(sock, config.read_idle_timeout + 10).startswith(b"HTTP/1.1 408")
        for call in idle_calls:
            error = call.exception(timeout=config.read_timeout + 10)
            assert error is not None and error.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        never.set()
        for sock in sockets:
            sock.close()
        channel.close()
    for receiver in ("grpc", "http"):
        assert receivers.count("agent_monitor_spans_refused_total", receiver=receiver, reason="timeout") == IDLE
        assert receivers.count("agent_monitor_requests_total", receiver=receiver, code="DEADLINE_EXCEEDED") == IDLE
    assert until(lambda: receivers.grpc.reads.in_use == 0 and receivers.http.handler.reading == 0)
    assert budget.in_use == 0
