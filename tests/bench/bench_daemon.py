"""Benchmark: OTLP/gRPC ingest throughput of the daemon against a bare grpc.aio sink; prints the figures.

A load generator process (load_generator.py) sends 7-span agent traces for BENCH_SECONDS (default 20)
to (a) grpc_sink.py, which only parses requests and walks every span attribute, and (b) the real
daemon with every rule builtin on and quiet_period 1s. Reports accepted spans/s for both and their
ratio, and for the daemon its RSS (peak and sampled each second), the p99 delay from a trace's last
span to its metrics (agent_monitor_trace_delay_seconds) and traces evaluated vs sent.
Exits 0 when targets are missed (a measurement), non-zero when something broke.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.integration.daemon_process import DaemonProcess

HERE = Path(__file__).resolve().parent
SECONDS = float(os.environ.get("BENCH_SECONDS", "20"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "4"))
BATCH = 50
QUIET_PERIOD = 1.0
CATCH_UP_SECONDS = 30.0
TARGET_RATIO = 0.6
RSS_FLAT_GROWTH = 0.10  # "flat": under 10 % growth over the second half of the run
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Broken(Exception):
    """Something failed that makes the figures meaningless."""


# --- process readings ---------------------------------------------------------------------------
def proc_kib(pid: int, field: str) -> int:
    """A `VmRSS`/`VmHWM`-style field of /proc/<pid>/status, in KiB (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class RssSampler(threading.Thread):
    """VmRSS of `pid` once a second until stopped (bounded by `max_samples`)."""

    def __init__(self, pid: int, max_samples: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.max_samples = pid, max_samples
        self.samples: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        for _ in range(self.max_samples):
            self.samples.append(proc_kib(self.pid, "VmRSS"))
            if self.done.wait(1.0):
                return

    def stop(self) -> list[int]:
        self.done.set()
        self.join(timeout=5)
        return self.samples


# --- load ---------------------------------------------------------------------------------------
def generate(target: str, target_pid: int) -> dict:
    """Run the load generator against `target`; its result plus the target's CPU use while loaded."""
    command = [sys.executable, str(HERE / "load_generator.py"), "--target", target, "--seconds", str(SECONDS)]
    command += ["--concurrency", str(CONCURRENCY), "--batch", str(BATCH)]
    cpu0 = cpu_seconds(target_pid)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 120, check=False)
    except subprocess.TimeoutExpired as exc:
        raise Broken(f"load generator did not finish within {SECONDS + 120:g}s") from exc
    lines = [line for line in done.stdout.splitlines() if line.startswith("result ")]
    if done.returncode != 0 or not lines:
        raise Broken(f"load generator failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    result = json.loads(lines[-1][len("result ") :])
    result["target_cpu"] = (cpu_seconds(target_pid) - cpu0) / result["elapsed"]
    result["spans_per_second"] = result["spans_ok"] / result["elapsed"]
    if result["spans_ok"] == 0:
        raise Broken(f"zero throughput against {target}: errors {result['errors']} {result['first_error']}")
    return result


def run_sink() -> dict:
    """Baseline: the bare sink, in its own process."""
    command = [sys.executable, str(HERE / "grpc_sink.py"), "--port", "0", "--max-seconds", str(SECONDS + 300)]
    sink = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(sink.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=20)
        line = sink.stdout.readline() if ready else ""
        if not line.startswith("listening "):
            raise Broken(f"grpc sink did not start: {line!r} {sink.stderr.read() if sink.poll() is not None else ''}")
        result = generate(f"127.0.0.1:{int(line.split()[1])}", sink.pid)
        sink.send_signal(signal.SIGTERM)
        out, err = sink.communicate(timeout=20)
        stats = [line for line in out.splitlines() if line.startswith("stats ")]
        if not stats:
            raise Broken(f"grpc sink did not report (exit {sink.returncode}): {err}")
        result["sink"] = json.loads(stats[-1][len("stats ") :])
        return result
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait(timeout=10)


def run_daemon(workdir: Path) -> dict:
    """The daemon with the default evaluators (every rule builtin) and quiet_period 1s."""
    daemon = DaemonProcess(workdir, {"assembly": {"quiet_period": f"{QUIET_PERIOD:g}s"}})
    try:
        daemon.start()
    except RuntimeError as exc:
        raise Broken(f"daemon did not start: {exc}") from exc
    try:
        pid = daemon.process.pid
        sampler = RssSampler(pid, max_samples=int(SECONDS) + 200)
        sampler.start()
        try:
            result = generate(f"127.0.0.1:{daemon.grpc_port}", pid)
        finally:
            result_rss = sampler.stop()
        if daemon.process.poll() is not None:
            raise Broken(f"daemon exited during the run ({daemon.process.returncode}):\n{daemon.output()[-3000:]}")
        result["rss_kib"] = result_rss
        result.update(catch_up(daemon, result["traces_ok"]))
        result["rss_after_kib"] = proc_kib(pid, "VmRSS")
        result["hwm_kib"] = proc_kib(pid, "VmHWM")
        return result
    finally:
        code = daemon.stop()
        if code:
            print(f"  (daemon exited with {code} on SIGTERM; log tail:\n{daemon.output()[-2000:]})")


def catch_up(daemon: DaemonProcess, traces_sent: int) -> dict:
    """Wait (≤ CATCH_UP_SECONDS) until every sent trace is evaluated or the daemon is idle; read its metrics."""
    started = time.monotonic()
    deadline = started + CATCH_UP_SECONDS
    evaluated_at_end = _sum(daemon.metrics(), "agent_monitor_traces_evaluated_total")
    evaluated, idle_since = -1.0, None
    while time.monotonic() < deadline:
        samples = daemon.metrics()
        now_evaluated = _sum(samples, "agent_monitor_traces_evaluated_total")
        if now_evaluated >= traces_sent:
            break
        idle = _sum(samples, "agent_monitor_spans_pending") == 0 and _sum(samples, "agent_monitor_queue_depth") == 0
        if idle and now_evaluated == evaluated:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 3:
                break  # nothing pending and nothing moving: the rest will not come
        else:
            idle_since = None
        evaluated = now_evaluated
        time.sleep(0.5)
    waited = time.monotonic() - started
    samples = daemon.metrics()
    buckets = [
        (float(labels["le"]), value) for labels, value in samples.get("agent_monitor_trace_delay_seconds_bucket", [])
    ]
    seconds = {labels["evaluator"]: v for labels, v in samples.get("agent_monitor_evaluation_seconds_sum", [])}
    runs = {labels["evaluator"]: v for labels, v in samples.get("agent_monitor_evaluation_seconds_count", [])}
    return {
        "catch_up_seconds": waited,
        "evaluated_at_end": evaluated_at_end,
        "evaluator_ms": {name: 1000 * seconds[name] / n for name, n in runs.items() if n and name in seconds},
        "evaluated": _sum(samples, "agent_monitor_traces_evaluated_total"),
        "delay_buckets": buckets,
        "delay_p99": histogram_quantile(0.99, buckets),
        "delay_p50": histogram_quantile(0.5, buckets),
        "delay_count": _sum(samples, "agent_monitor_trace_delay_seconds_count"),
        "delay_sum": _sum(samples, "agent_monitor_trace_delay_seconds_sum"),
        "spans_received": _sum(samples, "agent_monitor_spans_received_total"),
        "problems": {
            f"{name}{_labels(labels)}": value
            for name in (
                "agent_monitor_spans_refused_total",
                "agent_monitor_traces_dropped_total",
                "agent_monitor_late_spans_total",
                "agent_monitor_duplicate_spans_total",
            )
            for labels, value in samples.get(name, [])
            if value
        },
    }


def _sum(samples: dict, name: str) -> float:
    return sum(value for _, value in samples.get(name, []))


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}" if labels else ""


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus's histogram_quantile over cumulative (le, count) buckets; NaN when empty."""
    buckets = sorted(buckets)
    if not buckets or not math.isinf(buckets[-1][0]) or buckets[-1][1] == 0:
        return math.nan
    rank = q * buckets[-1][1]
    for i, (upper, count) in enumerate(buckets):
        if count >= rank:
            if math.isinf(upper):
                return buckets[i - 1][0] if i else math.nan
            lower, below = buckets[i - 1] if i else (0.0, 0.0)
            if i == 0 and upper <= 0:
                return upper
            return lower + (upper - lower) * (rank - below) / (count - below) if count > below else upper
    return math.nan


# --- report -------------------------------------------------------------------------------------
def _bucket_of(value: float, buckets: list[tuple[float, float]]) -> str:
    """The histogram bucket `(lower, upper]` holding an interpolated quantile."""
    lower = 0.0
    for upper, _ in sorted(buckets):
        if value <= upper:
            return f"({lower:g}, {upper:g}]"
        lower = upper
    return "?"


def _verdict(ok: bool) -> str:
    return "OK" if ok else "MISSED"


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def report(sink: dict, daemon: dict) -> None:
    ratio = daemon["spans_per_second"] / sink["spans_per_second"]
    rss = daemon["rss_kib"]
    first, middle, last = rss[0], rss[len(rss) // 2], rss[-1]
    growth = (last - middle) / middle if middle else math.inf
    p99, p50 = daemon["delay_p99"], daemon["delay_p50"]
    mean = daemon["delay_sum"] / daemon["delay_count"] if daemon["delay_count"] else math.nan
    delay_target = QUIET_PERIOD + 1.0
    evaluated, sent = daemon["evaluated"], daemon["traces_ok"]

    print(
        f"daemon ingest: OTLP/gRPC, {sink['spans_per_trace']}-span agent traces, {sink['bytes_per_span']:.0f} B/span, "
        f"{sink['batch_traces']} traces ({sink['request_bytes'] / 1024:.0f} KiB) per request, "
        f"{sink['concurrency']} in flight, {SECONDS:g} s each, {os.cpu_count()} cores"
    )
    for name, run in (("bare grpc.aio sink", sink), ("daemon, all builtins", daemon)):
        print(
            f"  {name:<22}{run['spans_per_second']:>10,.0f} spans/s  ({run['requests_ok']} requests OK, "
            f"export p50/p99 {1000 * run['latency_p50']:.0f}/{1000 * run['latency_p99']:.0f} ms, "
            f"target CPU {100 * run['target_cpu']:.0f}% of a core, "
            f"generator {100 * run['cpu_seconds'] / run['elapsed']:.0f}%)"
        )
        if run["unavailable"] or run["errors"] or run["rejected_spans"] or run["abandoned_requests"]:
            print(
                f"  {'':<22}UNAVAILABLE {run['unavailable']} (backed off {run['backoff_seconds']:.1f} s), "
                f"rejected spans {run['rejected_spans']}, abandoned requests {run['abandoned_requests']}, "
                f"errors {run['errors'] or 0} {run['first_error']}"
            )
    print(f"  ratio daemon/sink     {ratio:>10.2f}         target >= {TARGET_RATIO}: {_verdict(ratio >= TARGET_RATIO)}")
    print(
        f"  daemon RSS            first {_mib(first)}, middle {_mib(middle)}, last {_mib(last)} "
        f"({len(rss)} samples, 1/s); {_mib(daemon['rss_after_kib'])} after catch-up; "
        f"peak VmHWM {_mib(daemon['hwm_kib'])}"
    )
    print(
        f"  {'':<22}{100 * growth:+.1f}% over the second half   target flat (< {100 * RSS_FLAT_GROWTH:.0f}%): "
        f"{_verdict(growth < RSS_FLAT_GROWTH)}"
    )
    print(
        f"  trace delay p99       {p99:>10.2f} s        target <= quiet_period {QUIET_PERIOD:g} s + 1 s = "
        f"{delay_target:g} s: {_verdict(p99 <= delay_target)}"
    )
    print(
        f"  {'':<22}p50 {p50:.2f} s, mean {mean:.2f} s over {daemon['delay_count']:.0f} traces; "
        f"p99 interpolated in bucket {_bucket_of(p99, daemon['delay_buckets'])} s, as histogram_quantile"
    )
    share = 100 * evaluated / sent if sent else 0.0
    print(
        f"  traces evaluated      {evaluated:>10,.0f} of {sent:,} sent ({share:.1f}%), "
        f"after {daemon['catch_up_seconds']:.1f} s of catch-up (<= {CATCH_UP_SECONDS:g} s)"
    )
    if daemon["catch_up_seconds"] > 0:
        rate = (evaluated - daemon["evaluated_at_end"]) / daemon["catch_up_seconds"]
        print(
            f"  {'':<22}{daemon['evaluated_at_end']:,.0f} evaluated while sending, {rate:,.0f} traces/s during catch-up"
        )
    slowest = sorted(daemon["evaluator_ms"].items(), key=lambda item: -item[1])
    if slowest:
        print(
            f"  evaluators' own time  {sum(daemon['evaluator_ms'].values()):.2f} ms/trace in all; slowest "
            + ", ".join(f"{name} {ms:.2f} ms" for name, ms in slowest[:3])
        )
    if daemon["problems"]:
        print("  daemon counters:      " + ", ".join(f"{k} {v:g}" for k, v in daemon["problems"].items()))


def main() -> int:
    try:
        sink = run_sink()
        with tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
            daemon = run_daemon(Path(tmp))
    except Broken as exc:
        print(f"bench_daemon: BROKEN: {exc}", flush=True)
        return 1
    report(sink, daemon)
    return 0


if __name__ == "__main__":
    sys.exit(main())
