"""DaemonProcess's A/B mode (tests/bench/bench_ab_baseline.py): another interpreter, and no config file but the
embedded default with the test's settings as AGENT_MONITOR_* variables, inherited ones dropped."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess, config_env
from tests.integration.otlp_raw import post, request, span

pytestmark = pytest.mark.integration

TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"


def test_config_env_names_every_scalar_leaf_as_the_loader_reads_it() -> None:
    config = {"receivers": {"grpc": {"port": 4000, "enabled": True}}, "store": {"path": "/x/r.db", "url": None}}
    assert config_env(config) == {
        "AGENT_MONITOR_RECEIVERS__GRPC__PORT": "4000",
        "AGENT_MONITOR_RECEIVERS__GRPC__ENABLED": "true",
        "AGENT_MONITOR_STORE__PATH": "/x/r.db",
        "AGENT_MONITOR_STORE__URL": "null",
    }
    with pytest.raises(ValueError, match=r"metrics\.windows"):
        config_env({"metrics": {"windows": ["5m"]}})


def test_daemon_on_its_embedded_default_config_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inherited variables that would change the run (another config file, another port) are dropped.
    monkeypatch.setenv("AGENT_MONITOR_CONFIG", str(tmp_path / "missing.yaml"))
    monkeypatch.setenv("AGENT_MONITOR_METRICS__PORT", "1")
    marker = tmp_path / "interpreter-used"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\ntouch "{marker}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    workdir = tmp_path / "work"
    workdir.mkdir()
    daemon = DaemonProcess(workdir, {}, project_env(), python=wrapper, config_in_env=True)
    assert "AGENT_MONITOR_CONFIG" not in daemon.env
    assert daemon.env["AGENT_MONITOR_METRICS__PORT"] == str(daemon.metrics_port)
    daemon.start(timeout=60)  # (`with daemon.start():` would start a second daemon in __enter__ and leak the first)
    try:
        assert marker.exists(), "the daemon was not started by the interpreter given"
        assert not daemon.config_path.exists(), "a config file was written"
        body = request([span(TRACE, "00f067aa0ba902b8", error=True)]).SerializeToString()
        assert post(daemon.http_port, body)[0] == 200
        # The embedded default's evaluators ran it (quiet_period 1s from the environment), stored at store.path.
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 1, timeout=30) == 1
        assert daemon.value("agent_monitor_evaluation_seconds_count") > 1
    finally:
        daemon.stop()
    assert (workdir / "results.db").exists()
    assert os.environ["AGENT_MONITOR_METRICS__PORT"] == "1", "the test's environment was changed"
