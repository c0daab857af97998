"""The real daemon on 127.0.0.1, fed by the real OpenTelemetry SDK exporters and raw OTLP requests."""

from __future__ import annotations

import json
import os
import random
import time

import grpc
import pytest
from google.rpc import status_pb2

from tests.integration.conftest import CORPUS, send
from tests.integration.otlp_raw import grpc_export, post, request, span

pytestmark = pytest.mark.integration


def test_corpus_and_synthetic_over_grpc_and_http(daemon_factory):
    daemon = daemon_factory()
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(CORPUS / "oi_openai__tool_agent"))
    send(
        "http",
        f"http://127.0.0.1:{daemon.http_port}",
        "--compression",
        "gzip",
        "corpus",
        str(CORPUS / "tl_openai__tool_error"),
    )
    send("http", f"http://127.0.0.1:{daemon.http_port}", "synthetic", "--traces", "4", "--fail-every", "2")
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 6) == 6
    # no_tool_errors: the tl error trace and 2 of the 4 synthetic traces fail.
    assert daemon.value("agent_eval_results_total", evaluator="no_tool_errors", outcome="fail") == 3
    assert daemon.value("agent_eval_results_total", evaluator="no_tool_errors", outcome="pass") == 3
    # The ground-truth evaluator is skipped on every trace, counted by reason, never scored.
    assert daemon.value("agent_eval_skips_total", evaluator="matches_expected", reason="needs_ground_truth") == 6
    assert daemon.value("agent_eval_score_count", evaluator="matches_expected") == 0
    assert daemon.value("agent_llm_tokens_total", service="oi_openai", direction="input") == 389
    assert daemon.value("agent_tool_calls_total", service="tl_openai", tool="convert_currency", status="error") == 1
    assert daemon.value("agent_monitor_spans_received_total", receiver="grpc") == 6
    assert (
        daemon.value("agent_eval_pass_ratio", evaluator="no_tool_errors", service="synthetic-agent", window="5m") == 0.5
    )
    # Failing results carry a trace_id exemplar in the OpenMetrics exposition.
    status, body, headers = daemon.get("/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"})
    assert status == 200 and "openmetrics" in headers["Content-Type"]
    assert '# {trace_id="b2c5e4c92c1231941798447a8f2213ad"}' in body.decode()


def test_spans_split_across_requests_and_receivers_out_of_order(daemon_factory):
    daemon = daemon_factory({"assembly": {"quiet_period": "1s", "max_trace_wait": "4s"}})
    trace, root = "ab" * 16, "01" * 8
    children = [
        span(
            trace,
            f"{i:016x}",
            root,
            "execute_tool lookup",
            attrs={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
            error=i == 3,
        )
        for i in range(2, 8)
    ]
    # children over both receivers, one per request, one duplicate; the root last.
    for index, child in enumerate(children):
        payload = request([child]).SerializeToString()
        if index % 2:
            assert post(daemon.http_port, payload)[0] == 200
        else:
            grpc_export(daemon.grpc_port, payload)
    grpc_export(daemon.grpc_port, request([children[0]]).SerializeToString())
    assert post(daemon.http_port, request([span(trace, root, "", "invoke_agent a")]).SerializeToString())[0] == 200
    # a trace that never gets its root: completed by max_trace_wait.
    orphan = "cd" * 16
    grpc_export(
        daemon.grpc_port,
        request(
            [span(orphan, "0a" * 8, "0b" * 8, "execute_tool lookup", attrs={"gen_ai.tool.name": "lookup"})]
        ).SerializeToString(),
    )
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 1, timeout=10) >= 1
    assert daemon.value("agent_tool_calls_total", tool="lookup") == 6  # one trace, duplicate dropped
    assert daemon.value("agent_monitor_duplicate_spans_total") == 1
    assert daemon.value("agent_eval_results_total", evaluator="no_tool_errors", outcome="fail") == 1
    # a late span for the evaluated trace is counted, not re-evaluated
    grpc_export(daemon.grpc_port, request([span(trace, "99" * 8, root)]).SerializeToString())
    assert daemon.wait_for("agent_monitor_late_spans_total", 1) == 1
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 2, timeout=15) == 2
    assert daemon.value("agent_tool_calls_total", tool="lookup") == 7


def test_garbage_gets_the_right_answer_and_the_daemon_keeps_serving(daemon_factory):
    daemon = daemon_factory(
        {"receivers": {"http": {"max_body_bytes": 200_000}, "grpc": {"max_message_bytes": 200_000}}}
    )
    port = daemon.http_port
    rng = random.Random(7)
    garbage = bytes(rng.getrandbits(8) for _ in range(300))
    status, body, _ = post(port, garbage)
    assert status == 400 and status_pb2.Status.FromString(body).message
    good = request([span("ef" * 16, "01" * 8)]).SerializeToString()
    assert post(port, good[: len(good) // 2])[0] == 400  # truncated protobuf
    status, body, _ = post(
        port, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 12}]}]}]}', "application/json"
    )
    assert status == 400 and "traceId" in json.loads(body)["message"]
    assert post(port, b"{not json", "application/json")[0] == 400
    assert post(port, b"x" * 300_000)[0] == 413
    assert post(port, good, "text/plain")[0] == 415
    assert post(port, good, gzip_body=True)[0] == 200
    assert post(port, good, path="/v1development/profiles")[0] == 404  # (metrics: accepted and dropped)
    with pytest.raises(grpc.RpcError) as error:
        grpc_export(daemon.grpc_port, garbage)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as error:
        grpc_export(daemon.grpc_port, os.urandom(300_000))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # still serving, and the refusals are counted
    assert post(port, request([span("fe" * 16, "02" * 8)]).SerializeToString())[0] == 200
    assert daemon.get("/healthz")[0] == 200
    assert daemon.value("agent_monitor_spans_refused_total", receiver="http", reason="malformed") >= 4
    assert daemon.value("agent_monitor_spans_refused_total", receiver="http", reason="too_large") == 1
    assert daemon.value("agent_monitor_requests_total", receiver="http", code="INVALID_ARGUMENT") == 5
    assert daemon.process.poll() is None


def test_invalid_ids_are_reported_as_partial_success(daemon_factory):
    daemon = daemon_factory()
    good = span("aa" * 16, "01" * 8)
    bad = span("aa" * 16, "02" * 8)
    bad.trace_id = b"\x00" * 16
    response = grpc_export(daemon.grpc_port, request([good, bad]).SerializeToString())
    assert response.partial_success.rejected_spans == 1
    assert "invalid ids" in response.partial_success.error_message
    assert daemon.value("agent_monitor_spans_refused_total", reason="invalid_id") == 1


def test_bearer_token_is_required_on_both_receivers(daemon_factory):
    daemon = daemon_factory({"receivers": {"auth": {"bearer_token": "s3cret"}}})
    payload = request([span("bb" * 16, "01" * 8)]).SerializeToString()
    assert post(daemon.http_port, payload)[0] == 401
    assert post(daemon.http_port, payload, headers={"Authorization": "Bearer s3cret"})[0] == 200
    with pytest.raises(grpc.RpcError) as error:
        grpc_export(daemon.grpc_port, payload)
    assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
    grpc_export(daemon.grpc_port, payload, metadata=(("authorization", "Bearer s3cret"),))
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", str(CORPUS / "oi_openai__no_parent"), token="s3cret")
    assert daemon.wait_for("agent_monitor_spans_received_total", 3) == 3


def test_overload_throttles_and_exporter_retries_until_everything_is_evaluated(daemon_factory):
    # The SDK exports batches of 256 spans: 120 traces are 600 spans, and only one batch fits at a time.
    daemon = daemon_factory({"assembly": {"quiet_period": "1s", "max_pending_spans": 300, "max_spans_per_trace": 40}})
    output = send("grpc", f"127.0.0.1:{daemon.grpc_port}", "synthetic", "--traces", "120", timeout=300)
    assert "SUCCESS" in output
    throttled = daemon.value("agent_monitor_requests_total", receiver="grpc", code="UNAVAILABLE")
    assert throttled >= 1, daemon.output()
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", 120, timeout=60) == 120
    assert daemon.value("agent_monitor_spans_received_total", receiver="grpc") == 120 * 5
    assert daemon.value("agent_monitor_spans_pending") == 0


def test_sigterm_evaluates_pending_traces_before_exit(daemon_factory):
    daemon = daemon_factory({"assembly": {"quiet_period": "60s", "max_trace_wait": "120s"}})
    send(
        "grpc",
        f"127.0.0.1:{daemon.grpc_port}",
        "corpus",
        str(CORPUS / "oi_openai__tool_error"),
        str(CORPUS / "node_grpc__genai_manual"),
    )
    time.sleep(0.5)
    assert daemon.value("agent_monitor_traces_pending") == 3
    assert daemon.value("agent_monitor_traces_evaluated_total") == 0
    assert daemon.stop() == 0
    log = daemon.output()
    assert "evaluated 3 traces in total (3 completed at shutdown)" in log, log
    import sqlite3

    with sqlite3.connect(daemon.workdir / "results.db") as db:
        traces = db.execute("SELECT COUNT(*) FROM traces").fetchone()[0]
        failing = db.execute("SELECT COUNT(*) FROM results WHERE evaluator='no_tool_errors' AND passed=0").fetchone()
    assert traces == 3 and failing[0] == 2


def test_embedded_default_evaluators_run_on_the_whole_corpus(daemon_factory):
    daemon = daemon_factory(evaluators=None)  # no evaluators section: the default set, with its defaults
    scenarios = sorted(p for p in CORPUS.iterdir() if (p / "expected.json").is_file())
    expected = [t for p in scenarios for t in json.loads((p / "expected.json").read_text())["traces"]]
    send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", "--with-logs", *map(str, scenarios))
    assert daemon.wait_for("agent_monitor_traces_evaluated_total", len(expected)) == len(expected)
    failing = sum(t["has_error"] for t in expected)
    assert daemon.value("agent_eval_results_total", evaluator="error_free", outcome="fail") == failing
    assert daemon.value("agent_eval_results_total", evaluator="error_free", outcome="pass") == len(expected) - failing
    assert daemon.value("agent_eval_skips_total", reason="error") == 0
    # prohibited_content needs configured strings, so it is not in the default set: no result, no skip
    assert daemon.value("agent_eval_results_total", evaluator="pii_leak") > 0
    assert daemon.value("agent_eval_results_total", evaluator="prohibited_content") == 0
    assert daemon.value("agent_eval_skips_total", evaluator="prohibited_content") == 0
    # Per-call usage that only lives in log records (oi_adk) arrives over the logs signal and is joined.
    assert daemon.value("agent_llm_tokens_total", direction="input") == sum(t["input_tokens"] for t in expected)
    assert daemon.value("agent_llm_tokens_total", direction="output") == sum(t["output_tokens"] for t in expected)
