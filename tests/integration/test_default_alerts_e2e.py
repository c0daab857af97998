"""End to end, with no config at all: the daemon on the EMBEDDED default config alerts out of the box.

The daemon runs `agent-monitor run` without `--config`; only the environment changes it: free loopback ports, and
three time compressions (the default alerts' `for` 5m → 3s, the rule groups' interval 1m → 1s, the assembly's
quiet period 5s → 1s). The thresholds, the 30m window, min_samples 50 and the severity are the embedded ones.
`agent-monitor rules` on the same embedded default (same environment) writes the rules a real Prometheus loads.
Traces whose tool fails every time push error_free's pass ratio to 0: AgentEvalPassRatioLow fires in Prometheus
and the in-process agent_eval_alert_active{evaluator="error_free"} goes to 1.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import ROOT, DaemonProcess
from tests.integration.promstack import ServerSet, poll, query, scrape_config

pytestmark = pytest.mark.integration

ALERT = "AgentEvalPassRatioLow"
SERVICE = "synthetic-agent"
COMPRESSED = {
    "AGENT_MONITOR_ALERTING__DEFAULT_ALERTS__FOR": "3s",
    "AGENT_MONITOR_ALERTING__GROUP_INTERVAL": "1s",
    "AGENT_MONITOR_ASSEMBLY__QUIET_PERIOD": "1s",
}


class EmbeddedDaemon(DaemonProcess):
    """The daemon with no config file: the embedded default, ports and paths from AGENT_MONITOR_* variables."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, env=project_env())
        for name in list(self.env):
            if name.startswith("AGENT_MONITOR_"):
                del self.env[name]
        self.env.update(COMPRESSED)
        self.env.update(
            {
                "AGENT_MONITOR_RECEIVERS__GRPC__HOST": "127.0.0.1",
                "AGENT_MONITOR_RECEIVERS__GRPC__PORT": str(self.grpc_port),
                "AGENT_MONITOR_RECEIVERS__HTTP__HOST": "127.0.0.1",
                "AGENT_MONITOR_RECEIVERS__HTTP__PORT": str(self.http_port),
                "AGENT_MONITOR_METRICS__HOST": "127.0.0.1",
                "AGENT_MONITOR_METRICS__PORT": str(self.metrics_port),
            }
        )
        self.config_path.unlink()  # written by DaemonProcess; not used

    def launch(self) -> DaemonProcess:
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "run"],  # no --config: the embedded default (store under cwd)
            cwd=self.workdir,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self


def _rules(daemon: EmbeddedDaemon, output: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "rules", "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=daemon.env,
    )
    assert result.returncode == 0, result.stderr
    return output.read_text()


def _active(daemon: EmbeddedDaemon) -> float:
    return daemon.value("agent_eval_alert_active", evaluator="error_free", service=SERVICE)


def test_the_embedded_default_fires_a_quality_alert(tmp_path: Path) -> None:
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    servers = ServerSet(tmp_path)
    daemon = EmbeddedDaemon(workdir)
    try:
        daemon.launch()  # the rules written and Prometheus started while it starts
        rules = _rules(daemon, tmp_path / "agent-monitor.rules.yml")
        assert 'evaluator="error_free",outcome="fail"}[30m]' in rules and ">= 50\n" in rules
        prom_port = servers.start_prometheus(
            scrape_config(daemon.metrics_port) + f"rule_files: ['{tmp_path / 'agent-monitor.rules.yml'}']\n"
        )
        daemon.wait_ready(timeout=60)
        endpoint = f"127.0.0.1:{daemon.grpc_port}"
        fails = f'agent_eval_results_total{{evaluator="error_free",outcome="fail",service="{SERVICE}"}}'

        # A healthy start: passing traces, fewer than min_samples. Nothing fires, in Prometheus or in the daemon.
        send("grpc", endpoint, "synthetic", "--traces", "20")
        assert daemon.wait_for("agent_eval_results_total", 20, evaluator="error_free", outcome="pass") >= 20
        assert _active(daemon) == 0

        # increase() counts growth after a series' first scrape: let Prometheus see the fail series, then grow it.
        send("grpc", endpoint, "synthetic", "--traces", "3", "--fail-every", "1")
        seen = poll(prom_port, fails, lambda r: bool(r) and r[0]["value"][1] == "3", timeout=60)
        assert seen, daemon.output()[-3000:]
        send("grpc", endpoint, "synthetic", "--traces", "100", "--fail-every", "1")

        firing = poll(
            prom_port,
            f'ALERTS{{alertname="{ALERT}",alertstate="firing",evaluator="error_free"}}',
            bool,
            timeout=90,
        )
        assert firing, f"{query(prom_port, 'ALERTS')}\n{daemon.output()[-3000:]}"
        labels = firing[0]["metric"]
        assert (labels["service"], labels["severity"]) == (SERVICE, "warning")
        assert daemon.wait_for_condition(lambda: _active(daemon) == 1, timeout=60), daemon.output()[-3000:]
    finally:
        daemon.stop()
        servers.stop()
