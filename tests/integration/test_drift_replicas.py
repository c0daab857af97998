"""Two real daemons on one PostgreSQL store make the same drift report (drift_daemon.py's compressed time): the
store holds a stationary history of an agent, failing traces of that agent go to one replica only (through the
real OTel SDK exporter), and once both replicas' reports are as of the same time, both export the same error
rate change — the same effect, baseline, samples and `since` (the episode the first writer stored) — and the same
agent_quality_* samples of every signal. A third replica started later (its first report made after the change
began) exports the stored `since`, not its own first report's time."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess, replicas
from tests.integration.drift_daemon import (
    AGENT,
    BASELINE_ERROR_RATE,
    FAILING_TRACES,
    SERVICE,
    Series,
    active,
    drift_config,
    drift_samples,
    error_rate_series,
    send_failing,
    write_history,
)
from tests.support.drift_rows import create_store

pytestmark = pytest.mark.integration


def _same_report(daemons: list[DaemonProcess], timeout: float = 25.0) -> list[Series]:
    """The replicas' error rate series once all are active, hold every trace sent, and are as of the same report
    time (scraped one after the other: a report published between the scrapes is scraped again)."""
    deadline = time.monotonic() + timeout
    seen: list[Series] = []
    while time.monotonic() < deadline:
        seen = [error_rate_series(d) for d in daemons]
        complete = all(active(s) and s["agent_quality_samples_recent"] == FAILING_TRACES for s in seen)
        if complete and len({s["as_of"] for s in seen}) == 1:
            return seen
        time.sleep(0.2)
    logs = "\n".join(d.output()[-3000:] for d in daemons)
    raise AssertionError(f"the replicas' reports did not agree within {timeout}s: {seen}\n{logs}")


def _same_samples(daemons: list[DaemonProcess], timeout: float = 10.0) -> dict[tuple, float]:
    """Every agent_quality_* sample of the agent, the same on all replicas as of one report time."""
    deadline = time.monotonic() + timeout
    while True:
        scrapes = [drift_samples(d) for d in daemons]
        if len({as_of for as_of, _ in scrapes}) == 1:
            first = scrapes[0][1]
            assert all(samples == first for _, samples in scrapes), scrapes
            return first
        assert time.monotonic() < deadline, f"no scrape of the replicas as of one report time: {scrapes}"
        time.sleep(0.2)


def test_two_replicas_export_the_same_change_from_one_postgresql_store(tmp_path: Path, postgres_url: str) -> None:
    store = create_store(postgres_url)
    assert write_history(store) > 0
    config = drift_config({"url": postgres_url})
    daemons = replicas(tmp_path, config, env=project_env())
    try:
        for daemon in daemons:
            daemon.launch()
        for daemon in daemons:
            daemon.wait_ready()
        send_failing(daemons[0])  # replica b sees them in the store only
        a, b = _same_report(daemons)
        assert a == b
        samples = _same_samples(daemons)
        assert len(samples) > 30  # every trace signal of the agent (error rate, tool success, calls, latency, ...)
        assert a["agent_quality_baseline"] == pytest.approx(BASELINE_ERROR_RATE)
        assert a["agent_quality_drift_up"] == pytest.approx(1.0 - BASELINE_ERROR_RATE)
        assert 0 < a["agent_quality_drift_since_timestamp_seconds"] <= a["as_of"]
        with psycopg.connect(postgres_url) as db:
            episodes = db.execute(
                "SELECT since FROM drift_episodes WHERE service = %s AND agent = %s AND signal = 'error_rate'",
                (SERVICE, AGENT),
            ).fetchall()
        assert episodes == [(a["agent_quality_drift_since_timestamp_seconds"],)]  # one episode, both replicas'

        (late,) = replicas(tmp_path, config, ("c",), project_env())  # started after the change began: its since
        daemons.append(late.start())
        (c,) = _same_report([late])
        since = a["agent_quality_drift_since_timestamp_seconds"]
        assert c["as_of"] > since
        assert c["agent_quality_drift_since_timestamp_seconds"] == since
        assert c["agent_quality_baseline"] == a["agent_quality_baseline"]
        _same_report(daemons)
        _same_samples(daemons)
        for daemon in daemons:
            assert daemon.value("agent_monitor_drift_report_failures_total") == 0, daemon.output()[-3000:]
    finally:
        for daemon in daemons:
            daemon.stop()
