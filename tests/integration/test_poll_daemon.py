"""Poll mode in the real daemon: it pulls a trace service (the fake AMP of tests/monitor/sources, serving corpus traces
on 127.0.0.1) on its schedule, beside its OTLP receivers. Every trace is evaluated once — polled again and again,
sent both ways, across a restart of the daemon — and its results reach the metrics and the review API."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from aiohttp import web

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess
from tests.integration.otel_sender import make_exporter, readable
from tests.monitor.sources.test_amp import SCOPE, TOKEN, FakeAmp, Stored, moved
from tests.support.otlp_json import corpus_traces
from tests.support.threaded_server import serve

pytestmark = pytest.mark.integration

SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent", "strands__tool_agent")


def _stored(now: float) -> list[Stored]:
    """Four corpus traces under fresh ids, started 2 to 5 minutes ago."""
    traces = list(corpus_traces(*SCENARIOS).values())
    return [Stored(moved(spans, f"{n + 1:032x}", int((now - 300 + 60 * n) * 1e9))) for n, spans in enumerate(traces)]


def _config(url: str) -> dict:
    source = {"type": "amp", "name": "amp", "url": url, "token_env": "AMP_TOKEN", "interval": "0.5s",
              "settle_delay": "1s", "backfill": "10m", "overlap": "10m", **SCOPE}  # fmt: skip
    return {"sources": [source], "evaluators": [{"name": "error_free"}, {"name": "tool_success_rate"}]}


def _daemon(workdir: Path, url: str) -> DaemonProcess:
    workdir.mkdir(exist_ok=True)
    return DaemonProcess(workdir, _config(url), env={**project_env(), "AMP_TOKEN": TOKEN})


def _runs(daemon: DaemonProcess) -> float:
    return daemon.value("agent_monitor_poll_runs_total", source="amp", status="ok")


def test_polled_traces_are_evaluated_once_across_runs_receivers_and_a_restart(tmp_path: Path) -> None:
    now = time.time()
    fake = FakeAmp(_stored(now))
    app = web.Application()
    app.router.add_get("/api/v1/orgs/{org}/projects/{project}/agents/{agent}/traces/export", fake.handle)
    with serve(app) as url:
        daemon = _daemon(tmp_path / "daemon", url).start()
        try:
            assert daemon.wait_for("agent_monitor_traces_evaluated_total", 4, timeout=60) == 4
            assert daemon.wait_for_condition(lambda: _runs(daemon) >= 3, timeout=30)  # polled again and again
            assert daemon.value("agent_monitor_traces_evaluated_total") == 4  # ... and none of them twice
            assert daemon.value("agent_monitor_poll_traces_total", source="amp") == 4
            assert daemon.value("agent_monitor_poll_errors_total", source="amp", kind="auth") == 0
            lag = daemon.value("agent_monitor_poll_lag_seconds", source="amp")
            assert 1 <= lag < 30

            # a trace received through OTLP first, then found by the poller too: evaluated once
            both = moved(next(iter(corpus_traces("oi_openai__tool_error").values())), "b0" * 16,
                         int((time.time() - 20) * 1e9))  # fmt: skip
            exporter = make_exporter("grpc", f"127.0.0.1:{daemon.grpc_port}", {}, None)
            try:
                assert exporter.export([readable(s) for s in both]).name == "SUCCESS"
            finally:
                exporter.shutdown()
            assert daemon.wait_for("agent_monitor_traces_evaluated_total", 5, timeout=30) == 5
            fake.traces.append(Stored(both))
            runs = _runs(daemon)
            assert daemon.wait_for_condition(lambda: _runs(daemon) >= runs + 3, timeout=30)
            assert daemon.value("agent_monitor_traces_evaluated_total") == 5
            assert daemon.value("agent_monitor_poll_traces_total", source="amp") == 4

            def stored() -> set[str]:
                status, body, _ = daemon.get("/api/v1/results?evaluator=error_free&limit=100")
                return {item["trace_id"] for item in json.loads(body)["items"]} if status == 200 else set()

            expected = {f"{n:032x}" for n in range(1, 5)} | {"b0" * 16}
            assert daemon.wait_for_condition(lambda: stored() == expected, timeout=30)
        finally:
            daemon.stop()

        # a restart resumes at the checkpoint: nothing is evaluated again, a new trace is
        restarted = _daemon(tmp_path / "daemon", url).start()
        try:
            assert restarted.wait_for_condition(lambda: _runs(restarted) >= 3, timeout=30)
            assert restarted.value("agent_monitor_traces_evaluated_total") == 0
            fake.traces.append(Stored(moved(fake.traces[0].spans, "c0" * 16, int((time.time() - 5) * 1e9))))
            assert restarted.wait_for("agent_monitor_traces_evaluated_total", 1, timeout=30) == 1
            runs = _runs(restarted)
            assert restarted.wait_for_condition(lambda: _runs(restarted) >= runs + 2, timeout=30)
            assert restarted.value("agent_monitor_traces_evaluated_total") == 1
        finally:
            restarted.stop()
    assert "AMP_TOKEN" not in restarted.output() and TOKEN not in restarted.output() + daemon.output()


def _evaluated_in_total(output: str) -> int:
    [line] = [line for line in output.splitlines() if "shutdown: evaluated" in line]
    return int(line.split("shutdown: evaluated ")[1].split()[0])


def test_a_restart_in_the_middle_of_a_backlog_evaluates_every_trace_exactly_once(tmp_path: Path) -> None:
    now = time.time()
    base = next(iter(corpus_traces("otel_genai__tool_error").values()))
    count = 1500  # a backlog of 15 pages: the first daemon is stopped after 150, well before its end
    fake = FakeAmp([Stored(moved(base, f"{n + 1:032x}", int((now - 3000 + n) * 1e9))) for n in range(count)])
    app = web.Application()
    app.router.add_get("/api/v1/orgs/{org}/projects/{project}/agents/{agent}/traces/export", fake.handle)
    with serve(app) as url:
        config = _config(url)
        config["sources"][0] |= {"backfill": "1h", "page_size": 100}
        workdir = tmp_path / "daemon"
        workdir.mkdir()
        first = DaemonProcess(workdir, config, env={**project_env(), "AMP_TOKEN": TOKEN}).start()
        try:
            assert first.wait_for_condition(lambda: first.value("agent_monitor_traces_evaluated_total") >= 150)
        finally:
            first.stop()  # SIGTERM in the middle of the backlog
        done_first = _evaluated_in_total(first.output())
        assert 150 <= done_first < count and "cancelled" not in first.output()
        second = DaemonProcess(workdir, config, env={**project_env(), "AMP_TOKEN": TOKEN}).start()
        try:
            remaining = count - done_first
            assert second.wait_for("agent_monitor_traces_evaluated_total", remaining, timeout=90) == remaining
            runs = second.value("agent_monitor_poll_runs_total", source="amp", status="ok")
            assert second.wait_for_condition(
                lambda: second.value("agent_monitor_poll_runs_total", source="amp", status="ok") >= runs + 2
            )
            assert second.value("agent_monitor_traces_evaluated_total") == remaining  # none twice, none lost
        finally:
            second.stop()
