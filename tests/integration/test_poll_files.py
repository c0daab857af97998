"""An `otlp_files` source in the real daemon: the Collector's file exporter output (JSON lines) read as it grows,
spans assembled into traces like received ones, a partly written line completed later, a restart reading on from
the stored offsets without evaluating anything twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import project_env
from tests.integration.daemon_process import DaemonProcess
from tests.support.otlp_json import corpus_traces, otlp_document

pytestmark = pytest.mark.integration
SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent", "strands__tool_agent")


def test_the_daemon_reads_the_collector_files_as_they_grow_and_resumes_after_a_restart(tmp_path: Path) -> None:
    traces = list(corpus_traces(*SCENARIOS).values())
    lines = [json.dumps(otlp_document(spans)) + "\n" for spans in traces]
    directory = tmp_path / "otelcol"
    directory.mkdir()
    active = directory / "traces.json"
    active.write_text(lines[0] + lines[1][:50])  # the second line is still being written
    source = {"type": "otlp_files", "name": "files", "directory": str(directory), "pattern": "*.json",
              "interval": "0.5s"}  # fmt: skip
    config = {"sources": [source], "evaluators": [{"name": "error_free"}]}
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    daemon = DaemonProcess(workdir, config, env=project_env()).start()
    try:
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 1, timeout=30) == 1
        with active.open("a") as out:
            out.write(lines[1][50:] + lines[2])
        assert daemon.wait_for("agent_monitor_traces_evaluated_total", 3, timeout=30) == 3
        assert daemon.value("agent_monitor_poll_errors_total", source="files", kind="decode") == 0
    finally:
        daemon.stop()
    with active.open("a") as out:
        out.write(lines[3])
    restarted = DaemonProcess(workdir, config, env=project_env()).start()
    try:
        assert restarted.wait_for("agent_monitor_traces_evaluated_total", 1, timeout=30) == 1  # only the new one
        runs = lambda: restarted.value("agent_monitor_poll_runs_total", source="files", status="ok")  # noqa: E731
        done = runs()
        assert restarted.wait_for_condition(lambda: runs() >= done + 3, timeout=30)
        assert restarted.value("agent_monitor_traces_evaluated_total") == 1
        status, body, _ = restarted.get("/api/v1/results?limit=100")
        assert status == 200 and {i["trace_id"] for i in json.loads(body)["items"]} == {
            spans[0].trace_id for spans in traces
        }  # all four, across both runs, in the one store
    finally:
        restarted.stop()
