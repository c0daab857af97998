"""The daemon's evaluation workers and admission, through the real daemon and the real OTel SDK exporter."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

from tests.integration.conftest import send

SLOW = [{"module": "tests.monitor.engine.slow_evaluator:slow"}]  # 50 ms per trace: workers stay busy for a while


def worker_pids(pid: int) -> list[int]:
    """The daemon's evaluation worker processes (spawned children running spawn_main, not the resource tracker)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmdline:
                found.append(child)
    return sorted(found)


def wait_until(condition, timeout: float = 30.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def test_a_burst_of_5000_traces_is_all_taken_and_evaluated(daemon_factory):
    """A burst into an idle daemon: the part past what the workers reach within the delay allowance is answered
    with the OTLP throttling response (issue 29: bounded delay), the exporter retries it, nothing is lost."""
    daemon = daemon_factory(
        {
            "assembly": {"quiet_period": "5s", "max_trace_wait": "120s"},
            "evaluation": {"queue_size": 256, "workers": 2},
        }
    )
    output = send(
        "grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "5000", "--max-queue", "50000", timeout=300
    )
    assert "SUCCESS" in output
    refused = daemon.value("agent_monitor_spans_refused_total", reason="throttled")
    assert (refused > 0) == (daemon.value("agent_monitor_requests_total", code="UNAVAILABLE") > 0)
    assert daemon.value("agent_monitor_spans_received_total") == 5000 * 5  # 5 spans per synthetic trace
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 5000, timeout=180) == 5000
    assert daemon.value("agent_monitor_traces_dropped_total") == 0


def test_a_worker_killed_mid_run_is_replaced_and_the_drop_is_counted(daemon_factory):
    daemon = daemon_factory({"assembly": {"quiet_period": "200ms"}, "evaluation": {"workers": 2}}, evaluators=SLOW)
    pid = daemon.process.pid
    before = worker_pids(pid)
    assert len(before) == 2
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "200", "--max-queue", "5000")
    assert wait_until(lambda: daemon.value("agent_monitor_queue_depth") > 20), daemon.output()
    os.kill(before[0], signal.SIGKILL)
    assert wait_until(lambda: daemon.value("agent_monitor_traces_dropped_total", reason="worker_crash") > 0)
    assert daemon.value("agent_monitor_worker_restarts_total") == 1
    assert wait_until(
        lambda: (
            daemon.value("agent_monitor_traces_evaluated_total")
            + daemon.value("agent_monitor_traces_dropped_total", reason="worker_crash")
            == 200
        ),
        timeout=60,
    ), daemon.output()
    after = worker_pids(pid)
    assert len(after) == 2 and before[0] not in after and before[1] in after
    evaluated = daemon.value("agent_monitor_traces_evaluated_total")
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "20")
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", evaluated + 20, timeout=60) == evaluated + 20
    assert "evaluation worker 0 died" in daemon.output() or "evaluation worker 1 died" in daemon.output()


def test_sigterm_drains_every_worker_before_exit(daemon_factory):
    daemon = daemon_factory({"assembly": {"quiet_period": "200ms"}, "evaluation": {"workers": 2}}, evaluators=SLOW)
    workers = worker_pids(daemon.process.pid)
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "120", "--max-queue", "5000")
    assert wait_until(lambda: daemon.value("agent_monitor_queue_depth") > 20), daemon.output()
    assert daemon.stop() == 0
    log = daemon.output()
    assert "evaluated 120 traces in total" in log, log
    with sqlite3.connect(daemon.workdir / "results.db") as db:
        assert db.execute("SELECT COUNT(*) FROM traces").fetchone()[0] == 120
    for worker in workers:
        assert not Path(f"/proc/{worker}").exists() or b"spawn_main" not in Path(f"/proc/{worker}/cmdline").read_bytes()


def test_sigterm_exits_even_when_an_in_process_evaluator_never_returns(daemon_factory):
    daemon = daemon_factory(
        {"assembly": {"quiet_period": "200ms"}, "evaluation": {"workers": 1}, "shutdown": {"grace_period": "2s"}},
        evaluators=[{"module": "tests.monitor.engine.slow_evaluator:stuck"}],
    )
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "2")
    assert wait_until(lambda: daemon.value("agent_monitor_queue_depth") >= 1), daemon.output()
    assert daemon.stop(timeout=30) == 0  # killed after 30 s otherwise: a thread cannot be; the daemon exits past it
    assert "an evaluator is still running on evaluation_0" in daemon.output()
