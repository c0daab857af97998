"""Issue 42's end to end with recorded real traces: a real daemon receives copies of a recorded ADK agent's trace
(tests/fixtures/corpus/adk_native__tool_agent) through the real OTel SDK exporter, as two versions on two models;
in version 1.5 the calls of gemini-2.5-pro fail their tool, everything else succeeds. `AgentEvalPassRatioLow`
(error_free) fires in a real Prometheus loading the rules `agent-monitor rules` wrote; its `top_factor` annotation
names the pair (from agent_eval_attribution, which the daemon exports while the threshold is breached), and its
`explain_url`, opened in headless Chromium, lands on an explanation whose top factor is that model in that
version."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import ROOT, DaemonProcess
from tests.integration.promstack import ServerSet, poll, query, scrape_config
from tests.monitor.web.pages.test_browser import browser  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration

CORPUS = ROOT / "tests" / "fixtures" / "corpus" / "adk_native__tool_agent"
ALERT = "AgentEvalPassRatioLow"
COPIES = 10  # traces per (version, model)
BAD = ("1.5", "gemini-2.5-pro")
GROUPS = [("1.4", "gemini-2.5-flash"), ("1.4", "gemini-2.5-pro"), ("1.5", "gemini-2.5-flash"), BAD]
CONFIG = {
    "evaluators": [
        {"name": "error_free", "alert": {"min_pass_ratio": 0.9, "window": "10m", "for": "1s", "min_samples": 10}}
    ],
    "alerting": {"group_interval": "1s"},
    "explain": {"attribution": {"interval": "1s", "range": "1h"}},
    "drift": {"enabled": False},
}
PAIR = "model=gemini-2.5-pro AND service.version=1.5"


def _annotations(port: int) -> dict[str, str] | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=5) as response:
        alerts = json.loads(response.read())["data"]["alerts"]
    firing = [a for a in alerts if a["labels"]["alertname"] == ALERT and a["state"] == "firing"]
    return firing[0]["annotations"] if firing else None


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[DaemonProcess, int]]:
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    daemon = DaemonProcess(workdir, CONFIG, env=project_env())
    rules = tmp_path / "agent-monitor.rules.yml"
    servers = ServerSet(tmp_path)
    with contextlib.ExitStack() as stack:
        stack.callback(daemon.stop)
        daemon.launch()
        daemon.write_rules(rules)
        stack.callback(servers.stop)
        port = servers.start_prometheus(scrape_config(daemon.metrics_port) + f"rule_files: ['{rules}']\n")
        daemon.wait_ready()
        yield daemon, port


def test_the_alerts_link_opens_the_explanation_of_the_failing_model_in_its_version(stack, browser) -> None:  # noqa: F811
    daemon, port = stack
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    # Prometheus sees each counter series before it grows (increase() of a series born at its value is 0): the
    # healthy traffic, then a first wave of the failing version, then the rest of it.
    waves = [*((version, model, COPIES, []) for version, model in GROUPS[:-1]), (*BAD, 2, ["--fail-tools"])]
    waves.append((*BAD, COPIES, ["--fail-tools"]))
    sent = 0
    for version, model, copies, extra in waves:
        if extra:  # the failing traffic: once every series so far is in Prometheus
            seen = poll(port, "agent_eval_results_total", lambda r, n=sent: sum(float(s["value"][1]) for s in r) >= n)
            assert sum(float(s["value"][1]) for s in seen) >= sent, seen
        send("grpc", endpoint, "variant", str(CORPUS), "--copies", str(copies), "--version", version, "--model", model,
             *extra)  # fmt: skip
        sent += copies
        evaluated = lambda n=sent: daemon.value("agent_monitor_traces_evaluated_total") >= n  # noqa: E731
        assert daemon.wait_for_condition(evaluated, timeout=90), daemon.output()[-3000:]

    # The daemon's own gauge: the pair first, only in the failures (+Inf), while error_free is breached.
    attributed = lambda: any(  # noqa: E731
        labels["value"] == "gemini-2.5-pro AND 1.5" for labels, _ in daemon.metrics().get("agent_eval_attribution", [])
    )
    assert daemon.wait_for_condition(attributed, timeout=30), daemon.metrics().get("agent_eval_attribution")

    # Prometheus: the alert fires, and its top_factor annotation names the pair (once the gauge was scraped).
    firing = poll(port, f'ALERTS{{alertname="{ALERT}",alertstate="firing"}}', lambda r: len(r) == 1, timeout=60)
    assert len(firing) == 1, query(port, "ALERTS")
    notes = _annotations(port)
    for _ in range(60):
        if notes and notes.get("top_factor"):
            break
        subprocess.run(["sleep", "0.5"], check=True)
        notes = _annotations(port)
    assert notes is not None and notes["top_factor"].startswith("model AND service.version=gemini-2.5-pro AND 1.5"), (
        notes
    )

    # The on-call engineer follows the alert's explain link to the explanation.
    url = notes["explain_url"]
    assert url.startswith(f"{daemon.api_base}/review/explain?evaluator=error_free&service="), url
    page = browser.new_page()
    page.set_default_timeout(15_000)
    response = page.goto(url)
    assert response is not None and response.status == 200, page.inner_text("main")
    headline = page.locator(".explain-headline").first.inner_text()
    assert headline.startswith(f"{PAIR}: 100 % of"), page.inner_text("main")
    first = page.locator("table.factors tbody tr").first
    assert first.get_attribute("data-factor") == PAIR, page.inner_text("main")
    assert "only here" in first.inner_text()
    page.close()
