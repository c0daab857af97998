"""A request's line and headers must arrive within `header_timeout` (receivers.http.header_timeout,
metrics.header_timeout; monitor/web/header_timeout.py): on the daemon's own OTLP/HTTP receiver and metrics/API
port, served on 127.0.0.1, a raw socket that sends a partial request line or partial headers is closed after the
(test-set, short) timeout; a complete request, and a slow body after complete headers, are not cut by it."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.config import load_config
from monitor.daemon import Daemon

pytestmark = pytest.mark.integration  # each test starts a process or a server

TIMEOUT = 0.5
CONFIG = f"""\
receivers:
  grpc: {{enabled: false}}
  http: {{host: 127.0.0.1, port: 0, header_timeout: {TIMEOUT}s}}
metrics: {{host: 127.0.0.1, port: 0, header_timeout: {TIMEOUT}s}}
store: {{enabled: false}}
"""
BOUND = 10.0  # seconds any wait here may take


class Servers:
    """The daemon's OTLP/HTTP receiver and API server, served from a loop in a thread."""

    def __init__(self, tmp_path: Path) -> None:
        path = tmp_path / "config.yaml"
        path.write_text(CONFIG, encoding="utf-8")
        self.daemon = Daemon(load_config(path, env={}))
        assert self.daemon.http is not None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coroutine) -> object:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def __enter__(self) -> Servers:
        self.thread.start()
        assert self.daemon.http is not None
        self.run(self.daemon.http.start())
        self.run(self.daemon.api.start())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.daemon.http is not None
        self.run(self.daemon.http.shutdown(0.5))
        self.run(self.daemon.api.shutdown(0.5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def ports(self) -> dict[str, int]:
        assert self.daemon.http is not None
        return {"otlp-http": self.daemon.http.bound_port, "api": self.daemon.api.bound_port}


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    with Servers(tmp_path) as served:
        yield served


def closed_after(sock: socket.socket) -> tuple[float, bytes]:
    """(seconds until the server closed `sock`, what it sent before), waiting at most BOUND."""
    start = time.monotonic()
    sock.settimeout(BOUND)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return BOUND, received
    except ConnectionResetError:
        pass
    return time.monotonic() - start, received


PARTIAL = {
    "request line": b"POST /v1/tra",
    "headers": b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
}


@pytest.mark.parametrize("server", ["otlp-http", "api"])
@pytest.mark.parametrize("partial", list(PARTIAL), ids=str)
def test_a_partial_request_is_closed_after_the_header_timeout(servers: Servers, server: str, partial: str) -> None:
    assert servers.daemon.config.receivers.http.header_timeout == TIMEOUT
    assert servers.daemon.config.metrics.header_timeout == TIMEOUT
    with socket.create_connection(("127.0.0.1", servers.ports()[server]), timeout=BOUND) as sock:
        sock.sendall(PARTIAL[partial])
        waited, received = closed_after(sock)
    assert waited < BOUND, f"{server} held a partial {partial} for {BOUND}s"
    assert waited >= TIMEOUT * 0.8 and received == b""  # cut by the timer, not refused at once


def test_complete_requests_and_a_slow_body_are_not_cut(servers: Servers) -> None:
    ports = servers.ports()
    with socket.create_connection(("127.0.0.1", ports["api"]), timeout=BOUND) as sock:
        for piece in (b"GET /healthz HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):  # in time, in pieces
            sock.sendall(piece)
            time.sleep(TIMEOUT / 4)
        sock.settimeout(BOUND)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    with socket.create_connection(("127.0.0.1", ports["otlp-http"]), timeout=BOUND) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 2\r\n\r\n"
        )
        time.sleep(TIMEOUT * 2)  # the body is slower than the header timeout, within read_idle_timeout
        sock.sendall(b"\x0a\x00")  # an ExportTraceServiceRequest with one empty ResourceSpans
        sock.settimeout(BOUND)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
