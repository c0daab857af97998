"""The Done-when of poll mode with a real Phoenix: traces land in Phoenix through the OpenTelemetry SDK, the daemon
polls the project on its schedule and evaluates exactly those traces — run after run without counting one twice —
stores them for the review, and writes every verdict back to Phoenix as annotations."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess
from tests.monitor.sources.test_phoenix import SCENARIOS, load
from tests.monitor.sources.test_phoenix import project as project  # the fixture

pytestmark = pytest.mark.integration
EVALUATORS = [{"name": "error_free"}, {"name": "tool_success_rate"}, {"name": "latency"}]


def _annotations(url: str, project: str, kind: str, ids: list[str]) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode([(f"{kind}_ids", i) for i in ids] + [("limit", 1000)])
    with urllib.request.urlopen(f"{url}/v1/projects/{project}/{kind}_annotations?{query}", timeout=10) as response:
        return list(json.load(response)["data"])


def test_the_daemon_polls_phoenix_evaluates_each_trace_once_and_writes_the_verdicts_back(
    phoenix: str, project: str, tmp_path: Path
) -> None:
    traces = load(phoenix, project, SCENARIOS, spacing=60)  # started in the last hour
    source = {"type": "phoenix", "name": "phoenix", "url": phoenix, "project": project, "interval": "1s",
              "settle_delay": "1s", "backfill": "2h", "write_back": True}  # fmt: skip
    daemon = DaemonProcess(tmp_path, {"sources": [source], "evaluators": EVALUATORS}, env=project_env()).start()
    try:
        evaluated = daemon.wait_for("agent_monitor_traces_evaluated_total", len(traces), timeout=60)
        assert evaluated == len(traces), daemon.output()[-3000:]
        runs = lambda: daemon.value("agent_monitor_poll_runs_total", source="phoenix", status="ok")  # noqa: E731
        assert daemon.wait_for_condition(lambda: runs() >= 4, timeout=30)
        assert daemon.value("agent_monitor_traces_evaluated_total") == len(traces)  # polled again, counted once
        assert daemon.value("agent_monitor_poll_traces_total", source="phoenix") == len(traces)
        for kind in ("auth", "client", "decode", "writeback"):
            assert daemon.value("agent_monitor_poll_errors_total", source="phoenix", kind=kind) == 0

        status, body, _ = daemon.get("/api/v1/results?evaluator=error_free&limit=100")
        assert status == 200
        assert {item["trace_id"] for item in json.loads(body)["items"]} == set(traces)
        assert {item["service"] for item in json.loads(body)["items"]} == {project}  # Phoenix keeps no resource

        # every stored verdict is in Phoenix: trace-level ones on the trace, the others on their span
        items = [i for i in json.loads(daemon.get("/api/v1/results?limit=500")[1])["items"] if i["outcome"] != "skip"]
        expected = {("trace" if i["level"] == "trace" else "span", i["trace_id"] if i["level"] == "trace"
                     else i["span_id"], i["evaluator"], i["outcome"]) for i in items}  # fmt: skip
        assert {e for _, _, e, _ in expected} == {e["name"] for e in EVALUATORS}
        assert any(kind == "span" for kind, *_ in expected) and any(kind == "trace" for kind, *_ in expected)
        span_ids = [target for kind, target, _, _ in expected if kind == "span"]

        def written_back() -> set[tuple[str, str, str, str]]:
            found = {("trace", a["trace_id"], a["name"], a["result"]["label"])
                     for a in _annotations(phoenix, project, "trace", list(traces))}  # fmt: skip
            found |= {("span", a["span_id"], a["name"], a["result"]["label"])
                      for a in _annotations(phoenix, project, "span", span_ids)}  # fmt: skip
            return found

        assert daemon.wait_for_condition(lambda: written_back() == expected, timeout=30), (written_back(), expected)
        error_traces = [t for t, spans in traces.items() if any(s.status_code == 2 for s in spans)]
        assert error_traces and all(("trace", t, "error_free", "fail") in expected for t in error_traces)
        kinds = {a["annotator_kind"] for a in _annotations(phoenix, project, "trace", list(traces))}
        assert kinds == {"CODE"}
        more = runs()
        assert daemon.wait_for_condition(lambda: runs() >= more + 2, timeout=30)
        assert len(_annotations(phoenix, project, "trace", list(traces))) == len(
            [e for e in expected if e[0] == "trace"]
        )  # nothing written twice
    finally:
        daemon.stop()
