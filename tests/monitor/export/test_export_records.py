"""Evaluated traces out as `gen_ai.evaluation.result` records, through a real OTLP gRPC LogsService: one record per
exported result, parented to the evaluated span (the root span for a trace-level result), with the semantic
conventions' attributes; `results` chooses which rows leave."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluators.judges.control import judge_sampled_in
from evaluators.sessions import Session, Turn
from monitor.config import MonitorConfig
from monitor.engine.batch_run import BatchRun
from monitor.engine.evaluator_setup import build_evaluators
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.export.counts import EXPORTS
from monitor.export.exporter import EvaluationExporter
from monitor.export.from_config import exporter_of, http_logs_url
from monitor.export.records import EVENT_NAME, SCOPE_NAME, RecordBuilder
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import LateResults, ResultRow, SessionOutcome, TraceOutcome
from tests.support.completed_traces import corpus_traces
from tests.support.logs_sink import Collected, attributes, grpc_logs_sink, http_logs_sink

pytestmark = pytest.mark.integration  # real OTLP servers on loopback


@pytest.fixture(scope="module")
def outcomes() -> list[TraceOutcome]:
    built, problems = build_evaluators(MonitorConfig().evaluator_entries())
    assert not problems
    found = TraceEvaluator(built).evaluate_batch(corpus_traces())
    return [o for o in found if isinstance(o, TraceOutcome)]


@pytest.fixture
def sink() -> Iterator[tuple[str, Collected]]:
    with grpc_logs_sink() as served:
        yield served


def _config(endpoint: str, **evaluations: object) -> MonitorConfig:
    section = {"enabled": True, "endpoint": endpoint, **evaluations}
    return MonitorConfig.model_validate({"export": {"evaluations": section}})


def _exported(outcomes: list[TraceOutcome], endpoint: str, collected: Collected, **evaluations: object) -> list:
    """Every record the exporter of this config sent for `outcomes` (offered through a BatchRun's path)."""
    exporter = exporter_of(_config(endpoint, **evaluations))
    assert exporter is not None
    EXPORTS.take()
    try:
        offered = exporter.offer_outcomes(outcomes)
        assert exporter.flush(10.0)
    finally:
        exporter.close(5.0)
    assert EXPORTS.take() == ({"exported": offered} if offered else {})
    return collected.wait_for(offered)


def _rows(outcomes: list[TraceOutcome], wanted: object) -> list[tuple[TraceOutcome, ResultRow]]:
    return [(o, row) for o in outcomes for row in o.results if wanted(o, row)]  # type: ignore[operator]


def test_failing_results_each_become_one_record_on_the_evaluated_span(outcomes: list, sink: tuple) -> None:
    endpoint, collected = sink
    failing = _rows(outcomes, lambda o, row: row.passed is False and row.skip_reason is None)
    assert failing, "the corpus has failing results"
    received = _exported(outcomes, endpoint, collected, headers={"Authorization": "Bearer t0ken"})
    assert len(received) == len(failing)
    assert {h.get("authorization") for h in collected.headers} == {"Bearer t0ken"}
    expected = sorted((o.trace_id, row.span_id or o.root_span_id, row.evaluator, row.level) for o, row in failing)
    got = sorted(
        (
            r.trace_id.hex(),
            r.span_id.hex(),
            attributes(r)["gen_ai.evaluation.name"],
            attributes(r)["agent_monitor.level"],
        )
        for _, _, r in received
    )
    assert got == expected
    assert all(o.root_span_id for o, row in failing if row.span_id is None)
    for resource, scope, record in received:
        assert scope.name == SCOPE_NAME == "agent-monitor"
        assert record.event_name == EVENT_NAME == "gen_ai.evaluation.result"
        assert record.severity_text == "WARN"
        values = attributes(record)
        assert values["gen_ai.evaluation.score.label"] == "fail"
        assert "agent_monitor.service" in values
        assert "agent_monitor.skip_reason" not in values
        resource_values = {kv.key: kv.value.string_value for kv in resource.attributes}
        assert resource_values["service.name"] == "agent-monitor"
        assert resource_values["service.version"]


def test_all_sends_every_row_skips_without_a_score_label(outcomes: list, sink: tuple) -> None:
    endpoint, collected = sink
    every = _rows(outcomes, lambda o, row: True)
    received = _exported(outcomes, endpoint, collected, results="all")
    assert len(received) == len(every)
    skipped = [attributes(r) for _, _, r in received if "agent_monitor.skip_reason" in attributes(r)]
    assert skipped and len(skipped) == sum(1 for _, row in every if row.skip_reason is not None or row.passed is None)
    assert all("gen_ai.evaluation.score.label" not in a for a in skipped)
    labels = {attributes(r).get("gen_ai.evaluation.score.label") for _, _, r in received}
    assert {"pass", "fail"} <= labels


def test_sampled_sends_every_scored_row_of_a_deterministic_subset_of_traces(outcomes: list, sink: tuple) -> None:
    endpoint, collected = sink
    chosen = {o.trace_id for o in outcomes if judge_sampled_in(o.trace_id, 0.5)}
    assert 0 < len(chosen) < len(outcomes)
    scored = _rows(outcomes, lambda o, row: o.trace_id in chosen and row.skip_reason is None and row.passed is not None)
    received = _exported(outcomes, endpoint, collected, results="sampled", sample=0.5)
    assert len(received) == len(scored)
    assert {r.trace_id.hex() for _, _, r in received} == {o.trace_id for o, _ in scored}
    assert [judge_sampled_in(t, 0.5) for t in sorted(chosen)] == [True] * len(chosen)  # the same answer every time


def test_http_protobuf_sends_the_same_records(outcomes: list) -> None:
    with http_logs_sink() as (url, collected):
        base = url.removesuffix("/v1/logs")
        assert http_logs_url(base) == url
        received = _exported(outcomes, base, collected, protocol="http/protobuf", headers={"X-Tenant": "a"})
        assert {h.get("x-tenant") for h in collected.headers} == {"a"}
    failing = _rows(outcomes, lambda o, row: row.passed is False and row.skip_reason is None)
    assert len(received) == len(failing)


def test_a_batch_run_offers_its_traces_after_the_store_write_and_tallies_the_counts(sink: tuple) -> None:
    endpoint, collected = sink
    built, _ = build_evaluators(MonitorConfig().evaluator_entries())
    exporter = exporter_of(_config(endpoint, results="all"))
    assert exporter is not None
    written: list = []
    run = BatchRun(TraceEvaluator(built), written.extend, exporter=exporter)
    EXPORTS.take()
    try:
        run(corpus_traces())
        assert exporter.flush(10.0)
        rows = sum(len(o.results) for o in written)
        tally = MetricsTally.from_wire(run(corpus_traces()[:0]).tally)  # the next batch brings the counts
    finally:
        exporter.close(5.0)
    assert len(collected.wait_for(rows)) == rows
    assert tally.exports == {"exported": rows}


def _row(evaluator: str, passed: bool | None, span_id: str | None = None, skip: str | None = None) -> ResultRow:
    return ResultRow(span_id, None, None, evaluator, "trace", 0.0 if passed is False else 1.0, passed, skip,
                     "why", None, 0.0)  # fmt: skip


def test_late_results_and_sessions_are_records_too() -> None:
    builder = RecordBuilder("all")
    trace = "ab" * 16
    late = LateResults(trace, "svc", (_row("judge", False, "cd" * 8), _row("judge2", None, skip="judge_unavailable")))
    turn = Turn(trace_id=trace, start_ns=1, end_ns=2, user_message="hi", answer="yo", service="svc")
    session = SessionOutcome(Session("s-1", [turn]), (_row("session_eval", False),))
    records = builder.of_outcomes([late, session, object()])
    assert len(records) == 3
    judged, unavailable, conversation = (r.log_record for r in records)
    assert (format(judged.trace_id, "032x"), format(judged.span_id, "016x")) == (trace, "cd" * 8)
    assert unavailable.attributes["error.type"] == "judge_unavailable"
    assert "gen_ai.evaluation.score.label" not in unavailable.attributes
    assert conversation.attributes["session.id"] == "s-1"
    assert format(conversation.trace_id, "032x") == trace and not conversation.span_id
    assert RecordBuilder("failing").of_outcomes([late, session]) and len(RecordBuilder("failing").of_late(late)) == 1


def test_an_exporter_of_no_config_is_none() -> None:
    assert exporter_of(MonitorConfig()) is None
    assert isinstance(exporter_of(_config("http://127.0.0.1:9")), EvaluationExporter)
