"""Benchmark: the daemon's RSS under a flood of rejected 16 MiB OTLP/gRPC exports; prints the figures.

Starts the real daemon on 127.0.0.1 with a bearer token and the default receiver limits, then sends
ROUNDS rounds of CONCURRENCY concurrent exports of just under 16 MiB: first unauthenticated ones,
then authenticated malformed ones. Samples the daemon's RSS (VmRSS) every 20 ms and reads its
high-water mark (VmHWM); prints idle, peak and after-flood RSS per phase, in MB and as a ratio to
the idle RSS, against the bound documented in docs/configuration.md: idle RSS + 4 x
receivers.grpc.max_concurrent_reads x max_message_bytes (defaults 8 x 16 MiB), at peak and after.
Exits 0 when the bound is missed (a measurement), non-zero when something broke.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.integration.daemon_process import DaemonProcess

CONCURRENCY = int(os.environ.get("BENCH_FLOOD_CONCURRENCY", "40"))
ROUNDS = int(os.environ.get("BENCH_FLOOD_ROUNDS", "4"))
PAYLOAD_BYTES = 16 * 1024 * 1024 - 64 * 1024  # under the default 16 MiB message cap
TOKEN = "bench-token"
SETTLE_SECONDS = 3.0
CALL_TIMEOUT = 60.0
READ_SLOT_BYTES = 8 * 16 * 1024 * 1024  # the default receivers.grpc.max_concurrent_reads x max_message_bytes
RSS_PER_READ_BYTE = 4  # gRPC's receive path: measured about 3 bytes of RSS per byte being read
METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MB = 1e6


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class RssSampler:
    """Peak VmRSS of a process, sampled in a thread between `reset()` calls."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.02)

    def reset(self) -> None:
        self.peak = rss_bytes(self.pid)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def malformed_payload(size: int) -> bytes:
    """A field-1 (resource_spans) submessage full of bytes that are no valid protobuf tag."""
    body = b"\xff" * (size - 8)
    length = len(body)
    varint = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    return b"\x0a" + bytes(varint) + body


async def flood(port: int, payload: bytes, metadata: tuple[tuple[str, str], ...]) -> Counter[str]:
    """ROUNDS rounds of CONCURRENCY concurrent exports, each on its own channel; status codes counted."""
    codes: Counter[str] = Counter()
    options = [("grpc.max_send_message_length", -1), ("grpc.enable_retries", 0)]
    for _ in range(ROUNDS):
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) for _ in range(CONCURRENCY)]
        try:
            calls = [
                channel.unary_unary(METHOD)(payload, metadata=metadata, timeout=CALL_TIMEOUT) for channel in channels
            ]
            for result in await asyncio.gather(*calls, return_exceptions=True):
                codes[result.code().name if isinstance(result, grpc.RpcError) else "OK"] += 1
        finally:
            await asyncio.gather(*(channel.close() for channel in channels))
    return codes


def phase(daemon: DaemonProcess, sampler: RssSampler, name: str, payload: bytes, metadata: tuple) -> dict:
    pid = daemon.process.pid
    before = rss_bytes(pid)
    sampler.reset()
    started = time.monotonic()
    codes = asyncio.run(flood(daemon.grpc_port, payload, metadata))
    elapsed = time.monotonic() - started
    time.sleep(SETTLE_SECONDS)
    if daemon.process.poll() is not None:
        raise RuntimeError(f"the daemon died during the {name} flood:\n{daemon.output()[-3000:]}")
    return {
        "name": name,
        "before": before,
        "peak": sampler.peak,
        "after": rss_bytes(pid),
        "codes": dict(codes),
        "seconds": elapsed,
    }


def main() -> int:
    metadata_ok = (("authorization", f"Bearer {TOKEN}"),)
    overrides = {"receivers": {"auth": {"bearer_token": TOKEN}}}
    with tempfile.TemporaryDirectory() as tmp, DaemonProcess(Path(tmp), overrides) as daemon:
        pid = daemon.process.pid
        time.sleep(1.0)
        idle = rss_bytes(pid)
        with RssSampler(pid) as sampler:
            results = [
                phase(daemon, sampler, "unauthenticated", b"\0" * PAYLOAD_BYTES, ()),
                phase(daemon, sampler, "malformed", malformed_payload(PAYLOAD_BYTES), metadata_ok),
            ]
        hwm = rss_bytes(pid, "VmHWM")
        alive = daemon.get("/readyz")[0] == 200
    bound = idle + RSS_PER_READ_BYTE * READ_SLOT_BYTES
    print(
        f"flood: {ROUNDS} rounds x {CONCURRENCY} concurrent OTLP/gRPC exports of {PAYLOAD_BYTES / MB:.1f} MB; "
        f"bound = idle + {RSS_PER_READ_BYTE} x max_concurrent_reads x max_message_bytes = {bound / MB:.0f} MB"
    )
    print(f"idle RSS: {idle / MB:.0f} MB")
    for result in results:
        print(
            f"{result['name']:>16}: before {result['before'] / MB:.0f} MB, peak {result['peak'] / MB:.0f} MB "
            f"({result['peak'] / idle:.2f}x idle), after {result['after'] / MB:.0f} MB "
            f"({result['after'] / idle:.2f}x idle) in {result['seconds']:.1f}s; answers {result['codes']}"
        )
    print(f"VmHWM: {hwm / MB:.0f} MB ({hwm / idle:.2f}x idle); daemon ready afterwards: {alive}")
    within = all(r["peak"] <= bound and r["after"] <= bound for r in results) and hwm <= bound
    print(f"within the bound: {'yes' if within else 'NO'}")
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
