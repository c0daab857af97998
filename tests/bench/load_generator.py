"""OTLP/gRPC load generator for the throughput benchmark (run as a separate process).

    python load_generator.py --target 127.0.0.1:4317 [--seconds 20] [--concurrency 4] [--batch 50] [--rate 0]

Sends raw ExportTraceServiceRequest bytes to TraceService/Export from `--concurrency` threads (one
request in flight each, one shared channel). Requests are pre-serialized templates of `--batch`
agent traces (tests/bench/synthetic.bench_trace_spans) whose trace ids are patched in place, so
every trace is new and sending costs little CPU. UNAVAILABLE is retried after the server's
RetryInfo delay (else exponential back-off). With `--rate` (traces/s) requests go out paced at that rate
instead of back to back (a fixed load: request n is due at start + n x batch / rate; a thread that is free
waits for the next one due, a late one goes at once and is counted late). Prints `sending` when the first
request goes out and one line `result {json}` at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.synthetic import bench_trace_spans, export_request

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TEMPLATES = 8
MAX_REQUESTS_PER_WORKER = 1_000_000
MAX_ATTEMPTS = 50


class Template:
    """One serialized request and, per trace in it, the offsets of its trace id."""

    def __init__(self, batch: int, variant: int, start_ns: int) -> None:
        markers = [os.urandom(16) for _ in range(batch)]
        spans = [span for i, tid in enumerate(markers) for span in bench_trace_spans(tid, start_ns, variant + i)]
        self.payload = export_request(spans).SerializeToString()
        self.spans = len(spans)
        self.traces = batch
        self.offsets: list[list[int]] = []
        for marker in markers:
            found, at = [], self.payload.find(marker)
            while at >= 0 and len(found) <= self.spans:
                found.append(at)
                at = self.payload.find(marker, at + 16)
            self.offsets.append(found)
        if sum(map(len, self.offsets)) != self.spans:
            raise RuntimeError("trace id markers collided with other bytes; run again")

    def render(self, ids: itertools.count, prefix: bytes) -> bytes:
        """The payload with fresh trace ids: prefix + a counter, unique within this run."""
        data = bytearray(self.payload)
        for offsets in self.offsets:
            trace_id = prefix + next(ids).to_bytes(8, "big")
            for at in offsets:
                data[at : at + 16] = trace_id
        return bytes(data)


class Pacer:
    """Fixed load: the send times of requests of `batch` traces at `rate` traces/s, shared by the threads."""

    def __init__(self, rate: float, batch: int, started: float, end: float) -> None:
        self.interval = batch / rate
        self.started = started
        self.end = end
        self._next = itertools.count()
        self._lock = threading.Lock()
        self.late = 0  # requests sent more than one interval after they were due

    def wait_turn(self) -> bool:
        """Sleep until this thread's next request is due; False when it would be due after the end."""
        with self._lock:
            due = self.started + next(self._next) * self.interval
        if due >= self.end:
            return False
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        elif now - due > self.interval:
            with self._lock:
                self.late += 1
        return True


class Stats:
    def __init__(self) -> None:
        self.requests_ok = 0
        self.spans_ok = 0
        self.traces_ok = 0
        self.rejected_spans = 0
        self.unavailable = 0
        self.backoff_seconds = 0.0
        self.abandoned_requests = 0
        self.errors: dict[str, int] = {}
        self.first_error = ""
        self.latencies: list[float] = []

    def merge(self, other: Stats) -> None:
        for key in ("requests_ok", "spans_ok", "traces_ok", "rejected_spans", "unavailable", "abandoned_requests"):
            setattr(self, key, getattr(self, key) + getattr(other, key))
        self.backoff_seconds += other.backoff_seconds
        for code, count in other.errors.items():
            self.errors[code] = self.errors.get(code, 0) + count
        self.first_error = self.first_error or other.first_error
        self.latencies.extend(other.latencies)


def _retry_delay(error: grpc.RpcError, attempt: int) -> float:
    """The server's RetryInfo delay when given, else 50 ms doubling up to 2 s."""
    for key, value in error.trailing_metadata() or ():
        if key == "google.rpc.retryinfo-bin":
            info = error_details_pb2.RetryInfo.FromString(value)
            return info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return min(0.05 * 2**attempt, 2.0)


def worker(
    call, templates: list[Template], ids, prefix: bytes, end: float, timeout: float, stats: Stats, pacer: Pacer | None
) -> None:
    """Send requests back to back (or paced) until `end`; retry each on UNAVAILABLE while time remains."""
    for n in range(MAX_REQUESTS_PER_WORKER):
        if time.monotonic() >= end or (pacer is not None and not pacer.wait_turn()):
            return
        template = templates[n % len(templates)]
        payload = template.render(ids, prefix)
        for attempt in range(MAX_ATTEMPTS):
            started = time.monotonic()
            try:
                response = call(payload, timeout=timeout)
            except grpc.RpcError as error:
                code = error.code()
                if code == grpc.StatusCode.UNAVAILABLE:
                    stats.unavailable += 1
                    delay = _retry_delay(error, attempt)
                    if time.monotonic() + delay >= end:
                        stats.abandoned_requests += 1
                        return
                    stats.backoff_seconds += delay
                    time.sleep(delay)
                    continue
                stats.errors[code.name] = stats.errors.get(code.name, 0) + 1
                stats.first_error = stats.first_error or f"{code.name}: {error.details()}"
                time.sleep(0.1)  # no hot loop against a broken server
                break
            stats.latencies.append(time.monotonic() - started)
            rejected = response.partial_success.rejected_spans
            stats.requests_ok += 1
            stats.spans_ok += template.spans - rejected
            stats.traces_ok += template.traces
            stats.rejected_spans += rejected
            break
        else:
            stats.abandoned_requests += 1


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(target: str, seconds: float, concurrency: int, batch: int, timeout: float, rate: float = 0.0) -> dict:
    start_ns = time.time_ns() - 3_000_000_000
    templates = [Template(batch, variant, start_ns) for variant in range(TEMPLATES)]
    channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 64 * 1024 * 1024)])
    try:
        grpc.channel_ready_future(channel).result(timeout=15)
        call = channel.unary_unary(
            EXPORT, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        ids, prefix = itertools.count(1), os.urandom(8)
        print("sending", flush=True)  # the caller starts its measurements here
        cpu0, started = os.times(), time.monotonic()
        end = started + seconds
        pacer = Pacer(rate, batch, started, end) if rate > 0 else None
        stats = [Stats() for _ in range(concurrency)]
        threads = [
            threading.Thread(target=worker, args=(call, templates, ids, prefix, end, timeout, s, pacer), daemon=True)
            for s in stats
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=seconds + timeout + 30)
        elapsed = time.monotonic() - started
        cpu1 = os.times()
    finally:
        channel.close()
    total = Stats()
    for s in stats:
        total.merge(s)
    return {
        "target": target,
        "seconds": seconds,
        "elapsed": elapsed,
        "concurrency": concurrency,
        "batch_traces": batch,
        "rate": rate,  # traces/s asked for (0: as fast as accepted)
        "late_requests": pacer.late if pacer is not None else 0,
        "spans_per_trace": templates[0].spans // batch,
        "request_bytes": len(templates[0].payload),
        "bytes_per_span": len(templates[0].payload) / templates[0].spans,
        "requests_ok": total.requests_ok,
        "spans_ok": total.spans_ok,
        "traces_ok": total.traces_ok,
        "rejected_spans": total.rejected_spans,
        "unavailable": total.unavailable,
        "backoff_seconds": total.backoff_seconds,
        "abandoned_requests": total.abandoned_requests,
        "errors": total.errors,
        "first_error": total.first_error,
        "latency_p50": _quantile(total.latencies, 0.5),
        "latency_p99": _quantile(total.latencies, 0.99),
        "cpu_seconds": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
        "stuck_threads": sum(thread.is_alive() for thread in threads),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="host:port of the OTLP/gRPC receiver")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to keep sending")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    parser.add_argument("--batch", type=int, default=50, help="traces per export request")
    parser.add_argument("--timeout", type=float, default=30.0, help="deadline of one export call")
    parser.add_argument("--rate", type=float, default=0.0, help="traces/s, paced (0: as fast as accepted)")
    args = parser.parse_args()
    result = run(args.target, args.seconds, args.concurrency, args.batch, args.timeout, args.rate)
    print("result " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
