"""Floods against the real daemon on its default limits: memory stays bounded and every request is accounted for.

- Issue 23, defect 6: forty 15 MB child spans of a trace whose root never ends. The assembler holds at most
  `assembly.max_pending_bytes` (128 MiB) of them; the rest get 503 + Retry-After, counted as `pending_bytes`.
- Large OTLP/gRPC messages, many at once: at most `receivers.grpc.max_concurrent_reads` (8) are assembled
  at a time, the others are refused unread; the peak RSS stays under the documented bound.
The process's own high-water mark (VmHWM) is compared with its RSS before the flood.
"""

from __future__ import annotations

import asyncio
import http.client
from collections import Counter
from pathlib import Path

import grpc

from tests.bench.bench_receiver_memory import malformed_payload
from tests.integration.otlp_raw import request, span

MiB = 1024 * 1024
TOKEN = "flood-token"
METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
DEFAULTS = {"assembly": {"max_trace_wait": "120s"}, "receivers": {"auth": {"bearer_token": TOKEN}}}


def proc_bytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"{field} missing from /proc/{pid}/status")


def test_large_child_spans_of_a_root_that_never_ends_are_bounded_by_bytes(daemon_factory):
    daemon = daemon_factory(DEFAULTS)
    pid = daemon.process.pid
    rss_before = proc_bytes(pid, "VmRSS")
    statuses: Counter[int] = Counter()
    conn = http.client.HTTPConnection("127.0.0.1", daemon.http_port, timeout=60)
    try:
        for index in range(40):
            child = span("1" * 32, f"{index + 1:016x}", "a" * 16, attrs={"gen_ai.output": "x" * 15_000_000})
            headers = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}
            conn.request("POST", "/v1/traces", body=request([child]).SerializeToString(), headers=headers)
            response = conn.getresponse()
            response.read()
            statuses[response.status] += 1
            if response.status == 503:
                assert int(response.getheader("Retry-After", "0")) >= 1
    finally:
        conn.close()
    held = daemon.value("agent_monitor_bytes_pending")
    assert statuses[200] + statuses[503] == 40 and 7 <= statuses[200] <= 9, statuses
    assert daemon.value("agent_monitor_spans_refused_total", receiver="http", reason="pending_bytes") == statuses[503]
    assert 0 < held <= 128 * MiB
    growth = proc_bytes(pid, "VmHWM") - rss_before
    # The held spans (~128 MiB) and one request in decoding (body, parsed message, records: ~3 x 15 MB).
    assert growth <= 128 * MiB + 160 * MiB, f"peak RSS {growth >> 20} MiB over the {rss_before >> 20} MiB before"
    assert daemon.get("/readyz")[0] == 200


async def grpc_flood(port: int, payload: bytes, calls: int) -> Counter[str]:
    options = [("grpc.max_send_message_length", -1), ("grpc.enable_retries", 0)]
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) for _ in range(calls)]
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    try:
        results = await asyncio.gather(
            *(channel.unary_unary(METHOD)(payload, metadata=metadata, timeout=60) for channel in channels),
            return_exceptions=True,
        )
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))
    return Counter(r.code().name if isinstance(r, grpc.RpcError) else "OK" for r in results)


def test_a_flood_of_large_grpc_messages_stays_under_the_read_slot_bound(daemon_factory):
    daemon = daemon_factory(DEFAULTS)
    pid = daemon.process.pid
    rss_before = proc_bytes(pid, "VmRSS")
    payload = malformed_payload(16 * MiB - 64 * 1024)
    codes: Counter[str] = Counter()
    for _ in range(2):
        codes += asyncio.run(grpc_flood(daemon.grpc_port, payload, 32))
    assert set(codes) <= {"INVALID_ARGUMENT", "UNAVAILABLE"} and sum(codes.values()) == 64, codes
    assert codes["INVALID_ARGUMENT"] >= 8  # read, decoded and refused as malformed; the others throttled unread
    for code, count in codes.items():
        assert daemon.value("agent_monitor_requests_total", receiver="grpc", code=code) == count
    growth = proc_bytes(pid, "VmHWM") - rss_before
    # Documented bound: 4 x max_concurrent_reads x max_message_bytes (measured: about 3x).
    assert growth <= 4 * 8 * 16 * MiB, f"peak RSS {growth >> 20} MiB over the {rss_before >> 20} MiB before"
    assert daemon.get("/readyz")[0] == 200
