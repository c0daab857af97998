"""Issue 25's "done when", end to end: a real daemon receives two versions of an agent through the real OTel SDK
exporter; the baseline (1.4) succeeds, the candidate (1.5) has a new tool failure (convert_currency raising
"RuntimeError: FX rate service unavailable (HTTP 503) ..." with ids and amounts that vary per trace). The failure
is one new signature per evaluator it fails: in the API (status new, seen in 1.5, one result per failing trace),
on the Failures page in headless Chromium (one click to its traces), on the canary page as a new failure mode of
1.5, and `AgentEvalNewFailureSignature` fires in a real Prometheus loading the rules `agent-monitor rules` wrote.

Two daemons sharing PostgreSQL counting it new once: tests/integration/test_signatures_daemon.py."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import project_env, send
from tests.integration.daemon_process import DaemonProcess
from tests.integration.promstack import ServerSet, poll, query, scrape_config
from tests.monitor.web.pages.test_browser import browser  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration

SERVICE = "synthetic-agent"
TOOL = "convert_currency"
ERROR = "FX rate service unavailable (HTTP 503): converting {amount} EUR, request {id}"
ALERT = "AgentEvalNewFailureSignature"
BASELINE, CANDIDATE = "1.4", "1.5"
TRACES = 6  # of each version
WINDOW = 20  # signatures.window, seconds: the alert's range (its `for` is 0)
CONFIG = {
    "variants": {
        "attribute": "service.version",
        "compare": [{"evaluator": "error_free", "baseline": BASELINE, "candidate": CANDIDATE, "window": "1h"}],
    },
    "signatures": {"window": f"{WINDOW}s"},
    "alerting": {"group_interval": "1s"},
}
FAILING = ("error_free", "tool_success_rate")  # the default evaluators a failing tool call fails (at least)


@dataclass(frozen=True)
class Stack:
    daemon: DaemonProcess
    prometheus: int  # its port


def _send(daemon: DaemonProcess, version: str, *extra: str) -> None:
    endpoint = f"127.0.0.1:{daemon.grpc_port}"
    send("grpc", endpoint, "synthetic", "--traces", str(TRACES), "--version", version, "--tool", TOOL, *extra)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """The daemon (default evaluators) fed the healthy baseline, and a Prometheus with the generated rules scraping
    it, both seconds old: the rule needs no scrape history."""
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    daemon = DaemonProcess(workdir, CONFIG, env=project_env())
    rules = tmp_path / "agent-monitor.rules.yml"
    servers = ServerSet(tmp_path)
    with contextlib.ExitStack() as stack:
        stack.callback(daemon.stop)
        daemon.launch()
        assert ALERT in daemon.write_rules(rules)
        stack.callback(servers.stop)
        port = servers.start_prometheus(scrape_config(daemon.metrics_port) + f"rule_files: ['{rules}']\n")
        daemon.wait_ready()
        _send(daemon, BASELINE)
        evaluated = lambda: daemon.value("agent_monitor_traces_evaluated_total") >= TRACES  # noqa: E731
        assert daemon.wait_for_condition(evaluated, timeout=60), daemon.output()[-3000:]
        assert daemon.value("agent_eval_results_total", outcome="fail") == 0  # the baseline is healthy
        yield Stack(daemon, port)


def _api(daemon: DaemonProcess, path: str) -> Any:
    status, body, _ = daemon.get(path)
    assert status == 200, body[:2000]
    return json.loads(body)


def _annotations(port: int) -> dict[str, dict[str, str]]:
    """The annotations of the firing new-signature alerts in Prometheus, by evaluator."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=5) as response:
        alerts = json.loads(response.read())["data"]["alerts"]
    return {
        a["labels"]["evaluator"]: a["annotations"]
        for a in alerts
        if a["labels"]["alertname"] == ALERT and a["state"] == "firing"
    }


def _ours(daemon: DaemonProcess) -> dict[str, dict[str, Any]]:
    """The tool failure's signatures in the API, by evaluator."""
    items = _api(daemon, "/api/v1/signatures?since=1h")["items"]
    return {s["evaluator"]: s for s in items if s["step_name"] == TOOL}


def test_new_failure_mode(stack: Stack, browser) -> None:  # noqa: F811
    """Short name: Chromium's singleton socket lives under the test's tmp_path (a unix socket path is short)."""
    daemon, port = stack.daemon, stack.prometheus
    _send(daemon, CANDIDATE, "--fail-every", "1", "--tool-error", ERROR)
    stored = lambda: set(FAILING) <= set(_ours(daemon))  # noqa: E731
    assert daemon.wait_for_condition(stored, timeout=60), (_ours(daemon), daemon.output()[-3000:])

    # Prometheus: the alert fires for each evaluator the failure is new to (for 0: within a few evaluations).
    alerts = f'ALERTS{{alertname="{ALERT}",alertstate="firing",service="{SERVICE}"}}'
    done = lambda r: {a["metric"]["evaluator"] for a in r} == set(FAILING)  # noqa: E731
    firing = poll(port, alerts, done, timeout=WINDOW)
    assert done(firing), f"{query(port, 'ALERTS')}\n{query(port, 'agent_eval_failure_signatures_new_total')}"
    ours = _ours(daemon)
    assert set(ours) == set(FAILING), ours

    # The on-call engineer follows the alert's link (its window: 20s, so at once) to the new signature.
    page = browser.new_page()
    page.set_default_timeout(15_000)
    url = _annotations(port)["error_free"]["failing_traces_url"]
    # The link is the daemon's own address (api.external_url unset: its metrics host and port), followed as is.
    assert url.startswith(f"{daemon.api_base}/review?evaluator=error_free&service=synthetic-agent&since="), url
    page.goto(url)
    row = page.locator("table.signatures tbody tr")
    assert [row.nth(i).get_attribute("data-signature") for i in range(row.count())] == [ours["error_free"]["id"]]

    # The API: one new signature per failing evaluator, seen in the candidate only, a result per failing trace.
    for evaluator in FAILING:
        item = ours[evaluator]
        assert (item["status"], item["count"], item["traces"]) == ("new", TRACES, TRACES), item
        assert (item["step_kind"], item["error_type"]) == ("tool", "http_503"), item
        assert item["variants"] == [CANDIDATE] and item["services"] == [SERVICE], item
        assert "FX rate service unavailable" in item["template"] and "EUR" in item["template"], item
    signature = ours["error_free"]
    detail = _api(daemon, f"/api/v1/signatures/{signature['id']}?since=1h")
    assert detail["signature"]["id"] == signature["id"]
    traces = detail["traces"]
    assert len({t["trace_id"] for t in traces}) == TRACES and {t["variant"] for t in traces} == {CANDIDATE}
    for trace in traces:  # one row per trace, with every failing verdict of it (and their signatures)
        verdicts = {v["evaluator"]: v["signature"] for v in trace["verdicts"]}
        assert verdicts == {e: ours[e]["id"] for e in FAILING}, trace

    # The Failures page: the signature is listed, one click opens its traces.
    response = page.goto(f"{daemon.api_base}/review")  # the landing page, its default range
    assert response is not None and response.status == 200
    listed = page.locator("table.signatures tbody tr")
    assert {listed.nth(i).get_attribute("data-signature") for i in range(listed.count())} == {
        ours[e]["id"] for e in FAILING
    }, page.inner_text("main")
    row = page.locator(f'table.signatures tbody tr[data-signature="{signature["id"]}"]')
    assert TOOL in row.inner_text() and "FX rate service unavailable" in row.inner_text()
    assert "new" in row.locator(".badge").inner_text() and CANDIDATE in row.locator("td.where").inner_text()
    with page.expect_navigation():
        row.locator("a.signature").click()
    assert f"/review/signatures/{signature['id']}" in page.url
    rows = page.locator("table.signature-traces tbody tr")
    assert rows.count() == TRACES, page.inner_text("main")
    links = {rows.nth(i).locator("td.id a").get_attribute("href") or "" for i in range(TRACES)}
    assert {t["trace_id"] for t in traces} == {link.split("?")[0].rsplit("/", 1)[-1] for link in links}, links

    # The canary page: a new failure mode of the candidate.
    page.goto(f"{daemon.api_base}/review/canary")
    assert page.locator("h2", has_text=f"New failure modes in {CANDIDATE}").count() == 1, page.inner_text("main")
    new = page.locator("table.new-modes tbody tr")
    listed = {new.nth(i).get_attribute("data-signature") for i in range(new.count())}
    assert {ours[e]["id"] for e in FAILING} <= listed, page.inner_text("main")
    assert "only in the candidate" in new.first.inner_text()
    page.close()
