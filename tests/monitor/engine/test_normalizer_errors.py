"""A convention normalizer that raises: the trace is still evaluated, the error logged once and counted per
convention, in this process (the SDK's counter) and, from an evaluation worker process, in /metrics."""

from __future__ import annotations

import asyncio
import logging

import pytest

from evaluators.traces import build_trace, conventions
from evaluators.traces.conventions import NORMALIZER_ERRORS, normalizer_errors
from evaluators.traces.conventions.errors import NormalizerErrors
from evaluators.traces.conventions.openinference import OpenInference
from evaluators.traces.conventions.otel_genai import OTelGenAI
from evaluators.traces.model import Trace
from monitor.config import MonitorConfig
from monitor.engine.assembler import CompletedTrace
from monitor.engine.pool import EvaluationPool, WorkerSlot, process_slots, thread_slot
from monitor.engine.recorder import ResultRecorder
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from tests.support.completed_traces import synthetic_traces

SERIES = 'agent_monitor_normalizer_errors_total{convention="otel_genai"}'


def raising_span_kind(self, span):
    """What tests/monitor/engine/broken_normalizer.py puts in the worker's OTelGenAI (never imported here: it
    patches)."""
    raise ValueError(f"normalizer bug on span {span.name!r}")


def raising_detect(self, span):
    """An OpenInference `detect` with a bug: the convention's markers cannot be read at all."""
    raise KeyError(f"detect bug on span {span.name!r}")


def normalized(trace: Trace) -> list[tuple]:
    """What the conventions decided of each span: its view, kind, agent and, for a model call, model and usage."""
    calls = {c.span_id: (c.model, c.usage) for c in trace.get_llm_calls()}
    return [(s.span_id, type(s).__name__, s.kind, s.agent_name, calls.get(s.span_id)) for s in trace.spans]


def exported(metrics: MetricsExporter, series: str) -> float:
    for line in metrics.render(None)[0].decode().splitlines():
        if line.startswith(series + " "):
            return float(line.rpartition(" ")[2])
    raise AssertionError(f"{series} not in the exposition")


def errors_building(traces) -> int:
    """The otel_genai normalizer errors that building `traces` counts in this process."""
    before = normalizer_errors().get("otel_genai", 0)
    for completed in traces:
        build_trace(completed.spans, completed.trace_id)
    return normalizer_errors().get("otel_genai", 0) - before


def test_a_raising_normalizer_is_counted_and_logged_once_and_the_trace_still_builds(monkeypatch, caplog) -> None:
    traces = synthetic_traces(3)
    healthy = [build_trace(t.spans, t.trace_id) for t in traces]
    fresh = NormalizerErrors()  # nothing logged yet in it, whatever ran before in this process
    monkeypatch.setattr(conventions, "NORMALIZER_ERRORS", fresh)
    monkeypatch.setattr(OTelGenAI, "span_kind", raising_span_kind)
    with caplog.at_level(logging.WARNING, logger="evaluators.traces.conventions"):
        built = [build_trace(t.spans, t.trace_id) for t in traces]
        counted = fresh.counts()["otel_genai"]
        [build_trace(t.spans, t.trace_id) for t in traces]
    assert counted >= sum(len(t.spans) for t in traces) > 0  # every span asks otel_genai its kind
    assert [[s.span_id for s in t.spans] for t in built] == [[s.span_id for s in t.spans] for t in healthy]
    assert fresh.counts() == {"otel_genai": 2 * counted}
    assert fresh.take() == {"otel_genai": 2 * counted} and fresh.take() == {}
    logged = [r for r in caplog.records if "otel_genai normalizer raised" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info and "normalizer bug" in str(logged[0].exc_info[1])


def test_a_convention_whose_detect_raises_is_left_out_counted_and_logged_once(monkeypatch, caplog) -> None:
    """OpenInference is asked first about every span; its detect raising leaves the OTel GenAI spans normalized
    exactly as before (by the conventions that do match), one count per span, one log line."""
    traces = synthetic_traces(3)
    healthy = [normalized(build_trace(t.spans, t.trace_id)) for t in traces]
    fresh = NormalizerErrors()
    monkeypatch.setattr(conventions, "NORMALIZER_ERRORS", fresh)
    monkeypatch.setattr(OpenInference, "detect", raising_detect)
    with caplog.at_level(logging.WARNING, logger="evaluators.traces.conventions"):
        built = [normalized(build_trace(t.spans, t.trace_id)) for t in traces]
    assert built == healthy
    assert any(call for trace in built for *_, call in trace)  # model calls were read (by otel_genai)
    assert fresh.counts() == {"openinference": sum(len(t.spans) for t in traces)}
    logged = [r for r in caplog.records if "openinference normalizer raised on detection" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info and "detect bug" in str(logged[0].exc_info[1])


def test_a_raising_detect_is_counted_in_the_metrics(monkeypatch) -> None:
    """Traces evaluated in the daemon's process (a worker thread) count the detect errors into
    agent_monitor_normalizer_errors_total{convention="openinference"}, and are evaluated all the same."""
    traces = synthetic_traces(2)
    NORMALIZER_ERRORS.take()  # what earlier tests in this process left: not this test's
    monkeypatch.setattr(OpenInference, "detect", raising_detect)
    metrics = _evaluated_and_recorded(thread_slot(TraceEvaluator([])), traces, 60)
    series = 'agent_monitor_normalizer_errors_total{convention="openinference"}'
    assert exported(metrics, series) == sum(len(t.spans) for t in traces)


def test_every_convention_is_exported_at_zero() -> None:
    metrics = MetricsExporter()
    assert exported(metrics, SERIES) == 0
    assert exported(metrics, 'agent_monitor_normalizer_errors_total{convention="openinference"}') == 0


@pytest.mark.integration
def test_a_worker_process_counts_normalizer_errors_into_the_daemons_metrics(monkeypatch) -> None:
    traces = synthetic_traces(4)
    with monkeypatch.context() as patch:
        patch.setattr(OTelGenAI, "span_kind", raising_span_kind)
        expected = errors_building(traces)  # what the worker's build of the same traces meets
    assert expected > 0
    config = MonitorConfig.model_validate(
        {"evaluators": [{"module": "tests.monitor.engine.broken_normalizer:span_count"}], "store": {"enabled": False}}
    )
    metrics = _evaluated_and_recorded(process_slots(config, 1), traces, 120)
    assert exported(metrics, SERIES) == expected


def _evaluated_and_recorded(slots: list[WorkerSlot], traces: list[CompletedTrace], timeout: float) -> MetricsExporter:
    """`traces` evaluated by a pool over `slots` (every one evaluated, none failed), their tallies recorded into
    a fresh exporter as the daemon records them."""
    tallies: list[MetricsTally] = []

    async def scenario() -> int:
        pool = EvaluationPool(slots, tallies.append, lambda reason, n: None)
        await pool.start()
        try:
            for completed in traces:
                assert pool.submit(completed)
            return await pool.drain(timeout)
        finally:
            await pool.shutdown(5.0)

    assert asyncio.run(scenario()) == 0
    assert sum(t.evaluated for t in tallies) == len(traces) and not any(t.failures for t in tallies)
    metrics = MetricsExporter()
    recorder = ResultRecorder(metrics.recording, metrics.results.apply_tally, metrics.evaluation.dropped)
    for tally in tallies:
        recorder.record(tally)
    return metrics
