"""Many replicas, one review: two daemons started together on one PostgreSQL database (a real server), each
receiving half of the corpus traces through the real OTel SDK exporter; the review API of either lists all of
them, the schema was migrated once, and `agent-monitor review --store postgresql://…` reads the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from evaluators.traces import read_paths
from monitor.store.schema import SCHEMA_VERSION
from tests.integration.conftest import CORPUS, project_env, send
from tests.integration.daemon_process import DaemonProcess
from tests.support.ports import free_port

pytestmark = pytest.mark.integration

SCENARIOS = (
    "oi_openai__tool_agent",
    "otel_genai__tool_error",
    "adk_native__tool_agent",
    "strands__tool_agent",
    "oi_langchain__tool_agent",
    "vercel_ai__tool_agent",
    "tl_openai__tool_error",
    "pydantic_ai__tool_agent",
)


def _trace_ids(scenarios: tuple[str, ...]) -> set[str]:
    return {record.trace_id for s in scenarios for record in read_paths([CORPUS / s]).spans}


def _listed(daemon: DaemonProcess) -> set[str]:
    """Every trace id the daemon's review API lists, page after page."""
    seen: set[str] = set()
    cursor = ""
    for _ in range(50):
        status, body, _ = daemon.get(f"/api/v1/results?limit=200{cursor}")
        assert status == 200, body
        page = json.loads(body)
        seen |= {item["trace_id"] for item in page["items"]}
        if not page["next_cursor"]:
            return seen
        cursor = f"&cursor={page['next_cursor']}"
    raise AssertionError("the results never ended")


def test_two_replicas_share_one_review(tmp_path: Path, postgres_url: str) -> None:
    halves = (SCENARIOS[0::2], SCENARIOS[1::2])
    expected = _trace_ids(SCENARIOS)
    assert not _trace_ids(halves[0]) & _trace_ids(halves[1]) and len(expected) >= len(SCENARIOS)
    config = {"store": {"url": postgres_url}, "evaluation": {"workers": 2}}
    daemons = []
    for n in range(2):
        workdir = tmp_path / f"replica{n}"
        workdir.mkdir()
        daemons.append(DaemonProcess(workdir, config, env=project_env()))
    try:
        for daemon in daemons:  # started together: both set up the schema at the same moment
            daemon.launch()
        for daemon in daemons:
            daemon.wait_ready(60)
        for daemon, half in zip(daemons, halves, strict=True):
            send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", *(str(CORPUS / s) for s in half))
        for daemon, half in zip(daemons, halves, strict=True):  # each evaluated only its own half
            assert daemon.wait_for("agent_monitor_traces_evaluated_total", len(_trace_ids(half)), timeout=60)
        for daemon in daemons:  # ... and either one's review lists all of them
            assert daemon.wait_for_condition(lambda d=daemon: _listed(d) == expected, timeout=60), expected - _listed(
                daemon
            )
            some = sorted(expected)[0]
            status, body, _ = daemon.get(f"/api/v1/traces/{some}")
            assert status == 200 and json.loads(body)["steps"]
        status, body, _ = daemons[0].get("/api/v1/breakdown?by=service")
        groups = json.loads(body)["groups"]
        assert status == 200 and len(groups) >= 2  # the services of both halves, in one breakdown
        for daemon in daemons:
            assert daemon.value("agent_monitor_review_available") == 1
            assert "result store unavailable" not in daemon.output()
    finally:
        for daemon in daemons:
            daemon.stop()

    with psycopg.connect(postgres_url) as db:
        migrations = db.execute("SELECT version, applied_by FROM agent_monitor_schema").fetchall()
    assert [version for version, _ in migrations] == list(range(1, SCHEMA_VERSION + 1))  # once each, by one replica

    review = ["review", "--store", postgres_url, "--json", "--limit", "200", "--outcome", "any"]
    command = [sys.executable, "-m", "monitor.cli", *review]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env={**os.environ, **project_env()}, check=False
    )
    assert done.returncode == 0, done.stderr
    assert {item["trace_id"] for item in json.loads(done.stdout)["items"]} == expected


def test_a_daemon_whose_database_is_down_evaluates_all_the_same(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://agents:s3cret-pw@127.0.0.1:{port}/monitor"
    workdir = tmp_path / "replica"
    workdir.mkdir()
    daemon = DaemonProcess(workdir, {"store": {"url": url}, "evaluation": {"workers": 1}}, env=project_env())
    try:
        daemon.start(60)
        send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(CORPUS / SCENARIOS[0]))
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", len(_trace_ids(SCENARIOS[:1])), timeout=60)
        assert daemon.value("agent_monitor_review_available") == 0
        errors = lambda: daemon.value("agent_monitor_store_errors_total", operation="write")  # noqa: E731
        assert daemon.wait_for_condition(lambda: errors() > 0)
        status, body, _ = daemon.get("/api/v1/results")
        assert status == 503 and b"postgresql://agents:***@127.0.0.1" in body
    finally:
        daemon.stop()
    output = daemon.output()
    assert f"results in PostgreSQL postgresql://agents:***@127.0.0.1:{port}/monitor" in output
    assert "s3cret-pw" not in output
