"""Benchmark: OTLP/HTTP ingest on aiohttp against the old hand-written server, and RSS under upload floods.

1. Throughput: spans/s accepted over keep-alive OTLP/HTTP protobuf (7-span synthetic agent traces,
   BATCH traces per request, CONCURRENCY client threads) by the aiohttp receiver and by the legacy
   server (tests/bench/legacy_httpserver.py, the baseline), both feeding the same Ingestor in their
   own process (http_ingest_server.py); ROUNDS interleaved rounds each; prints both and the ratio.
2. Memory: peak RSS of such a server process while FLOOD_CLIENTS clients each upload a 16 MiB body
   at once, (a) without the token to a server that requires one — aiohttp and legacy — and
   (b) 16 MiB of garbage with auth off, to aiohttp with an in-flight budget of INFLIGHT_MIB and
   without one. Printed next to the bound documented in docs/configuration.md.
Exits 0 when targets are missed (a measurement), non-zero when something broke.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.load_generator import Template
from tests.bench.proctree import proc_kib

HERE = Path(__file__).resolve().parent
SECONDS = float(os.environ.get("BENCH_SECONDS", "20"))
ROUNDS = 2
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "4"))
BATCH = 50
TARGET_RATIO = 1.0  # "no slower than today"
FLOOD_CLIENTS = int(os.environ.get("BENCH_FLOOD_CLIENTS", "32"))
FLOOD_BYTES = 16 * 1024 * 1024
INFLIGHT_MIB = 64
UNAUTHENTICATED_BOUND_MIB = 64  # docs/configuration.md: baseline + 64 MiB
TOKEN = "bench-token"
MiB = 1024 * 1024


class Broken(Exception):
    """Something failed that makes the figures meaningless."""


class Server:
    """http_ingest_server.py in its own process."""

    def __init__(self, impl: str, *extra: str) -> None:
        command = [sys.executable, str(HERE / "http_ingest_server.py"), "--impl", impl, *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=30)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("listening "):
            self.process.kill()
            raise Broken(f"{impl} server did not start: {line!r} {self.process.stderr.read()}")
        self.port = int(line.split()[1])
        self.pid = self.process.pid

    def stop(self) -> dict:
        self.process.send_signal(signal.SIGTERM)
        try:
            out, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise Broken("server did not stop on SIGTERM") from None
        stats = [line for line in out.splitlines() if line.startswith("stats ")]
        if not stats:
            raise Broken(f"server did not report (exit {self.process.returncode}): {err[-2000:]}")
        return json.loads(stats[-1][len("stats ") :])


# --- throughput ---------------------------------------------------------------------------------
def send_for(port: int, seconds: float) -> tuple[int, int, dict[int, int]]:
    """CONCURRENCY keep-alive clients posting fresh batches for `seconds`: (spans accepted, requests, statuses)."""
    start_ns = time.time_ns()
    templates = [Template(BATCH, variant, start_ns) for variant in range(4)]
    ids, lock = itertools.count(), threading.Lock()
    totals = {"spans": 0, "requests": 0}
    statuses: dict[int, int] = {}
    end = time.monotonic() + seconds

    def client(index: int) -> None:
        prefix = os.urandom(8)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        spans = requests = 0
        seen: dict[int, int] = {}
        try:
            for n in itertools.count():
                if time.monotonic() >= end:
                    break
                template = templates[(n + index) % len(templates)]
                with lock:
                    body = template.render(ids, prefix)
                conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                response.read()
                seen[response.status] = seen.get(response.status, 0) + 1
                requests += 1
                if response.status == 200:
                    spans += template.spans
        finally:
            conn.close()
            with lock:
                totals["spans"] += spans
                totals["requests"] += requests
                for status, count in seen.items():
                    statuses[status] = statuses.get(status, 0) + count

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CONCURRENCY)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return totals["spans"], totals["requests"], statuses


def throughput() -> dict[str, dict]:
    results = {impl: {"spans": 0, "seconds": 0.0, "requests": 0, "statuses": {}} for impl in ("legacy", "aiohttp")}
    for _ in range(ROUNDS):
        for impl in ("legacy", "aiohttp"):
            server = Server(impl)
            try:
                started = time.monotonic()
                spans, requests, statuses = send_for(server.port, SECONDS / ROUNDS)
                elapsed = time.monotonic() - started
            finally:
                stats = server.stop()
            if stats["spans_received"] != spans:
                raise Broken(f"{impl}: clients counted {spans} spans accepted, the server {stats['spans_received']}")
            result = results[impl]
            result["spans"] += spans
            result["seconds"] += elapsed
            result["requests"] += requests
            for status, count in statuses.items():
                result["statuses"][status] = result["statuses"].get(status, 0) + count
    for impl, result in results.items():
        if result["spans"] == 0:
            raise Broken(f"zero throughput from {impl}: {result['statuses']}")
        result["spans_per_second"] = result["spans"] / result["seconds"]
    return results


# --- floods -------------------------------------------------------------------------------------
def flood(port: int, body: bytes, headers: bytes, pid: int) -> dict:
    """FLOOD_CLIENTS raw uploads of `body` at once; the server's RSS sampled every 20 ms throughout."""
    baseline = proc_kib(pid, "VmRSS")
    samples = [baseline]
    done = threading.Event()
    statuses: dict[str, int] = {}
    lock = threading.Lock()

    def sample() -> None:
        while not done.wait(0.02):
            samples.append(proc_kib(pid, "VmRSS"))

    def upload() -> None:
        head = b"POST /v1/traces HTTP/1.1\r\nHost: bench\r\nContent-Type: application/x-protobuf\r\n"
        status = "no answer"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
                sock.sendall(head + headers + b"Content-Length: %d\r\n\r\n" % len(body))
                sock.sendall(body)
                answer = sock.recv(64)
                status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "no answer"
        except OSError as exc:
            status = type(exc).__name__
        with lock:
            statuses[status] = statuses.get(status, 0) + 1

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    clients = [threading.Thread(target=upload) for _ in range(FLOOD_CLIENTS)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(120)
    time.sleep(0.5)  # what the server keeps after the flood
    after = proc_kib(pid, "VmRSS")
    done.set()
    sampler.join(5)
    return {"baseline_kib": baseline, "peak_kib": max(samples), "after_kib": after, "statuses": statuses}


def floods() -> list[tuple[str, dict, float | None]]:
    """(label, figures, bound of the growth in MiB or None for the baseline server)."""
    garbage = os.urandom(FLOOD_BYTES)
    zeros = bytes(FLOOD_BYTES)
    runs = [
        ("unauthenticated 16 MiB, aiohttp", "aiohttp", ["--token", TOKEN], zeros, UNAUTHENTICATED_BOUND_MIB),
        ("unauthenticated 16 MiB, legacy (old server)", "legacy", ["--token", TOKEN], zeros, None),
        (
            f"malformed 16 MiB, aiohttp + {INFLIGHT_MIB} MiB in-flight budget",
            "aiohttp",
            ["--inflight-mib", str(INFLIGHT_MIB)],
            garbage,
            2 * INFLIGHT_MIB + UNAUTHENTICATED_BOUND_MIB,
        ),
        ("malformed 16 MiB, aiohttp without a budget", "aiohttp", [], garbage, None),
    ]
    results = []
    for label, impl, extra, body, bound in runs:
        server = Server(impl, *extra)
        try:
            time.sleep(0.3)
            figures = flood(server.port, body, b"", server.pid)
        finally:
            server.stop()
        results.append((label, figures, bound))
    return results


# --- report -------------------------------------------------------------------------------------
def _mib(kib: float) -> str:
    return f"{kib / 1024:,.0f} MiB"


def main() -> int:
    try:
        results = throughput()
        flood_results = floods()
    except Broken as exc:
        print(f"bench_http_ingest: BROKEN: {exc}", flush=True)
        return 1
    legacy, new = results["legacy"], results["aiohttp"]
    ratio = new["spans_per_second"] / legacy["spans_per_second"]
    print(f"OTLP/HTTP ingest, keep-alive protobuf, {CONCURRENCY} clients, {BATCH * 7} spans/request, {SECONDS:g}s each")
    for name, result in (("legacy (baseline)", legacy), ("aiohttp", new)):
        print(
            f"  {name:<20} {result['spans_per_second']:>10,.0f} spans/s  "
            f"({result['requests']} requests, answers {result['statuses']})"
        )
    verdict = "ok" if ratio >= TARGET_RATIO else "MISSED"
    print(f"  ratio aiohttp/legacy {ratio:>10.2f}          target >= {TARGET_RATIO}: {verdict}")
    print(f"RSS of the server process under {FLOOD_CLIENTS} concurrent 16 MiB uploads")
    for label, figures, bound in flood_results:
        growth = (figures["peak_kib"] - figures["baseline_kib"]) / 1024
        line = (
            f"  {label:<52} {_mib(figures['baseline_kib'])} -> peak {_mib(figures['peak_kib'])}"
            f" (+{growth:,.0f} MiB), after {_mib(figures['after_kib'])}; answers {figures['statuses']}"
        )
        if bound is not None:
            line += f"; bound +{bound} MiB: {'ok' if growth <= bound else 'MISSED'}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
