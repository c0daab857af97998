"""A real Prometheus server (Debian package) scrapes the daemon on loopback; PromQL sees the results."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from tests.integration.conftest import CORPUS, FIXTURE_EVALUATORS, send
from tests.integration.daemon_process import free_port

pytestmark = pytest.mark.integration


def _query(port: int, promql: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.loads(response.read())
    assert body["status"] == "success"
    return body["data"]["result"]


@pytest.fixture
def prometheus(tmp_path):
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("the prometheus binary is missing: `make test` installs the Debian package `prometheus`")
    processes = []

    def start(target_port: int) -> int:
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: agent-monitor\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{target_port}']}}]\n"
        )
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / "prometheus.log").open("wb"),
        )
        processes.append(process)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return port
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready:\n" + (tmp_path / "prometheus.log").read_text())

    yield start
    for process in processes:
        process.terminate()
        process.wait(timeout=20)


def test_promql_over_scraped_results(daemon_factory, prometheus):
    daemon = daemon_factory()
    prom_port = prometheus(daemon.metrics_port)
    send(
        "grpc",
        f"127.0.0.1:{daemon.grpc_port}",
        "corpus",
        str(CORPUS / "oi_openai__tool_error"),
        str(CORPUS / "oi_openai__tool_agent"),
        str(CORPUS / "tl_openai__tool_error"),
    )
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 3) == 3
    promql = 'sum by (outcome) (agent_eval_results_total{evaluator="no_tool_errors"})'
    deadline = time.monotonic() + 60
    values: dict[str, float] = {}
    while time.monotonic() < deadline:
        values = {r["metric"]["outcome"]: float(r["value"][1]) for r in _query(prom_port, promql)}
        if values.get("fail") == 2 and values.get("pass") == 1:
            break
        time.sleep(0.5)
    assert values == {"fail": 2.0, "pass": 1.0}
    up = _query(prom_port, 'up{job="agent-monitor"}')
    assert up and up[0]["value"][1] == "1"


PER_AGENT = (
    'sum by (agent) (rate(agent_eval_results_total{outcome="pass"}[5m]))'
    ' / sum by (agent) (rate(agent_eval_results_total{outcome=~"pass|fail"}[5m]))'
)


def _poll(port: int, promql: str, done, timeout: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    result = _query(port, promql)
    while not done(result) and time.monotonic() < deadline:
        time.sleep(0.5)
        result = _query(port, promql)
    return result


def test_per_agent_pass_ratio_from_the_documented_query(daemon_factory, prometheus):
    daemon = daemon_factory(evaluators=[*FIXTURE_EVALUATORS, {"name": "agent_efficiency"}])
    prom_port = prometheus(daemon.metrics_port)
    synthetic = ["grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "2", "--fail-every", "2"]
    send(*synthetic)  # one failing tool per two traces: no_tool_errors passes half, agent_efficiency all
    # rate() counts growth after a series' first scrape only: let Prometheus see every series, then grow them.
    _poll(prom_port, "count(agent_eval_results_total > 0)", lambda r: r and r[0]["value"][1] == "3")
    send(*synthetic)

    def has_values(result: list[dict]) -> bool:
        return len(result) == 2 and "NaN" not in [r["value"][1] for r in result]

    ratios = {r["metric"].get("agent", ""): float(r["value"][1]) for r in _poll(prom_port, PER_AGENT, has_values)}
    assert ratios == pytest.approx({"travel_agent": 1.0, "": 0.5}, abs=0.1)  # "": trace-level results
