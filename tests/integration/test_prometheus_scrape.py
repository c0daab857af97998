"""A real Prometheus server (Debian package) scrapes the daemon on loopback; PromQL sees the results."""

from __future__ import annotations

import time

import pytest

from tests.integration.conftest import CORPUS, FIXTURE_EVALUATORS, send
from tests.integration.promstack import ServerSet, poll, query, scrape_config

pytestmark = pytest.mark.integration


@pytest.fixture
def prometheus(tmp_path):
    servers = ServerSet(tmp_path)
    yield lambda target_port: servers.start_prometheus(scrape_config(target_port))
    servers.stop()


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
        values = {r["metric"]["outcome"]: float(r["value"][1]) for r in query(prom_port, promql)}
        if values.get("fail") == 2 and values.get("pass") == 1:
            break
        time.sleep(0.5)
    assert values == {"fail": 2.0, "pass": 1.0}
    up = query(prom_port, 'up{job="agent-monitor"}')
    assert up and up[0]["value"][1] == "1"


PER_AGENT = (
    'sum by (agent) (rate(agent_eval_results_total{outcome="pass"}[5m]))'
    ' / sum by (agent) (rate(agent_eval_results_total{outcome=~"pass|fail"}[5m]))'
)


def test_per_agent_pass_ratio_from_the_documentedquery(daemon_factory, prometheus):
    daemon = daemon_factory(evaluators=[*FIXTURE_EVALUATORS, {"name": "agent_efficiency"}])
    prom_port = prometheus(daemon.metrics_port)
    synthetic = ["grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "2", "--fail-every", "2"]
    send(*synthetic)  # one failing tool per two traces: no_tool_errors passes half, agent_efficiency all
    # rate() counts growth after a series' first scrape only: let Prometheus see every series, then grow them.
    # (the pass and fail series of no_tool_errors and agent_efficiency's pass: matches_expected only skips)
    scored = 'count(agent_eval_results_total{outcome=~"pass|fail"} > 0)'
    seen = poll(prom_port, scored, lambda r: bool(r) and r[0]["value"][1] == "3")
    assert seen and seen[0]["value"][1] == "3", seen
    send(*synthetic)

    def has_values(result: list[dict]) -> bool:
        return len(result) == 2 and "NaN" not in [r["value"][1] for r in result]

    ratios = {r["metric"].get("agent", ""): float(r["value"][1]) for r in poll(prom_port, PER_AGENT, has_values)}
    assert ratios == pytest.approx({"travel_agent": 1.0, "": 0.5}, abs=0.1)  # "": trace-level results
