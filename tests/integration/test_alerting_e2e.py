"""End to end: rules written by `agent-monitor rules` fire and resolve in a real Prometheus, through a real
Alertmanager, to a webhook of the test, on traces sent by the real OTel SDK to the real daemon.

Failing traces (a failing tool on every one) push the pass ratio of `no_tool_errors` to 0 over the alert's
1m window: Prometheus fires AgentEvalPassRatioLow after `for` (3s), Alertmanager posts it. Passing traces then
lift the ratio over the minimum: the alert resolves and Alertmanager posts the resolution (send_resolved).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import ROOT, DaemonProcess
from tests.integration.promstack import ServerSet, poll, query, scrape_config

pytestmark = pytest.mark.integration

EVALUATOR = "no_tool_errors"
ALERT = "AgentEvalPassRatioLow"
RULES_CONFIG = {
    "evaluators": [
        {
            "module": "tests.integration.evals_fixture:no_tool_errors",
            "alert": {"min_pass_ratio": 0.5, "window": "1m", "for": "3s", "min_samples": 5, "severity": "critical"},
        }
    ],
    "alerting": {
        "group_interval": "1s",
        "labels": {"team": "e2e"},
        "runbook_url_template": "https://runbooks.example/{alert}#{evaluator}",
        "traces_url_template": "https://monitor.example/api/failing?evaluator={evaluator}",
    },
}


class Webhook:
    """An HTTP server on 127.0.0.1 that keeps every JSON body Alertmanager posts."""

    def __init__(self) -> None:
        received: queue.Queue[dict[str, Any]] = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.put(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.received = received
        self.seen: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, match: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any] | None:
        """The first notification (from now on) that `match`es, or None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                notification = self.received.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            self.seen.append(notification)
            if match(notification):
                return notification
        return None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    """The daemon on RULES_CONFIG, launched but not waited for: the test starts its servers while it starts."""
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    launched = DaemonProcess(workdir, RULES_CONFIG, env=project_env()).launch()
    yield launched
    launched.stop()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[ServerSet]:
    started = ServerSet(tmp_path)
    yield started
    started.stop()


def _alertmanager_config(url: str) -> str:
    return (
        "global: {resolve_timeout: 5s}\n"
        "route:\n"
        "  receiver: test\n"
        "  group_by: [alertname, evaluator, service]\n"
        "  group_wait: 1s\n"
        "  group_interval: 1s\n"
        "  repeat_interval: 1h\n"
        "receivers:\n"
        "  - name: test\n"
        f"    webhook_configs: [{{url: '{url}', send_resolved: true}}]\n"
    )


def _generate_rules(config_path: Path, output: Path) -> None:
    """The real command, in its own process."""
    command = [sys.executable, "-m", "monitor.cli", "rules", "--config", str(config_path), "--output", str(output)]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, **project_env()}
    )
    assert result.returncode == 0, result.stderr


def _results(outcome: str) -> str:
    return f'agent_eval_results_total{{evaluator="{EVALUATOR}",outcome="{outcome}"}}'


def _ours(status: str) -> Callable[[dict[str, Any]], bool]:
    def match(notification: dict[str, Any]) -> bool:
        return notification.get("status") == status and any(
            alert["labels"].get("alertname") == ALERT and alert["status"] == status for alert in notification["alerts"]
        )

    return match


def _diagnostics(servers: ServerSet, prom_port: int, webhook: Webhook) -> str:
    logs = "\n".join(
        f"--- {log}:\n{log.read_text(errors='replace')[-2000:]}" for log in sorted(servers.directory.glob("*/*.log"))
    )
    alerts = query(prom_port, "ALERTS")
    return f"ALERTS: {alerts}\nnotifications: {webhook.seen}\n{logs}"


def test_pass_ratio_alert_fires_and_resolves_through_alertmanager(daemon, webhook, servers, tmp_path) -> None:
    rules = tmp_path / "agent-monitor.rules.yml"
    _generate_rules(daemon.config_path, rules)
    am_port = servers.start_alertmanager(_alertmanager_config(webhook.url))
    prom_port = servers.start_prometheus(
        scrape_config(daemon.metrics_port)
        + f"rule_files: ['{rules}']\n"
        + f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['127.0.0.1:{am_port}']}}]}}]}}\n"
    )
    daemon.wait_ready()
    endpoint = f"127.0.0.1:{daemon.grpc_port}"

    # increase() counts growth after a series' first scrape: let Prometheus see the fail series, then grow it.
    send("grpc", endpoint, "synthetic", "--traces", "3", "--fail-every", "1")
    seen = poll(prom_port, _results("fail"), lambda r: bool(r) and r[0]["value"][1] == "3", timeout=30)
    assert seen and seen[0]["value"][1] == "3", _diagnostics(servers, prom_port, webhook)
    send("grpc", endpoint, "synthetic", "--traces", "12", "--fail-every", "1")
    failures_sent = time.monotonic()
    firing = webhook.wait(_ours("firing"), timeout=40)
    assert firing is not None, _diagnostics(servers, prom_port, webhook)
    [alert] = [a for a in firing["alerts"] if a["labels"]["alertname"] == ALERT]
    assert alert["labels"] == {
        "alertname": ALERT,
        "evaluator": EVALUATOR,
        "service": "synthetic-agent",
        "severity": "critical",
        "team": "e2e",
    }
    notes = alert["annotations"]
    assert notes["summary"] == "no_tool_errors pass ratio is below 50% on synthetic-agent"
    assert notes["description"].startswith("0% of the no_tool_errors results of service synthetic-agent passed")
    assert notes["runbook_url"] == f"https://runbooks.example/{ALERT}#{EVALUATOR}"
    assert notes["failing_traces_url"] == f"https://monitor.example/api/failing?evaluator={EVALUATOR}"

    # Recovery: passing traces (again: first one series-creating trace, then the growth) lift the ratio.
    send("grpc", endpoint, "synthetic", "--traces", "1")
    assert poll(prom_port, _results("pass"), bool, timeout=30), _diagnostics(servers, prom_port, webhook)
    send("grpc", endpoint, "synthetic", "--traces", "40")
    resolved = webhook.wait(_ours("resolved"), timeout=50)
    assert resolved is not None, _diagnostics(servers, prom_port, webhook)
    # well before the failures leave the 1m window: the passing traces resolved it, not the lack of data
    assert time.monotonic() - failures_sent < 50
    [alert] = [a for a in resolved["alerts"] if a["labels"]["alertname"] == ALERT]
    assert alert["labels"]["evaluator"] == EVALUATOR and alert["endsAt"] >= alert["startsAt"]
