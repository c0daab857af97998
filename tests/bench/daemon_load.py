"""Loaded runs for bench_daemon.py: the load generator against the bare gRPC sink or the real daemon.

`run_sink` and `run_daemon` each return a `Run`: the generator's result (what the target acknowledged),
the target's CPU over the send window and, for the daemon, the process tree's CPU and RSS (proctree.py)
and its Prometheus metrics once it has caught up (every acknowledged trace evaluated, or idle).
"""

from __future__ import annotations

import json
import math
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench.proctree import Mark, TreeSampler, cpu_seconds
from tests.integration.daemon_process import DaemonProcess

HERE = Path(__file__).resolve().parent
CONCURRENCY = 4
BATCH = 50
CATCH_UP_SECONDS = 300.0  # at most; catch-up ends earlier when done, idle or stuck
IDLE_SECONDS = 3.0  # nothing pending, nothing queued and nothing evaluated for this long: idle
STALL_SECONDS = 20.0  # nothing evaluated for this long: stuck
POLL_SECONDS = 2.0
FINAL_POLL_SECONDS = 0.25

Samples = dict[str, list[tuple[dict[str, str], float]]]


class Broken(Exception):
    """Something failed that makes the figures meaningless."""


@dataclass
class Run:
    """One loaded run. Times are time.monotonic(); `load` is the generator's result line."""

    load: dict[str, Any]
    quiet_period: float = 0.0
    send_start: float = 0.0
    send_end: float = 0.0
    cpu_send: float = 0.0  # CPU seconds of the target (process tree) over the send window
    cpu_main_send: float = 0.0  # ... of its main process alone (the receiving process; the sink's own)
    cpu_total: float = 0.0  # ... from send start until caught up
    cpu_evaluating: float = 0.0  # ... from send start + quiet_period (the first traces due) to send end
    evaluating_seconds: float = 0.0  # that window's length (0: sending ended within the quiet period)
    done: float = 0.0  # when catch-up ended
    last_evaluated: float = 0.0  # when the evaluated count last grew (poll resolution)
    evaluated_at_send_end: float = 0.0
    caught_up: bool = False  # every acknowledged trace evaluated or counted as dropped
    metrics_seconds: float = 0.0  # how long the last GET /metrics took
    metrics: Samples = field(default_factory=dict)
    metrics_mid: Samples = field(default_factory=dict)  # read halfway through sending (steady-state figures)
    rss_kib: list[int] = field(default_factory=list)  # tree RSS, 1/s over the send window
    rss_after_kib: int = 0
    processes: int = 0  # distinct processes seen in the tree

    @property
    def send_seconds(self) -> float:
        return self.load["elapsed"]

    def total(self, name: str) -> float:
        return sum(value for _, value in self.metrics.get(name, []))


# --- load generator -----------------------------------------------------------------------------
def generate(
    target: str, seconds: float, on_start: Callable[[], None], on_end: Callable[[], None], rate: float = 0.0
) -> dict:
    """Run the load generator against `target`; `on_start`/`on_end` run as its sending starts and ends; `rate`:
    traces/s, paced (0: as fast as accepted)."""
    command = [sys.executable, str(HERE / "load_generator.py"), "--target", target, "--seconds", str(seconds)]
    command += ["--concurrency", str(CONCURRENCY), "--batch", str(BATCH), "--rate", str(rate)]
    limit = seconds + 120
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True)
        watchdog = threading.Timer(limit, process.kill)
        watchdog.start()
        lines: list[str] = []
        try:
            assert process.stdout is not None
            generator_cpu = [0.0, 0.0]
            for line in process.stdout:
                lines.append(line)
                if line.startswith("sending"):
                    generator_cpu[0] = cpu_seconds(process.pid)
                    on_start()
                elif line.startswith("result "):
                    generator_cpu[1] = cpu_seconds(process.pid)
                    on_end()
            process.wait(timeout=30)
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        errors.seek(0)
        stderr = errors.read()
    results = [line for line in lines if line.startswith("result ")]
    if process.returncode != 0 or not results:
        raise Broken(f"load generator failed (exit {process.returncode}, limit {limit:g}s):\n{''.join(lines)}{stderr}")
    result = json.loads(results[-1][len("result ") :])
    result["generator_cpu"] = generator_cpu[1] - generator_cpu[0]  # the load generator's own CPU while sending
    result["spans_per_second"] = result["spans_ok"] / result["elapsed"]
    result["traces_per_second"] = result["traces_ok"] / result["elapsed"]
    if result["spans_ok"] == 0:
        raise Broken(f"zero throughput against {target}: errors {result['errors']} {result['first_error']}")
    return result


# --- the bare sink ------------------------------------------------------------------------------
def run_sink(seconds: float) -> Run:
    """Baseline: the bare grpc.aio sink (grpc_sink.py), in its own process."""
    command = [sys.executable, str(HERE / "grpc_sink.py"), "--port", "0", "--max-seconds", str(seconds + 300)]
    sink = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu: list[float] = []
    try:
        assert sink.stdout is not None and sink.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(sink.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=20)
        line = sink.stdout.readline() if ready else ""
        if not line.startswith("listening "):
            raise Broken(f"grpc sink did not start: {line!r} {sink.stderr.read() if sink.poll() is not None else ''}")
        target = f"127.0.0.1:{int(line.split()[1])}"

        def read_cpu() -> None:
            cpu.append(cpu_seconds(sink.pid))

        load = generate(target, seconds, read_cpu, read_cpu)
        sink.send_signal(signal.SIGTERM)
        out, err = sink.communicate(timeout=20)
        stats = [line for line in out.splitlines() if line.startswith("stats ")]
        if not stats:
            raise Broken(f"grpc sink did not report (exit {sink.returncode}): {err}")
        load["sink"] = json.loads(stats[-1][len("stats ") :])
        used = cpu[-1] - cpu[0] if len(cpu) == 2 else math.nan
        return Run(load, cpu_send=used, cpu_main_send=used)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait(timeout=10)


# --- the daemon ---------------------------------------------------------------------------------
def run_daemon(
    workdir: Path,
    overrides: dict[str, Any],
    seconds: float,
    quiet_period: float,
    rate: float = 0.0,
    make_daemon: Callable[[Path, dict[str, Any]], DaemonProcess] = DaemonProcess,
) -> Run:
    """Start the daemon with `overrides` (on top of DaemonProcess's), load it (at `rate` traces/s, paced; 0: as
    fast as it accepts), wait for it to catch up. `make_daemon(workdir, overrides)`: which daemon (another tree's,
    say); by default this tree's, on a config file."""
    daemon = make_daemon(workdir, overrides)
    try:
        daemon.start(timeout=90)
    except RuntimeError as exc:
        raise Broken(f"daemon did not start: {exc}") from exc
    try:
        assert daemon.process is not None
        sampler = TreeSampler(daemon.process.pid, interval=1.0)
        marks: list[Mark] = []
        halfway: list[Samples] = []
        timer = threading.Timer(seconds / 2, lambda: halfway.append(daemon.metrics()))
        timer.daemon = True
        first_due: list[Mark] = []  # the tree a quiet period after sending began: evaluation has work from then
        due_timer = threading.Timer(quiet_period, lambda: first_due.append(sampler.mark()))
        due_timer.daemon = True

        def start() -> None:
            sampler.record_rss(True)
            marks.append(sampler.mark())
            sampler.start()
            timer.start()
            due_timer.start()

        def end() -> None:
            marks.append(sampler.mark())
            sampler.record_rss(False)

        try:
            load = generate(f"127.0.0.1:{daemon.grpc_port}", seconds, start, end, rate)
            if daemon.process.poll() is not None:
                raise Broken(f"daemon exited during the run ({daemon.process.returncode}):\n{daemon.output()[-3000:]}")
            if len(marks) != 2:
                raise Broken("load generator did not report the start and end of sending")
            timer.cancel()
            due_timer.cancel()
            run = Run(load, quiet_period, send_start=marks[0].at, send_end=marks[1].at)
            if first_due and first_due[0].at < marks[1].at:
                run.cpu_evaluating = marks[1].cpu_since(first_due[0])
                run.evaluating_seconds = marks[1].at - first_due[0].at
            run.metrics_mid = halfway[0] if halfway else {}
            run.cpu_send = marks[1].cpu_since(marks[0])
            run.cpu_main_send = _own_cpu(marks, daemon.process.pid)
            catch_up(daemon, run)
            run.cpu_total = sampler.mark().cpu_since(marks[0])
            run.rss_after_kib = sampler.sample()
        finally:
            sampler.stop()
        run.rss_kib, run.processes = sampler.rss_kib, len(sampler.processes_seen)
        return run
    finally:
        code = daemon.stop()
        if code:
            print(f"  (daemon exited with {code} on SIGTERM; log tail:\n{daemon.output()[-2000:]})")


def _own_cpu(marks: list[Mark], pid: int) -> float:
    """CPU seconds of the process `pid` alone between the two marks."""
    (first, last) = ({k: v for k, v in m.cpu.items() if k[0] == pid} for m in marks)
    return sum(seconds - first.get(key, 0.0) for key, seconds in last.items())


def catch_up(daemon: DaemonProcess, run: Run) -> None:
    """Poll until every acknowledged trace is evaluated or dropped, or the daemon is idle or stuck.

    Rendering /metrics costs the daemon's main process 0.1-0.4 s (measured under load), so polls are sparse
    (every POLL_SECONDS) and only quicken (down to FINAL_POLL_SECONDS) when the rate says the end is near.
    """
    sent = run.load["traces_ok"]
    run.metrics = daemon.metrics()
    evaluated = run.evaluated_at_send_end = run.total("agent_monitor_traces_evaluated_total")
    run.last_evaluated = run.send_end if evaluated else 0.0
    started = last_poll = progress_at = time.monotonic()
    idle_since: float | None = None
    pause = FINAL_POLL_SECONDS * 2
    while time.monotonic() - started < CATCH_UP_SECONDS:
        time.sleep(pause)
        polled = time.monotonic()
        run.metrics = daemon.metrics()
        run.metrics_seconds = time.monotonic() - polled
        count = run.total("agent_monitor_traces_evaluated_total")
        remaining = sent - count - run.total("agent_monitor_traces_dropped_total")
        rate = (count - evaluated) / (polled - last_poll)
        last_poll = polled
        if count > evaluated:
            run.last_evaluated = progress_at = polled
            evaluated, idle_since = count, None
        if remaining <= 0:
            run.caught_up = True
            break
        pause = min(POLL_SECONDS, max(FINAL_POLL_SECONDS, remaining / rate / 3)) if rate > 0 else POLL_SECONDS
        idle = run.total("agent_monitor_spans_pending") == 0 and run.total("agent_monitor_queue_depth") == 0
        if not idle:
            idle_since = None
        elif idle_since is None:
            idle_since = polled
        if (idle_since is not None and polled - idle_since > IDLE_SECONDS) or polled - progress_at > STALL_SECONDS:
            break  # nothing pending, or nothing evaluated for long: the rest will not come
    run.done = time.monotonic()


# --- Prometheus helpers -------------------------------------------------------------------------
def labelled(labels: dict[str, str]) -> str:
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


def buckets(run: Run, name: str, since_halfway: bool = False) -> list[tuple[float, float]]:
    """The cumulative (le, count) buckets of histogram `name` (without `_bucket`); with `since_halfway`, only
    what was observed after the halfway read (the second half of sending and the catch-up)."""
    final = {float(labels["le"]): value for labels, value in run.metrics.get(f"{name}_bucket", [])}
    if not since_halfway:
        return sorted(final.items())
    mid = {float(labels["le"]): value for labels, value in run.metrics_mid.get(f"{name}_bucket", [])}
    return sorted((le, value - mid.get(le, 0.0)) for le, value in final.items())


def bucket_of(value: float, cumulative: list[tuple[float, float]]) -> str:
    """The histogram bucket `(lower, upper]` holding an interpolated quantile."""
    lower = 0.0
    for upper, _ in sorted(cumulative):
        if value <= upper:
            return f"({lower:g}, {upper:g}]"
        lower = upper
    return "?"
