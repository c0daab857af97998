"""Issue 37's "done when": a fresh daemon and a fresh Prometheus (started together, seconds old, with the rules
`agent-monitor rules` wrote for the default 1h window); the first new signature of each of several evaluators
fires `AgentEvalNewFailureSignature` within two rule evaluations of the first scrape that carried it. Each
(evaluator, service) series is born with that signature: `increase()` alone never sees it, and a rule that tells
born-within-the-range from old needs an hour of history that this Prometheus does not have."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import DaemonProcess
from tests.integration.promstack import ServerSet, poll, query, scrape_config

pytestmark = pytest.mark.integration

ALERT = "AgentEvalNewFailureSignature"
SERVICE = "fresh-agent"
RECENT = "agent_eval_failure_signatures_new_recent"
EVALUATION = 2.0  # seconds: Prometheus's rule evaluation interval (and the rule group's)
# Four evaluators (trace, tool and agent level) the synthetic traces fail: a tool raising, 2 LLM calls of 120 tokens
EVALUATORS = {
    "error_free": {},
    "tool_success_rate": {},
    "token_budget": {"max_tokens": 100},
    "llm_call_budget": {"max_llm_calls": 1},
}
CONFIG = {
    "evaluators": [{"name": name, "params": params} for name, params in EVALUATORS.items()],
    "alerting": {"group_interval": f"{EVALUATION:g}s"},  # signatures.window: the default, 1h
}


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[DaemonProcess, int]]:
    """A daemon (the default evaluators) and a Prometheus scraping it every second, both just started."""
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    daemon = DaemonProcess(workdir, CONFIG, env=project_env())
    rules = tmp_path / "agent-monitor.rules.yml"
    servers = ServerSet(tmp_path)
    daemon.launch()
    try:
        assert "[1h]" in daemon.write_rules(rules)
        text = scrape_config(daemon.metrics_port).replace(
            "evaluation_interval: 1s", f"evaluation_interval: {EVALUATION:g}s"
        )
        port = servers.start_prometheus(text + f"rule_files: ['{rules}']\n")
        daemon.wait_ready()
        yield daemon, port
    finally:
        servers.stop()
        daemon.stop()


def _seconds(stamp: str) -> float:
    """An RFC 3339 time from Prometheus's API (nanoseconds), as Unix seconds."""
    stamp = re.sub(r"(\.\d{6})\d+", r"\1", stamp).replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp()


def _first_scraped(port: int) -> dict[str, float]:
    """When Prometheus first scraped each evaluator's recent new-signature count above 0."""
    first: dict[str, float] = {}
    for series in query(port, f'{RECENT}{{service="{SERVICE}"}}[10m]'):
        stamps = [float(t) for t, v in series["values"] if float(v) > 0]
        if stamps:
            first[series["metric"]["evaluator"]] = min(stamps)
    return first


def _active_since(port: int) -> dict[str, float]:
    """When each firing new-signature alert of the service became active, by evaluator."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=5) as response:
        alerts = json.loads(response.read())["data"]["alerts"]
    return {
        a["labels"]["evaluator"]: _seconds(a["activeAt"])
        for a in alerts
        if a["labels"]["alertname"] == ALERT and a["labels"].get("service") == SERVICE and a["state"] == "firing"
    }


def test_the_first_new_signature_of_each_evaluator_fires_on_a_fresh_prometheus(fresh) -> None:
    daemon, port = fresh
    # One batch of failing traces: every evaluator gets its first signature, new, and its (evaluator, service)
    # series with it.
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    error = "FX rate service unavailable (HTTP 503): request {id}"
    send("grpc", endpoint, "synthetic", "--traces", "4", "--service", SERVICE, "--fail-every", "1",
         "--tool-error", error)  # fmt: skip

    def new_ones() -> set[str]:
        samples = daemon.metrics().get("agent_eval_failure_signatures_new_total", [])
        return {labels["evaluator"] for labels, v in samples if labels.get("service") == SERVICE and v > 0}

    evaluators = set(EVALUATORS)
    assert daemon.wait_for_condition(lambda: new_ones() == evaluators, timeout=60), (
        new_ones(),
        daemon.output()[-3000:],
    )

    alerts = f'ALERTS{{alertname="{ALERT}",alertstate="firing",service="{SERVICE}"}}'
    done = lambda r: {a["metric"]["evaluator"] for a in r} >= evaluators  # noqa: E731
    firing = poll(port, alerts, done, timeout=10 * EVALUATION)
    assert done(firing), f"{query(port, 'ALERTS')}\n{query(port, RECENT)}\n{query(port, 'up')}"
    # within two rule evaluations of the first scrape that showed the new signature, measured by Prometheus
    first, active = _first_scraped(port), _active_since(port)
    assert set(first) >= evaluators and set(active) >= evaluators, (first, active)
    for evaluator in evaluators:
        assert 0 <= active[evaluator] - first[evaluator] <= 2 * EVALUATION, (evaluator, first, active)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status/runtimeinfo", timeout=5) as response:
        started = _seconds(json.loads(response.read())["data"]["startTime"])
    assert max(active.values()) - started < 120  # it fired on a Prometheus under two minutes old
