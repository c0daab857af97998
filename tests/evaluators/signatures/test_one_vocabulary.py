"""Issue 37: one vocabulary. A failing turn's span is typed by the session rules (turn_errors, abandonment) exactly
as the trace rules (error_free, tool_success_rate) type it through `span_error`: the same step, error type (e.g.
`http_503` for a tool whose result says HTTP 503, not ADK's `TOOL_ERROR`) and message; and an LLM step is named by
its provider, so a model switch is not a new failure mode."""

from __future__ import annotations

import pytest

from evaluators import builtin, load_traces, run_evaluators
from evaluators.sessions import Session, SessionRef, Turn, TurnError
from evaluators.signatures import Failure, failure_signature
from evaluators.traces.records import SpanEvent
from monitor.engine.turn_wire import turn_of_wire, turn_wire
from tests.conftest import CORPUS
from tests.support.builtins_spans import chat
from tests.support.spanfactory import make_span, next_start, trace_of

# real traces of one injected tool failure, recorded by five libraries (an exception event; error.type and a
# status message; ADK's TOOL_ERROR with the error only in the tool's result)
LIBRARIES = ("adk_native", "oi_adk", "oi_openai", "otel_genai", "tl_openai")


def _session_failures(trace) -> dict[str, Failure | None]:
    session = Session.of("conversation-1", [Turn.from_trace(trace)], ended="idle")
    return {name: builtin(name).run(session).failure for name in ("turn_errors", "abandonment")}


def _trace_failures(trace) -> dict[str, Failure | None]:
    records = run_evaluators(trace, [builtin("error_free"), builtin("tool_success_rate")])
    return {r.evaluator: r.failure for r in records if r.passed is False}


@pytest.mark.parametrize("library", LIBRARIES)
def test_session_rules_type_a_failed_tool_as_the_trace_rules_do(library: str) -> None:
    (trace,) = load_traces(CORPUS / f"{library}__tool_error")
    failures = {**_trace_failures(trace), **_session_failures(trace)}
    assert set(failures) == {"error_free", "tool_success_rate", "turn_errors", "abandonment"}
    stated = {(f.step_kind, f.step_name, f.error_type, f.message) for f in failures.values() if f is not None}
    assert stated == {("tool", "convert_currency", "http_503", "FX rate service unavailable (HTTP 503)")}, failures


def test_the_turn_keeps_the_type_across_the_wire_and_reads_a_turn_stored_without_it() -> None:
    (trace,) = load_traces(CORPUS / "adk_native__tool_error")
    turn = Turn.from_trace(trace)
    assert turn.errors[0] == TurnError("tool", "convert_currency", "FX rate service unavailable (HTTP 503)", "http_503")
    ref = SessionRef("conversation-1", "session.id")
    assert turn_of_wire(turn_wire(ref, turn)).turn == turn
    wire = list(turn_wire(ref, turn))
    wire[8] = [["tool", "convert_currency", "RuntimeError: FX rate service unavailable (HTTP 503)"]]  # before v2
    old = turn_of_wire(tuple(wire)).turn
    failure = builtin("turn_errors").run(Session.of("conversation-1", [old], ended="idle")).failure
    assert failure == Failure("tool", "convert_currency", "http_503", "FX rate service unavailable (HTTP 503)")


def _failed_llm_call(model: str, request_id: str) -> Failure:
    error = f"Error code: 503 - The engine is currently overloaded, please try again later. (request {request_id})"
    events = [
        SpanEvent(
            "exception", next_start(), {"exception.type": "openai.InternalServerError", "exception.message": error}
        )
    ]
    failed = make_span(
        f"chat {model}",
        {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": model},
        status=2,
        status_message=error,
        events=events,
    )
    result = builtin("error_free").run(trace_of(failed))
    assert result.passed is False and result.failure is not None
    return result.failure


def test_a_model_switch_is_not_a_new_failure_mode() -> None:
    one = _failed_llm_call("gpt-4o", "req_8f3a9b2c4d1e5f60")
    other = _failed_llm_call("gpt-4o-mini-2024-07-18", "req_0b1c2d3e4f5a6b7c")
    assert one.step_kind == "llm" and one.step_name == "openai" and one.error_type == "http_503"
    assert (
        failure_signature("error_free", "trace", None, one).id
        == failure_signature("error_free", "trace", None, other).id
    )
    finish = builtin("finish_reason").run(trace_of(chat("cut", finish="length", model="gpt-4o")).get_llm_calls()[0])
    assert finish.failure is not None and finish.failure.step_name == "openai"


def test_a_run_id_in_a_failing_spans_name_is_not_a_new_failure_mode() -> None:
    """CrewAI names its root span `Crew_<uuid>.kickoff`: two runs that fail alike have one signature."""
    names = ["Crew_170a06be-662e-433b-bd6b-daaaa2938174.kickoff", "Crew_4f1c2b9e-8a4d-4c0b-9d0e-2b1a3c4d5e6f.kickoff"]
    failures = [
        builtin("error_free").run(trace_of(make_span(name, status=2, status_message="boom"))).failure for name in names
    ]
    assert {(f.step_kind, f.step_name) for f in failures if f is not None} == {("trace", "Crew_<uuid>.kickoff")}
    signatures = {failure_signature("error_free", "trace", None, f).id for f in failures}
    assert len(signatures) == 1
