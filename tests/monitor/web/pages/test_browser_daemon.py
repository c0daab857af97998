"""The on-call walkthrough of test_browser.py against the real daemon: corpus traces of several frameworks sent
with the real OTel SDK exporter, evaluated, stored in SQLite and read back by the review page. One of them, a
failing tool trace, carries hostile HTML in the agent's answer. The facts the walkthrough checks are read from
the daemon's own review API, so the page is held to what the store holds."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.traces import read_paths
from tests.integration.conftest import CORPUS, project_env, send
from tests.integration.daemon_process import DaemonProcess
from tests.integration.otel_sender import make_exporter, readable
from tests.monitor.web.pages.conftest import Site
from tests.monitor.web.pages.sample import XSS, Facts
from tests.monitor.web.pages.test_browser import browser, test_on_call_walkthrough  # noqa: F401  (run here again)

pytestmark = pytest.mark.integration

TOKEN = "daemon-review-token"
TRACE_UI = "http://jaeger.example:16686/trace/{trace_id}"
HOSTILE = "oi_openai__tool_error"  # agent → LLM → failing tool → LLM; its answer gets the payload
ANSWER = "Sorry, I couldn't convert"
HOSTILE_TRACE = "5c" * 16
CORPUS_SCENARIOS = ("oi_openai__tool_agent", "otel_genai__tool_error", "adk_native__tool_agent", "strands__tool_agent")
EVALUATOR = "error_free"


def _send_hostile(endpoint: str) -> None:
    """The scenario under a new trace id, with XSS prepended to every attribute holding the agent's answer."""
    spans = []
    for record in read_paths([CORPUS / HOSTILE]).spans:
        attributes = {
            key: XSS + value if isinstance(value, str) and ANSWER in value else value
            for key, value in record.attributes.items()
        }
        spans.append(readable(dataclasses.replace(record, trace_id=HOSTILE_TRACE, attributes=attributes)))
    exporter = make_exporter("grpc", endpoint, {}, None)
    try:
        assert exporter.export(spans).name == "SUCCESS"
    finally:
        exporter.shutdown()


def _facts(daemon: DaemonProcess) -> Facts:
    bearer = {"Authorization": f"Bearer {TOKEN}"}

    def stored() -> bool:
        return daemon.get(f"/api/v1/traces/{HOSTILE_TRACE}", bearer)[0] == 200

    assert daemon.wait_for_condition(stored, timeout=60), "the hostile trace never reached the store"
    detail = json.loads(daemon.get(f"/api/v1/traces/{HOSTILE_TRACE}", bearer)[1])
    failing = [r for r in detail["results"] if r["evaluator"] == EVALUATOR and r["outcome"] == "fail"]
    assert failing, detail["results"]
    [error_step] = [s["name"] for s in detail["steps"] if s["error"]]
    kinds = [s["kind"] for s in detail["steps"]]
    assert kinds[:2] == ["agent", "llm"] and "tool" in kinds  # agent → LLM call → tool call
    assert XSS in (detail["summary"]["output"] or "")
    others = tuple(sorted({r["evaluator"] for r in detail["results"]} - {EVALUATOR}))
    return Facts(
        failing_trace=HOSTILE_TRACE,
        evaluator=EVALUATOR,
        explanation=failing[0]["explanation"],
        step_names=tuple(s["name"] for s in detail["steps"]),
        error_step=error_step,
        other_evaluators=others[:3],
        step_depths=tuple(s["depth"] for s in detail["steps"]),
    )


@pytest.fixture
def review_site(tmp_path: Path) -> Iterator[Site]:
    """The real daemon (default evaluator set, SQLite store, a token) after it evaluated the traces."""
    workdir = tmp_path / "daemon"
    workdir.mkdir()
    config = {"api": {"auth": {"bearer_token": TOKEN}}, "review": {"trace_url_template": TRACE_UI}}
    daemon = DaemonProcess(workdir, config, env=project_env())
    daemon.start()
    try:
        endpoint = f"127.0.0.1:{daemon.grpc_port}"
        send("grpc", endpoint, "corpus", *(str(CORPUS / s) for s in CORPUS_SCENARIOS))
        _send_hostile(endpoint)
        yield Site(daemon.api_base, TOKEN, _facts(daemon), TRACE_UI)
    finally:
        daemon.stop()
