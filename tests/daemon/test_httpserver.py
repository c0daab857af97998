"""The small asyncio HTTP/1.1 server: keep-alive, chunked bodies, limits, bad requests."""

from __future__ import annotations

import asyncio

import pytest

from monitor.httpserver import HTTPServer, Request, Response


async def _echo(request: Request) -> Response:
    return Response(200, f"{request.method} {request.path} {len(request.body)}".encode())


async def _exchange(port: int, raw: bytes) -> bytes:
    """Send raw bytes and read until the server closes the connection (every case here ends in close)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(-1), timeout=5)
    finally:
        writer.close()


@pytest.fixture
def run():
    def go(coro_factory, **kw):
        async def main():
            server = HTTPServer(_echo, "127.0.0.1", 0, **kw)
            await server.start()
            try:
                return await coro_factory(server.bound_port)
            finally:
                await server.shutdown()

        return asyncio.run(main())

    return go


def test_keep_alive_serves_two_requests_on_one_connection(run):
    raw = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nConnection: close\r\n\r\n"
    data = run(lambda port: _exchange(port, raw))
    assert b"POST /a 3" in data and b"GET /b 0" in data


def test_chunked_body_is_reassembled(run):
    raw = (
        b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n"
    )
    assert b"POST /c 7" in run(lambda port: _exchange(port, raw))


def test_body_over_the_limit_is_refused_with_413_without_reading_it(run):
    seen = []
    raw = b"POST /big HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n"
    data = run(lambda port: _exchange(port, raw), max_body_bytes=100, on_body_too_large=lambda: seen.append(1))
    assert data.startswith(b"HTTP/1.1 413") and seen == [1]


@pytest.mark.parametrize(
    "raw",
    [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nno-colon-here\r\n\r\n", b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"],
)
def test_malformed_requests_get_400(run, raw):
    assert run(lambda port: _exchange(port, raw)).startswith(b"HTTP/1.1 400")


def test_oversized_header_gets_431(run):
    raw = b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n"
    assert run(lambda port: _exchange(port, raw)).startswith(b"HTTP/1.1 431")
