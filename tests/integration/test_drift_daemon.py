"""Drift detection end to end on SQLite, in compressed time (drift_daemon.py): a store holding a stationary
history of an agent at past times, the real daemon started on it, failing traces of that agent sent through the
real OTel SDK exporter. From outside: /metrics exports the error rate's change (active, its effect up, its
baseline), /api/v1/changes lists it, `agent-monitor changes` prints it; stopped (SIGTERM, then SIGKILL) and
started again on the same store, the daemon exports the same change with the same `since` and baseline. The first
scrape of a daemon started on a store holding a change has it (the first report is made before the API answers:
a scrape without it would resolve a firing alert)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess, read_store
from tests.integration.drift_daemon import (
    AGENT,
    BASELINE_ERROR_RATE,
    CHANGED_SERVICE,
    FAILING_TRACES,
    SERVICE,
    STEADY,
    Series,
    default_config_change,
    drift_config,
    error_rate_series,
    send_failing,
    wait_for_drift,
    write_history,
)
from tests.support.drift_rows import create_store, write_traces

pytestmark = pytest.mark.integration


def _changes_api(daemon: DaemonProcess) -> dict:
    status, body, _ = daemon.get("/api/v1/changes")
    assert status == 200, body
    return json.loads(body)


def _error_rate_item(page: dict) -> dict:
    items = [i for i in page["items"] if (i["service"], i["agent"], i["signal"]) == (SERVICE, AGENT, "error_rate")]
    assert len(items) == 1, page
    return items[0]


def _assert_the_change(series: Series) -> None:
    assert series["agent_quality_drift_active"] == 1.0
    assert series["agent_quality_baseline"] == pytest.approx(BASELINE_ERROR_RATE)
    assert series["baseline_kind_same_hours"] == 1.0
    assert series["agent_quality_recent"] == 1.0  # every trace sent failed
    assert series["agent_quality_drift_up"] == pytest.approx(1.0 - BASELINE_ERROR_RATE)
    assert series["agent_quality_drift_down"] == 0.0
    assert series["agent_quality_samples_recent"] == FAILING_TRACES
    assert series["agent_quality_samples_baseline"] == 3 * 36  # three "days" of 36 s, a trace a second
    assert 0 < series["agent_quality_drift_since_timestamp_seconds"] <= series["as_of"]


def test_an_error_rate_change_is_exported_listed_and_kept_across_restarts(tmp_path: Path) -> None:
    started = time.monotonic()
    workdir = tmp_path / "data"
    workdir.mkdir()
    store = create_store(workdir / "results.db")
    assert write_history(store) > 0
    config = drift_config({"path": store})

    first = DaemonProcess(workdir, config, env=project_env()).start()
    try:
        before = error_rate_series(first)  # no report yet, or the history's alone: nothing recent to test
        assert before.get("agent_quality_drift_active", 0.0) == 0.0, before
        send_failing(first)
        series = wait_for_drift(first)
        stored = read_store(workdir / "results.db", "SELECT DISTINCT service, agent FROM trace_signals WHERE "
                            "created_at > ?", (time.time() - 60,))  # fmt: skip
        assert stored == [(SERVICE, AGENT)]  # what the daemon derives for the sender's traces: the history's agent
        _assert_the_change(series)
        since = series["agent_quality_drift_since_timestamp_seconds"]
        episodes = read_store(workdir / "results.db", "SELECT signal, direction, since FROM drift_episodes "
                              "WHERE service = ? AND agent = ?", (SERVICE, AGENT))  # fmt: skip
        assert ("error_rate", "up", since) in episodes

        page = _changes_api(first)
        item = _error_rate_item(page)
        assert (item["kind"], item["direction"], item["active"], item["worse"]) == ("quality", "up", True, True)
        assert item["since"] == since
        assert item["summary"].startswith("error_rate 0.17 → 1.00 against the same hours of the last 3 days, since ")
        url = urlsplit(item["traces_url"])
        assert url.path == "/review/results", item
        window = {"since": [str(int(page["recent_since"]))], "until": [str(int(page["as_of"]))]}
        assert parse_qs(url.query) == {"service": [SERVICE], "agent": [AGENT], "outcome": ["any"], **window}
        status, body, _ = first.get(item["traces_url"])  # the recent window's results: the failing traces'
        assert status == 200 and b"error_free" in body, body[:2000]
        status, body, _ = first.get("/review/changes")
        assert status == 200 and b"error_rate" in body and SERVICE.encode() in body, body[:2000]

        command = [sys.executable, "-m", "monitor.cli", "changes", "--url", first.api_base]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**os.environ, **project_env()})
        assert done.returncode == 0, done.stderr
        row = next(line for line in done.stdout.splitlines() if " error_rate " in f" {line} ")
        assert SERVICE in row and AGENT in row and "worse" in row and "+83.3pt" in row, done.stdout
        assert "error_rate 0.17 → 1.00" in done.stdout
        assert first.value("agent_monitor_drift_report_failures_total") == 0
    finally:
        first.stop()

    for stop in ("SIGKILL", "SIGTERM"):  # the first restart follows a SIGTERM, the second this SIGKILL
        again = DaemonProcess(workdir, config, env=project_env()).start()  # new ports, the same store
        try:
            after = wait_for_drift(again, timeout=15.0)
            _assert_the_change(after)
            assert after["agent_quality_drift_since_timestamp_seconds"] == since, (stop, after)
            assert after["agent_quality_baseline"] == series["agent_quality_baseline"]
        finally:
            if stop == "SIGKILL" and again.process is not None:
                again.process.kill()
                again.process.wait(timeout=30)
            again.stop()
    assert time.monotonic() - started < STEADY, "the test outran its steady baseline: the figures may differ"


def test_the_first_scrape_of_a_daemon_started_on_a_changed_store_has_the_change(tmp_path: Path) -> None:
    workdir = tmp_path / "data"
    workdir.mkdir()
    store = create_store(workdir / "results.db")
    write_traces(store, default_config_change(time.time()))
    daemon = DaemonProcess(workdir, {"store": {"path": store}, "evaluators": [{"name": "error_free"}]},
                           env=project_env()).launch()  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert daemon.process is not None and daemon.process.poll() is None, daemon.output()
            try:
                scraped = daemon.metrics()
                break
            except (OSError, AssertionError):
                assert time.monotonic() < deadline, "no /metrics within 30 s"
                time.sleep(0.05)
        first = [
            value
            for labels, value in scraped.get("agent_quality_drift_active", [])
            if (labels["service"], labels["signal"]) == (CHANGED_SERVICE, "error_rate")
        ]
        daemon.wait_ready()
        changed = lambda: daemon.value("agent_quality_drift_active", service=CHANGED_SERVICE, signal="error_rate")  # noqa: E731
        daemon.wait_until(lambda: changed() == 1.0, "the change, with the first report", timeout=20)
        as_of = scraped.get("agent_monitor_drift_report_timestamp_seconds")
        assert first == [1.0], f"the first scrape: {first} (its report time {as_of})"
    finally:
        daemon.stop()
