"""The metrics port: trace content only with the token, Prometheus endpoints open, TLS, a quiet shutdown."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.integration.otlp_raw import post, request, span

pytestmark = pytest.mark.integration

TOKEN = "s3cret"
SECRET_ERROR = "db password=hunter2"
ERROR_FREE = [{"name": "error_free"}]


def failing_tool_trace() -> bytes:
    """One trace whose tool span failed with a secret in its error text."""
    root = span("ab" * 16, "01" * 8, name="invoke_agent")
    tool = span("ab" * 16, "02" * 8, "01" * 8, name="execute_tool lookup", attrs={"gen_ai.tool.name": "lookup"})
    tool.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=SECRET_ERROR))
    return request([root, tool]).SerializeToString()


def test_trace_content_needs_the_token_and_prometheus_endpoints_stay_open(daemon_factory):
    daemon = daemon_factory({"receivers": {"auth": {"bearer_token": TOKEN}}}, evaluators=ERROR_FREE)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert post(daemon.http_port, failing_tool_trace(), headers=bearer)[0] == 200
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 1) == 1
    for path in ("/api/failing", "/api/failing?evaluator=error_free", "/api/anything", "/nowhere"):
        status, body, headers = daemon.get(path)
        assert status == 401, path
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert b"hunter2" not in body
    status, _, _ = daemon.get("/api/failing", {"Authorization": "Bearer wrong"})
    assert status == 401
    status, body, _ = daemon.get("/api/failing", bearer)  # the receivers' token serves the API by default
    assert status == 200 and SECRET_ERROR in json.loads(body)["items"][0]["explanation"]  # the v1 answer
    for path in ("/metrics", "/healthz", "/readyz"):
        assert daemon.get(path)[0] == 200, path


def test_api_token_of_its_own(daemon_factory):
    daemon = daemon_factory({"api": {"auth": {"bearer_token": "api-only"}}}, evaluators=ERROR_FREE)
    assert post(daemon.http_port, failing_tool_trace())[0] == 200  # the receivers stay open
    assert daemon.get("/api/failing")[0] == 401
    assert daemon.get("/api/failing", {"Authorization": "Bearer api-only"})[0] == 200


def test_api_over_tls(daemon_factory, certificate):
    key, cert = certificate
    daemon = daemon_factory(
        {"api": {"tls": {"cert_file": str(cert), "key_file": str(key)}, "auth": {"bearer_token": TOKEN}}}
    )
    assert daemon.api_base.startswith("https://")
    status, body, _ = daemon.get("/metrics")  # verified against the certificate
    assert status == 200 and b"agent_monitor_" in body
    status, body, _ = daemon.get("/api/failing", {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and json.loads(body)["items"] == []  # followed to /api/v1/results over TLS
    assert daemon.get("/api/failing")[0] == 401
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(f"http://127.0.0.1:{daemon.metrics_port}/metrics", timeout=5)


def test_shutdown_with_keep_alive_clients_is_quiet(daemon_factory):
    daemon = daemon_factory()
    held = []
    for port, method, path, body, headers in (
        (daemon.metrics_port, "GET", "/metrics", None, {}),
        (daemon.http_port, "POST", "/v1/traces", failing_tool_trace(), {"Content-Type": "application/x-protobuf"}),
    ):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        assert response.status == 200 and not response.will_close
        held.append(conn)  # keep-alive connections still open at SIGTERM
    try:
        assert daemon.stop() == 0
    finally:
        for conn in held:
            conn.close()
    log = daemon.output()
    assert "Traceback" not in log and " ERROR " not in log, log
