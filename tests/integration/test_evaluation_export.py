"""The real daemon sends its failing results out as OTLP `gen_ai.evaluation.result` log records: fed corpus traces
by the real SDK span exporter, it delivers one record per failing result to a real LogsService, parented to the
evaluated span of the sent trace (its root for a trace-level result), and counts them on /metrics."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.traces import read_paths
from tests.integration.conftest import CORPUS, send
from tests.integration.daemon_process import DaemonProcess, read_store
from tests.support.logs_sink import Collected, attributes, grpc_logs_sink

pytestmark = pytest.mark.integration

SCENARIOS = ("oi_openai__tool_error", "tl_openai__tool_error", "oi_openai__tool_agent")
FAILING = "SELECT trace_id, span_id, evaluator FROM results WHERE passed = 0"


def _sent() -> tuple[dict[str, set[str]], dict[str, str]]:
    """The corpus spans sent: span ids by trace id, and each trace's root span id."""
    spans = read_paths([str(CORPUS / s) for s in SCENARIOS]).spans
    by_trace: dict[str, set[str]] = {}
    for record in spans:
        by_trace.setdefault(record.trace_id, set()).add(record.span_id)
    roots = {
        r.trace_id: r.span_id for r in spans if not r.parent_span_id or r.parent_span_id not in by_trace[r.trace_id]
    }
    return by_trace, roots


@contextlib.contextmanager
def _exporting(
    tmp_path: Path, traces: int, workers: int, **evaluations: str
) -> Iterator[tuple[DaemonProcess, Collected]]:
    """A daemon exporting to a real LogsService, once it has evaluated the scenarios' `traces` sent to it."""
    with grpc_logs_sink() as (endpoint, collected):
        export = {"enabled": True, "endpoint": endpoint, **evaluations}
        overrides = {"evaluation": {"workers": workers}, "export": {"evaluations": export}}
        with DaemonProcess(tmp_path, overrides).start() as daemon:
            send("grpc", f"127.0.0.1:{daemon.grpc_port}", "corpus", *(str(CORPUS / s) for s in SCENARIOS))
            daemon.wait_for("agent_monitor_traces_evaluated_total", traces)
            yield daemon, collected


def test_every_failing_result_arrives_as_one_record_on_its_span(tmp_path) -> None:
    by_trace, roots = _sent()
    with _exporting(tmp_path, len(by_trace), 1, timeout="10s") as (daemon, collected):
        store = tmp_path / "results.db"

        def settled() -> bool:  # every failing row stored, sent and counted
            rows = len(read_store(store, FAILING))
            exported = daemon.value("agent_monitor_evaluation_exports_total", outcome="exported")
            return 0 < rows == len(collected.records()) == exported

        daemon.wait_until(settled, "every failing result stored, received and counted")
        failing = read_store(store, FAILING)
        received = collected.records()
        assert daemon.value("agent_monitor_evaluation_exports_total", outcome="dropped") == 0
        assert daemon.value("agent_monitor_evaluation_exports_total", outcome="failed") == 0
    expected = sorted((trace, span or roots[trace], evaluator) for trace, span, evaluator in failing)
    got = sorted((r.trace_id.hex(), r.span_id.hex(), attributes(r)["gen_ai.evaluation.name"]) for _, _, r in received)
    assert got == expected
    assert all(span in by_trace[trace] for trace, span, _ in got)
    assert {scope.name for _, scope, _ in received} == {"agent-monitor"}
    assert {r.event_name for _, _, r in received} == {"gen_ai.evaluation.result"}
    assert {attributes(r)["gen_ai.evaluation.score.label"] for _, _, r in received} == {"fail"}


def test_worker_processes_send_their_own_records(tmp_path) -> None:
    """With worker processes each sends what it evaluates (its counts reach /metrics with its next batch)."""
    by_trace, _ = _sent()
    with _exporting(tmp_path, len(by_trace), 2, results="all") as (daemon, collected):
        results = daemon.value("agent_eval_results_total")
        daemon.wait_until(lambda: len(collected.records()) == results, "a record for every result")
        assert daemon.value("agent_monitor_evaluation_exports_total", outcome="exported") <= results
    assert {r.trace_id.hex() for _, _, r in collected.records()} == set(by_trace)
