"""A flood of oversized unauthenticated exports leaves the daemon's memory under the documented bound.

Bound (docs/configuration.md): an unauthenticated request is refused from its headers or metadata,
before its body or message is read, so a flood costs at most +64 MiB of RSS. Checked on the real
daemon with the process's own high-water mark (VmHWM), over both receivers.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections import Counter
from pathlib import Path

import grpc

TOKEN = "flood-token"
UPLOADS = 20
BODY_BYTES = 16 * 1024 * 1024 - 64 * 1024  # under the default 16 MiB limits
BOUND_BYTES = 64 * 1024 * 1024
METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def proc_bytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"{field} missing from /proc/{pid}/status")


def http_flood(port: int, body: bytes) -> Counter[str]:
    statuses: Counter[str] = Counter()
    lock = threading.Lock()
    head = b"POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-protobuf\r\n"

    def upload() -> None:
        status = "no answer"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
                sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body))
                sock.sendall(body)
                answer = sock.recv(64)
                status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else status
        except OSError as exc:
            status = type(exc).__name__
        with lock:
            statuses[status] += 1

    threads = [threading.Thread(target=upload) for _ in range(UPLOADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return statuses


async def grpc_flood(port: int, body: bytes) -> Counter[str]:
    options = [("grpc.max_send_message_length", -1), ("grpc.enable_retries", 0)]
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) for _ in range(UPLOADS)]
    try:
        calls = [channel.unary_unary(METHOD)(body, timeout=60) for channel in channels]
        results = await asyncio.gather(*calls, return_exceptions=True)
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))
    return Counter(r.code().name if isinstance(r, grpc.RpcError) else "OK" for r in results)


def test_unauthenticated_16_mib_floods_stay_under_the_memory_bound(daemon_factory):
    daemon = daemon_factory({"receivers": {"auth": {"bearer_token": TOKEN}}})
    pid = daemon.process.pid
    body = bytes(BODY_BYTES)
    rss_before, hwm_before = proc_bytes(pid, "VmRSS"), proc_bytes(pid, "VmHWM")

    assert http_flood(daemon.http_port, body) == Counter({"401": UPLOADS})
    assert asyncio.run(grpc_flood(daemon.grpc_port, body)) == Counter({"UNAUTHENTICATED": UPLOADS})

    peak = proc_bytes(pid, "VmHWM")
    growth = peak - max(rss_before, 0)
    assert peak <= max(hwm_before, rss_before + BOUND_BYTES), (
        f"RSS peaked at {peak >> 20} MiB, {growth >> 20} MiB over the {rss_before >> 20} MiB before the flood"
    )
    assert daemon.value("agent_monitor_requests_total", receiver="http", code="UNAUTHENTICATED") == UPLOADS
    assert daemon.value("agent_monitor_requests_total", receiver="grpc", code="UNAUTHENTICATED") == UPLOADS
    assert daemon.get("/readyz")[0] == 200
