"""External evaluators (issue 43, "In"): how a `gen_ai.evaluation.result` event becomes a result row — the
verdict from the label or the configured threshold, the level from the evaluated span, renamed names, bounds,
error skips, the daemon's own exported records ignored — and the engine's trace evaluation and late path around
it. Property: no event, however malformed, raises."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.traces import build_trace
from evaluators.traces.records import LogRecord, SpanEvent, SpanRecord
from monitor.config.external import ExternalEvaluationsConfig
from monitor.consumer import Outcome
from monitor.engine.assembler import CompletedTrace, TraceAssembler
from monitor.engine.external_results import EVALUATION_EVENT, OWN_SCOPE, ExternalResults
from monitor.engine.ingest import Ingestor
from monitor.engine.late_evaluations import LateEvaluations
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics.tally import MetricsTally

TRACE = "ab" * 16
ROOT, LLM = "1" * 16, "2" * 16
RESOURCE = {"service.name": "shop"}


def spans() -> list[SpanRecord]:
    root = SpanRecord(
        TRACE, ROOT, "", "invoke_agent planner", attributes={"gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "planner"}, start_time_unix_nano=1, end_time_unix_nano=9, resource_attributes=RESOURCE,
    )  # fmt: skip
    llm = SpanRecord(
        TRACE, LLM, ROOT, "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m-1"},
        start_time_unix_nano=2, end_time_unix_nano=8, resource_attributes=RESOURCE,
    )  # fmt: skip
    return [root, llm]


def record(span_id: str = LLM, scope: str = "my-sdk", **attributes: Any) -> LogRecord:
    return LogRecord(TRACE, span_id, EVALUATION_EVENT, 5, None, attributes, RESOURCE, scope)


def external(**config: Any) -> ExternalResults:
    return ExternalResults(ExternalEvaluationsConfig(**config), own_names=["latency"])


def rows_of(results: ExternalResults, *records: LogRecord, span_events: tuple[SpanEvent, ...] = ()) -> list:
    built = spans()
    built[1].events.extend(span_events)
    return results.trace_rows(build_trace(built, TRACE).spans, records)


def test_the_label_decides_first_then_the_threshold_on_the_score_else_no_verdict() -> None:
    results = external(thresholds={"helpful": 0.7})
    rows = rows_of(
        results,
        record(**{"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.label": "Irrelevant",
                  "gen_ai.evaluation.score.value": 0.95}),
        record(**{"gen_ai.evaluation.name": "helpful", "gen_ai.evaluation.score.value": 0.7}),
        record(**{"gen_ai.evaluation.name": "helpful", "gen_ai.evaluation.score.value": 0.69}),
        record(**{"gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.value": 0.2}),
    )  # fmt: skip
    assert [(r.evaluator, r.passed, r.skip_reason) for r in rows] == [
        ("relevance", False, None),  # the label wins over a high score
        ("helpful", True, None),  # at the threshold passes
        ("helpful", False, None),
        ("tone", None, "no_verdict"),  # neither a known label nor a threshold
    ]
    assert all(r.external for r in rows)
    assert rows[0].signature is not None and rows[1].signature is None


def test_the_evaluated_span_gives_the_level_and_span_events_count_too() -> None:
    event = SpanEvent(
        EVALUATION_EVENT, 3, {"gen_ai.evaluation.name": "grounded", "gen_ai.evaluation.score.label": "pass"}
    )
    rows = rows_of(
        external(),
        record(span_id=ROOT, **{"gen_ai.evaluation.name": "task_done", "gen_ai.evaluation.score.label": "fail"}),
        record(span_id="9" * 16, **{"gen_ai.evaluation.name": "orphan", "gen_ai.evaluation.score.label": "pass"}),
        span_events=(event,),
    )
    by_name = {r.evaluator: r for r in rows}
    assert (by_name["grounded"].level, by_name["grounded"].model, by_name["grounded"].span_id) == ("llm", "m-1", LLM)
    assert (by_name["task_done"].level, by_name["task_done"].agent) == ("agent", "planner")
    assert (by_name["orphan"].level, by_name["orphan"].span_id) == ("trace", "9" * 16)  # a span the trace lacks


def test_scores_outside_the_unit_range_stay_in_the_details_and_errors_are_skips() -> None:
    results = external(thresholds={"stars": 4})
    stars, broken = rows_of(
        results,
        record(**{"gen_ai.evaluation.name": "stars", "gen_ai.evaluation.score.value": 4.5, "gen_ai.response.id": "r1"}),
        record(**{"gen_ai.evaluation.name": "judge", "error.type": "TimeoutError", "gen_ai.evaluation.score.value": 1}),
    )
    assert (stars.passed, stars.score) == (True, None)
    assert json.loads(stars.details) == {"source": "external", "score": 4.5, "response_id": "r1"}
    assert (broken.passed, broken.skip_reason, broken.score, broken.explanation) == (
        None,
        "error",
        None,
        "TimeoutError",
    )


def test_own_names_are_renamed_names_are_capped_and_the_daemons_own_records_ignored() -> None:
    results = external(max_evaluators=2, max_per_trace=3)
    rows = rows_of(
        results,
        record(**{"gen_ai.evaluation.name": "latency", "gen_ai.evaluation.score.label": "pass"}),
        record(scope=OWN_SCOPE, **{"gen_ai.evaluation.name": "mine", "gen_ai.evaluation.score.label": "fail"}),
        record(**{"gen_ai.evaluation.name": "a", "gen_ai.evaluation.score.label": "pass"}),
        record(**{"gen_ai.evaluation.name": "b", "gen_ai.evaluation.score.label": "pass"}),
        record(**{"gen_ai.evaluation.name": "c", "gen_ai.evaluation.score.label": "pass"}),
        record(**{"gen_ai.evaluation.score.label": "pass"}),  # names nothing
    )
    assert [r.evaluator for r in rows] == ["external.latency", "a", "__other__"]  # 3 per trace, 2 names


def test_a_trace_of_evaluation_records_alone_has_only_their_results_under_their_service() -> None:
    evaluator = TraceEvaluator([], external=external())
    logs = [record(**{"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.label": "fail"})]
    outcome = evaluator.evaluate(CompletedTrace(TRACE, [], "quiet", 0.0, 1.0, logs))
    assert [(r.evaluator, r.passed) for r in outcome.results] == [("relevance", False)]
    assert outcome.service == "shop"
    tally = MetricsTally.from_wire(MetricsTally().wire())
    tally.add_results(outcome.service, TRACE, outcome.results)
    assert tally.external == {"relevance"}


def test_late_records_are_counted_and_added_to_their_trace() -> None:
    applied: list[MetricsTally] = []
    written: list = []
    late = LateEvaluations(external(), applied.append, written.extend)
    late.take([record(**{"gen_ai.evaluation.name": "thumbs", "gen_ai.evaluation.score.label": "no"})])
    [tally] = applied
    assert tally.external == {"thumbs"}
    [(key, counts)] = tally.results.items()
    assert key == ("thumbs", "trace", "shop", None, "") and counts.failed == 1
    [stored] = written
    assert (stored.trace_id, stored.service, [r.evaluator for r in stored.results]) == (TRACE, "shop", ["thumbs"])
    late.take([LogRecord(TRACE, LLM, "gen_ai.choice", attributes={"gen_ai.evaluation.name": "x"})])
    assert len(applied) == 1  # not an evaluation event: nothing


values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40), st.binary(max_size=8),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)  # fmt: skip
keys = st.sampled_from(
    ["gen_ai.evaluation.name", "gen_ai.evaluation.score.value", "gen_ai.evaluation.score.label",
     "gen_ai.evaluation.explanation", "gen_ai.response.id", "error.type", "other"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(keys, values, max_size=7), max_size=5), st.one_of(st.none(), values))
def test_no_event_raises(events: list[dict[str, Any]], body: Any) -> None:
    results = external(thresholds={"x": 0.5})
    records = [LogRecord(TRACE, LLM, EVALUATION_EVENT, 0, body, attributes, RESOURCE) for attributes in events]
    for row in rows_of(results, *records):
        assert row.passed in (True, False, None) and (row.score is None or 0.0 <= row.score <= 1.0)
        assert isinstance(row.evaluator, str) and row.evaluator
    results.late_rows(records)


def _logs_request(*scopes: str) -> bytes:
    """An OTLP logs export: one evaluation record per scope, each on a trace of its own."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    request = ExportLogsServiceRequest()
    resource = request.resource_logs.add()
    for n, scope in enumerate(scopes):
        scoped = resource.scope_logs.add()
        scoped.scope.name = scope
        record = scoped.log_records.add(event_name=EVALUATION_EVENT, time_unix_nano=1)
        record.trace_id, record.span_id = bytes([n + 1]) * 16, bytes([n + 1]) * 8
        record.attributes.append(KeyValue(key="gen_ai.evaluation.name", value=AnyValue(string_value="x")))
    return request.SerializeToString()


def test_the_daemons_own_records_never_hold_a_trace_and_an_apps_do() -> None:
    assembler = TraceAssembler()
    ingestor = Ingestor(assembler)
    outcome = ingestor.ingest(_logs_request(OWN_SCOPE, "my-sdk"), receiver="http", encoding="protobuf", signal="logs")
    assert outcome.outcome is Outcome.ACCEPTED
    assert assembler.traces_pending == 1 and assembler.assembling("02" * 16)  # the app's, not the daemon's own
