"""The daemon serves /api/v1: the evaluators with their live window figures, the reader from its store
(or a 503 saying why not), the open OpenAPI document; `agent-monitor review` reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from monitor.review.service import STORE_DISABLED
from tests.integration.conftest import project_env
from tests.integration.otlp_raw import post
from tests.integration.test_api_auth import ERROR_FREE, TOKEN, failing_tool_trace

pytestmark = pytest.mark.integration
ALERTED = [{"name": "error_free", "alert": {"min_pass_ratio": 0.9, "min_samples": 1}}]


def test_daemon_serves_evaluators_results_and_the_document(daemon_factory):
    daemon = daemon_factory({"receivers": {"auth": {"bearer_token": TOKEN}}}, evaluators=ALERTED)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert post(daemon.http_port, failing_tool_trace(), headers=bearer)[0] == 200
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 1) == 1

    status, body, _ = daemon.get("/api/v1/evaluators", bearer)
    assert status == 200
    (info,) = json.loads(body)
    assert (info["name"], info["kind"], info["level"], info["alert_min_pass_ratio"]) == (
        "error_free",
        "rule",
        "trace",
        0.9,
    )
    assert info["alert_state"] in ("pending", "firing")  # the failing trace breached the 0.9 minimum
    assert [(w["window"], w["samples"], w["pass_ratio"]) for w in info["windows"]] == [("5m", 1, 0.0), ("1h", 1, 0.0)]

    def stored() -> bool:  # the store's writer thread commits shortly after the metrics count the trace
        status, body, _ = daemon.get("/api/v1/results?outcome=fail", bearer)
        return status == 200 and bool(json.loads(body)["items"])

    assert daemon.wait_for_condition(stored)
    [item] = json.loads(daemon.get("/api/v1/results?outcome=fail", bearer)[1])["items"]
    assert (item["trace_id"], item["evaluator"], item["outcome"]) == ("ab" * 16, "error_free", "fail")
    status, body, _ = daemon.get(f"/api/v1/traces/{'AB' * 16}", bearer)
    assert status == 200 and json.loads(body)["summary"]["trace_id"] == "ab" * 16

    assert daemon.get("/api/v1/evaluators")[0] == 401
    status, body, _ = daemon.get("/api/v1/openapi.json")
    assert status == 200 and json.loads(body)["openapi"] == "3.1.0"

    command = [sys.executable, "-m", "monitor.cli", "review", "--url", daemon.api_base, "--evaluators"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **project_env(), "AGENT_MONITOR_API_TOKEN": TOKEN},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[:3] == ["error_free", "rule", "trace"]


def test_store_disabled_is_503_and_the_evaluators_still_answer(daemon_factory):
    daemon = daemon_factory({"store": {"enabled": False}}, evaluators=ERROR_FREE)
    status, body, _ = daemon.get("/api/v1/results")
    assert (status, json.loads(body)) == (503, {"error": f"review unavailable: {STORE_DISABLED}"})
    assert daemon.get("/api/v1/evaluators")[0] == 200
