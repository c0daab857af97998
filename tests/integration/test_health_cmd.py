"""`agent-monitor health` (the container's HEALTHCHECK): it follows the configured metrics port and api.tls."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration.conftest import project_env

pytestmark = pytest.mark.integration


def health(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "health", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **project_env(), **(env or {})},
        check=False,
    )


def test_health_probes_the_configured_port_and_fails_once_the_daemon_is_gone(daemon_factory):
    daemon = daemon_factory()
    assert daemon.metrics_port != 9464
    assert health("--config", str(daemon.config_path)).returncode == 0
    assert health(env={"AGENT_MONITOR_CONFIG": str(daemon.config_path)}).returncode == 0  # as in the container
    daemon.stop()
    gone = health("--config", str(daemon.config_path))
    assert gone.returncode == 1 and f"127.0.0.1:{daemon.metrics_port}/healthz" in gone.stderr


def test_health_speaks_https_when_the_api_has_tls(daemon_factory, certificate):
    key, cert = certificate
    daemon = daemon_factory({"api": {"tls": {"cert_file": str(cert), "key_file": str(key)}}})
    assert health("--config", str(daemon.config_path)).returncode == 0


def test_health_reports_a_bad_config_with_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("metrics: {port: -1}\n")
    answer = health("--config", str(bad))
    assert answer.returncode == 2 and "metrics.port" in answer.stderr


def test_run_reads_the_config_from_agent_monitor_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("assembly: {quiet_period: 10m, max_trace_wait: 1m}\n")
    answer = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "run"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **project_env(), "AGENT_MONITOR_CONFIG": str(bad)},
        check=False,
    )
    assert answer.returncode == 2 and str(bad) in answer.stderr and "quiet_period" in answer.stderr
