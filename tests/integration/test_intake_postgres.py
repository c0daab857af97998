"""Acknowledged means kept, with a PostgreSQL store (issue 39): the real daemon and its two worker processes, under
load from the real OTel SDK exporter (tests/integration/kill_loop.py), SIGKILLed at random moments and restarted,
or with the PostgreSQL server stopped for a while under that load and started again: every acknowledged trace is
stored exactly once (its failing result row counted by trace id in PostgreSQL), none lost, none twice, and every
segment of the intake log released at the end."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from tests.integration.daemon_process import DaemonProcess
from tests.integration.kill_loop import run_kill_loop
from tests.support.pgserver import running_server

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = 8.0
SETTLED_SECONDS = 3.0  # into the outage: the traces stored before it are reported, their segments released


def postgres_overrides(url: str, **wal: object) -> dict:
    # reopen_interval: the stores try the server again every second, not every 30 s
    return {"store": {"url": url, "reopen_interval": "1s"}, "intake": {"wal": {"enabled": True, **wal}}}


def postgres_rows(url: str):  # type: ignore[no-untyped-def]
    def rows(_: Path) -> Counter[str]:
        with psycopg.connect(url, connect_timeout=5) as db:
            found = db.execute("SELECT trace_id FROM results WHERE evaluator = 'no_tool_errors'").fetchall()
        return Counter(trace_id for (trace_id,) in found)

    return rows


def test_sigkills_under_load_with_a_postgresql_store_lose_and_double_no_acknowledged_trace(
    tmp_path: Path, postgres_url: str
) -> None:
    result = run_kill_loop(
        tmp_path, traces=100_000, kills=2, seed=40, overrides=postgres_overrides(postgres_url),
        stored=postgres_rows(postgres_url),
    )  # fmt: skip
    assert result.kills == 2
    assert len(set(result.acked)) == len(result.acked) > 0
    assert not result.lost, f"{len(result.lost)} acknowledged traces lost"
    assert not result.doubled, f"{len(result.doubled)} traces stored twice"
    assert result.segments_left == 0  # each segment released once its traces were stored


def test_postgresql_stopped_under_load_then_started_loses_and_doubles_no_acknowledged_trace(tmp_path: Path) -> None:
    seen: dict[str, float] = {}
    with running_server() as server:
        url = server.new_database()

        def outage(daemon: DaemonProcess) -> None:
            time.sleep(2.0)  # stored as they come
            server.halt()
            time.sleep(SETTLED_SECONDS)  # what was written before the halt is released by now
            seen["early"] = daemon.value("agent_monitor_intake_log_segments_released_total")
            # The outage lasts until the log has filled (at least OUTAGE_SECONDS; longer on a busy host, where
            # the sender is slower): the assertions below are on what the daemon did while it was full.
            time.sleep(OUTAGE_SECONDS - SETTLED_SECONDS)
            daemon.wait_for("agent_monitor_intake_log_full_total", 1, timeout=30)
            seen["full"] = daemon.value("agent_monitor_intake_log_full_total")
            seen["released"] = daemon.value("agent_monitor_intake_log_segments_released_total")
            seen["lost"] = daemon.value("agent_monitor_store_results_lost_total")
            server.resume()
            time.sleep(3.0)  # the held traces are written, and new ones stored as they come

        # A small log: the outage fills it, and intake is answered throttled until the server is back.
        wal = {"segment_bytes": "256KiB", "max_bytes": "4MiB"}
        result = run_kill_loop(
            tmp_path, traces=100_000, kills=0, seed=0, overrides=postgres_overrides(url, **wal),
            stored=postgres_rows(url), meanwhile=outage,
        )  # fmt: skip
    assert len(set(result.acked)) == len(result.acked) > 0
    assert not result.lost, f"{len(result.lost)} acknowledged traces lost"
    assert not result.doubled, f"{len(result.doubled)} traces stored twice"
    assert result.segments_left == 0
    assert seen["full"] > 0  # the log filled while the server was down: intake throttled, nothing dropped
    assert seen["lost"] == 0  # nothing counted lost: the rows waited in the workers
    assert seen["released"] == seen["early"]  # while it was down, no segment released
