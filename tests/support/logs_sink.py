"""Real OTLP log receivers for the evaluation export's tests: a gRPC LogsService (grpc server on 127.0.0.1, port 0)
and an OTLP/HTTP `/v1/logs` endpoint (http.server), each collecting the ExportLogsServiceRequests it gets."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord


class Collected:
    """The requests a sink received (thread-safe), and their log records flattened with their scope and resource."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self.requests: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self.headers: list[dict[str, str]] = []  # each request's headers (gRPC metadata), lowercase keys

    def add(self, request: logs_service_pb2.ExportLogsServiceRequest, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers or {})
            self._lock.notify_all()

    def records(self) -> list[tuple[Any, Any, LogRecord]]:
        """(resource, scope, record) of every record received."""
        with self._lock:
            requests = list(self.requests)
        return [
            (rl.resource, sl.scope, record)
            for request in requests
            for rl in request.resource_logs
            for sl in rl.scope_logs
            for record in sl.log_records
        ]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[Any, Any, LogRecord]]:
        """The records once at least `count` arrived (or what arrived within `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.records()
            if len(found) >= count or time.monotonic() >= deadline:
                return found
            with self._lock:
                self._lock.wait(0.05)


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, collected: Collected) -> None:
        self.collected = collected

    def Export(self, request: Any, context: Any) -> Any:
        self.collected.add(request, {key: str(value) for key, value in context.invocation_metadata()})
        return logs_service_pb2.ExportLogsServiceResponse()


@contextmanager
def grpc_logs_sink() -> Iterator[tuple[str, Collected]]:
    """A LogsService on 127.0.0.1: yields (endpoint `http://127.0.0.1:PORT`, what it collects)."""
    collected = Collected()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsService(collected), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", collected
    finally:
        server.stop(grace=None).wait(5)


@contextmanager
def http_logs_sink() -> Iterator[tuple[str, Collected]]:
    """An OTLP/HTTP logs endpoint on 127.0.0.1: yields (its `http://127.0.0.1:PORT/v1/logs` URL, what it collects)."""
    collected = Collected()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/logs":
                self.send_response(404)
                self.end_headers()
                return
            headers = {key.lower(): value for key, value in self.headers.items()}
            collected.add(logs_service_pb2.ExportLogsServiceRequest.FromString(body), headers)
            answer = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="logs-sink", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/logs", collected
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def attributes(record: LogRecord) -> dict[str, Any]:
    """A record's attributes as plain values."""
    values: dict[str, Any] = {}
    for kv in record.attributes:
        kind = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, kind) if kind else None
    return values
