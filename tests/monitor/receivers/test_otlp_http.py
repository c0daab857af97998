"""The OTLP/HTTP receiver on aiohttp, in process on 127.0.0.1: the HTTP behaviour that matters to exporters.

Keep-alive, chunked uploads, 413 before the body (and readable by a client that writes the whole body
first), 400/415 answers, gzip, refusals decided from the headers before the body is read (token, type,
length, room in the in-flight budget) with `100 Continue` only after them, body bytes reserved as they
arrive, 408 for a body that stalls or trickles, and the requests_total code vocabulary. The receiver feeds a
`TracesSink` (no engine).
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from prometheus_client import CollectorRegistry

from monitor.auth import BearerAuth
from monitor.config import HttpReceiverConfig, ReceiversConfig
from monitor.consumer import grpc_code_of_http
from monitor.metrics.intake import IntakeMetrics
from monitor.receivers.http_receiver import HttpReceiver
from monitor.receivers.inflight import InflightBytes
from tests.integration.otlp_raw import request, span
from tests.support.sink import TracesSink

TOKEN = "s3cret"
LIMIT = 1024 * 1024
PROTOBUF = {"Content-Type": "application/x-protobuf"}
HEAD = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"


def payload(n: int = 1) -> bytes:
    return request([span(f"{n:032x}", f"{i + 1:016x}") for i in range(n)]).SerializeToString()


async def _cancel_remaining_tasks() -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class Receiver:
    """HttpReceiver feeding a TracesSink, serving from an event loop in a thread (so tests may block)."""

    def __init__(
        self,
        *,
        token: str | None = None,
        inflight: InflightBytes | None = None,
        read_timeout: float = 20.0,
        idle_timeout: float = 20.0,
    ) -> None:
        self.registry = CollectorRegistry()
        self.sink = TracesSink()
        self.inflight = inflight
        self.loop = asyncio.new_event_loop()
        config = ReceiversConfig(
            http=HttpReceiverConfig(host="127.0.0.1", port=0, max_body_bytes=LIMIT),
            read_timeout=read_timeout,
            read_idle_timeout=idle_timeout,
        )
        self.receiver = HttpReceiver(
            config,
            self.sink,
            auth=BearerAuth(token),
            telemetry=IntakeMetrics(self.registry).receiver("http"),
            inflight=inflight,
        )
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.receiver.start(), self.loop).result(10)
        self.port = self.receiver.bound_port
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.receiver.shutdown(0.5), self.loop).result(10)
        # As asyncio.run does: finish what is left (a connection's handler), so no task is destroyed pending
        # when the closed loop is collected later, in the middle of another test.
        asyncio.run_coroutine_threadsafe(_cancel_remaining_tasks(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def post(self, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes, http.client.HTTPResponse]:
        conn = self.connection()
        try:
            conn.request("POST", "/v1/traces", body=body, headers={**PROTOBUF, **(headers or {})})
            response = conn.getresponse()
            return response.status, response.read(), response
        finally:
            conn.close()

    def raw(self, data: bytes, *, until: bytes = b"\r\n\r\n") -> tuple[socket.socket, bytes]:
        """Send raw bytes and read until `until` (or close / 5 s); the socket stays open for the caller."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.sendall(data)
        return sock, read_until(sock, until)

    def sample(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, {"receiver": "http", **labels}) or 0.0

    def requests(self, code: str) -> float:
        return self.sample("agent_monitor_requests_total", code=code)

    def refused(self, reason: str) -> float:
        return self.sample("agent_monitor_spans_refused_total", reason=reason)

    def received(self) -> float:
        return self.sample("agent_monitor_spans_received_total")


def read_until(sock: socket.socket, marker: bytes, deadline_seconds: float = 5.0) -> bytes:
    data = b""
    deadline = time.monotonic() + deadline_seconds
    while marker not in data and time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


@pytest.mark.integration
def test_keep_alive_serves_several_exports_on_one_connection(receiver):
    conn = receiver.connection()
    try:
        for n in (1, 2, 3):
            conn.request("POST", "/v1/traces", body=payload(n), headers=PROTOBUF)
            response = conn.getresponse()
            assert response.status == 200 and not response.will_close
            ExportTraceServiceResponse.FromString(response.read())
            if n == 1:
                first_socket = conn.sock
            assert conn.sock is first_socket  # the same TCP connection each time
    finally:
        conn.close()
    assert receiver.received() == 6


@pytest.mark.integration
def test_chunked_upload_is_reassembled(receiver):
    body = payload(3)
    conn = receiver.connection()
    try:
        pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
        conn.request("POST", "/v1/traces", body=iter(pieces), headers=PROTOBUF, encode_chunked=True)
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    assert receiver.received() == 3


@pytest.mark.integration
def test_413_before_the_body_is_readable_by_a_client_that_writes_the_whole_body_first(receiver):
    # http.client sends headers and the whole 4 MiB body, then reads: it must see the 413, not a reset.
    status, body, _ = receiver.post(b"\0" * (4 * LIMIT))
    assert status == 413 and b"too large" in body
    assert receiver.refused("too_large") == 1
    assert receiver.requests("RESOURCE_EXHAUSTED") == 1
    assert receiver.post(payload())[0] == 200  # and the receiver goes on serving


@pytest.mark.integration
def test_chunked_body_over_the_limit_gets_413(receiver):
    conn = receiver.connection()
    try:
        chunks = (b"\0" * 65536 for _ in range(2 * LIMIT // 65536))
        conn.request("POST", "/v1/traces", body=chunks, headers=PROTOBUF, encode_chunked=True)
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    assert receiver.refused("too_large") == 1


@pytest.mark.integration
def test_malformed_bodies_get_400_with_a_status(receiver):
    status, body, _ = receiver.post(b"\xff" * 50)
    assert status == 400 and status_pb2.Status.FromString(body).message
    status, body, _ = receiver.post(b"{not json", {"Content-Type": "application/json"})
    assert status == 400 and b"message" in body
    status, body, _ = receiver.post(b"not gzip at all", {"Content-Encoding": "gzip"})
    assert status == 400 and "gzip" in status_pb2.Status.FromString(body).message
    assert receiver.requests("INVALID_ARGUMENT") == 3


@pytest.mark.integration
def test_malformed_http_gets_400_without_an_error_traceback_in_the_log(receiver, caplog):
    caplog.set_level(logging.DEBUG)
    bad_chunk = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    for raw in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nno-colon-here\r\n\r\n", bad_chunk + b"zz\r\nabc\r\n0\r\n\r\n"):
        sock, data = receiver.raw(raw)
        sock.close()
        assert data.split(b"\r\n")[0].endswith(b" 400 Bad Request"), data
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or (r.levelno >= logging.WARNING and r.exc_info)]
    assert not loud
    assert receiver.post(payload())[0] == 200


@pytest.mark.integration
def test_unsupported_content_type_or_encoding_gets_415(receiver):
    assert receiver.post(payload(), {"Content-Type": "text/plain"})[0] == 415
    assert receiver.post(payload(), {"Content-Encoding": "br"})[0] == 415
    assert receiver.refused("malformed") == 2 and receiver.requests("INVALID_ARGUMENT") == 2


@pytest.mark.integration
def test_gzip_is_accepted_and_a_gzip_bomb_gets_413(receiver):
    assert receiver.post(gzip.compress(payload(2)), {"Content-Encoding": "gzip"})[0] == 200
    bomb = gzip.compress(b"\0" * (4 * LIMIT))
    assert len(bomb) < LIMIT
    assert receiver.post(bomb, {"Content-Encoding": "gzip"})[0] == 413
    assert receiver.received() == 2


@pytest.mark.integration
def test_json_export_gets_a_json_answer(receiver):
    body = b'{"resourceSpans": []}'
    status, answer, response = receiver.post(body, {"Content-Type": "application/json"})
    assert status == 200 and response.getheader("Content-Type").startswith("application/json")
    assert answer.startswith(b"{")


@pytest.mark.integration
def test_unknown_path_and_method(receiver):
    conn = receiver.connection()
    try:
        conn.request("GET", "/v1/traces")
        response = conn.getresponse()
        response.read()
        assert response.status == 405 and response.getheader("Allow") == "POST"
        conn.request("POST", "/v1development/profiles", body=b"", headers=PROTOBUF)  # metrics: accepted, dropped
        assert conn.getresponse().status == 404
    finally:
        conn.close()
    assert receiver.requests("UNIMPLEMENTED") == 2


@pytest.mark.integration
def test_token_is_checked_before_the_body_is_read():
    with Receiver(token=TOKEN) as receiver:
        # Headers announce 16 MiB; not a byte of body is sent: the answer must not wait for it.
        sock, data = receiver.raw(HEAD + b"Content-Length: 16777216\r\n\r\n")
        sock.close()
        assert data.startswith(b"HTTP/1.1 401"), data
        assert b"WWW-Authenticate: Bearer" in data
        assert receiver.requests("UNAUTHENTICATED") == 1
        assert receiver.post(payload(), {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert receiver.post(payload(), {"Authorization": "Bearer wrong"})[0] == 401


@pytest.mark.integration
def test_100_continue_only_after_the_checks():
    with Receiver(token=TOKEN) as receiver:
        body = payload()
        head = HEAD + b"Expect: 100-continue\r\nContent-Length: %d\r\n" % len(body)
        sock, data = receiver.raw(head + b"\r\n")  # no token
        sock.close()
        assert data.startswith(b"HTTP/1.1 401") and b"100 Continue" not in data, data
        sock, data = receiver.raw(head + b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
        try:
            assert data.startswith(b"HTTP/1.1 100 Continue"), data
            sock.sendall(body)
            assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 200")
        finally:
            sock.close()


@pytest.mark.integration
def test_declared_length_over_the_limit_is_refused_before_the_body():
    with Receiver() as receiver:
        sock, data = receiver.raw(HEAD + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (LIMIT + 1))
        sock.close()
        assert data.startswith(b"HTTP/1.1 413") and b"100 Continue" not in data, data


def wait_for(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.mark.integration
def test_body_bytes_are_reserved_as_they_arrive_and_refused_past_the_budget():
    inflight = InflightBytes(LIMIT)
    with Receiver(inflight=inflight) as receiver:
        body = payload()
        idle = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        slow = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        try:
            # A request that declares the whole budget and sends nothing holds nothing...
            idle.sendall(HEAD + b"Content-Length: %d\r\n\r\n" % LIMIT)
            assert wait_for(lambda: receiver.receiver.handler.reading == 1)
            assert inflight.in_use == 0
            assert receiver.post(body)[0] == 200  # ...so the others go on exporting
            # One whose body is on its way holds what has arrived.
            slow.sendall(HEAD + b"Content-Length: %d\r\n\r\n" % LIMIT + b"\0" * (LIMIT - 100))
            assert wait_for(lambda: inflight.in_use == LIMIT - 100)
            # A declared length the budget cannot take is refused before its body: 503 + Retry-After.
            status, answer, response = receiver.post(b"\0" * 200)
            assert status == 503 and response.getheader("Retry-After") == "1"
            assert status_pb2.Status.FromString(answer).code == 14
            # A chunked body (no declared length) is refused at the chunk the budget cannot take.
            conn = receiver.connection()
            try:
                conn.request("POST", "/v1/traces", body=iter([b"\0" * 4096]), headers=PROTOBUF, encode_chunked=True)
                response = conn.getresponse()
                assert response.status == 503 and response.getheader("Retry-After") == "1"
            finally:
                conn.close()
            assert receiver.refused("throttled") == 2 and receiver.requests("UNAVAILABLE") == 2
            assert inflight.in_use == LIMIT - 100
        finally:
            idle.close()
            slow.close()  # the held requests end with their connections: their reservations are given back
        assert wait_for(lambda: inflight.in_use == 0 and receiver.receiver.handler.reading == 0)
        assert receiver.post(body)[0] == 200
        assert inflight.in_use == 0


@pytest.mark.integration
def test_a_body_that_stalls_is_cut_with_408_and_the_connection_closed():
    inflight = InflightBytes(LIMIT)
    with Receiver(inflight=inflight, idle_timeout=0.3) as receiver:
        for sent in (b"", b"\0" * 1000):  # nothing at all, or a part and then nothing
            sock, data = receiver.raw(HEAD + b"Content-Length: %d\r\n\r\n" % LIMIT + sent)
            try:
                assert data.startswith(b"HTTP/1.1 408"), data
                assert read_until(sock, b"never") == b""  # closed, not drained
            finally:
                sock.close()
        assert receiver.refused("timeout") == 2 and receiver.requests("DEADLINE_EXCEEDED") == 2
        assert inflight.in_use == 0 and receiver.receiver.handler.reading == 0
        assert receiver.post(payload())[0] == 200


@pytest.mark.integration
def test_a_body_that_trickles_is_cut_after_the_read_timeout():
    with Receiver(inflight=InflightBytes(LIMIT), read_timeout=0.5, idle_timeout=5) as receiver:
        sock = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
        stop = threading.Event()

        def trickle() -> None:
            try:
                sock.sendall(HEAD + b"Content-Length: %d\r\n\r\n" % LIMIT)
                for _ in range(200):  # one byte every 20 ms: never idle, never done
                    if stop.wait(0.02):
                        return
                    sock.sendall(b"\0")
            except OSError:
                pass

        sender = threading.Thread(target=trickle)
        sender.start()
        try:
            assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 408")
        finally:
            stop.set()
            sender.join(10)
            sock.close()
        assert receiver.refused("timeout") == 1
        assert wait_for(lambda: receiver.inflight.in_use == 0)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (200, "OK"),
        (400, "INVALID_ARGUMENT"),
        (415, "INVALID_ARGUMENT"),
        (401, "UNAUTHENTICATED"),
        (404, "UNIMPLEMENTED"),
        (405, "UNIMPLEMENTED"),
        (413, "RESOURCE_EXHAUSTED"),
        (429, "UNAVAILABLE"),
        (503, "UNAVAILABLE"),
        (500, "INTERNAL"),
        (418, "UNKNOWN"),
    ],
)
def test_http_answers_are_counted_under_grpc_status_names(status, code):
    assert grpc_code_of_http(status) == code
