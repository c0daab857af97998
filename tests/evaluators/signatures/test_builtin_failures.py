"""The rule builtins state what failed (`EvalResult.failure`), from their structured details: the failing step,
its error type and a message without the values that vary, so one failure mode is one signature."""

from __future__ import annotations

import json

import pytest

from evaluators import builtin, run_evaluators
from evaluators.signatures import Failure, failure_signature
from evaluators.traces.records import SpanEvent
from tests.support.builtins_spans import WEATHER_TOOL, agent, chat, tool
from tests.support.spanfactory import make_span, next_start, trace_of

MS = 1_000_000
MESSAGE = "FX rate service unavailable (HTTP 503)"


def failure_of(name: str, trace, **params) -> Failure:
    result = builtin(name, **params).run(trace)
    assert result.passed is False, result
    assert result.failure is not None, f"{name} states no failure"
    return result.failure


def tool_span(encoding: str, parent=None):
    """One failed convert_currency span, its error recorded the way one library family does."""
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "convert_currency"}
    events = None
    status_message = ""
    if encoding == "exception_event":  # OpenInference, OpenLLMetry
        status_message = f"RuntimeError: {MESSAGE}"
        event_attrs = {"exception.type": "RuntimeError", "exception.message": MESSAGE, "exception.stacktrace": "..."}
        events = [SpanEvent("exception", next_start(), event_attrs)]
    elif encoding == "error_type_attribute":  # OTel GenAI instrumentation: error.type + status message
        attrs["error.type"] = "RuntimeError"
        status_message = MESSAGE
    elif encoding == "generic_marker_and_result":  # ADK: TOOL_ERROR, the error only in the tool's result
        attrs["error.type"] = "TOOL_ERROR"
        attrs["gen_ai.tool.call.result"] = json.dumps({"error": f"RuntimeError: {MESSAGE}"})
        status_message = "TOOL_ERROR"
    elif encoding == "status_message_only":
        status_message = f"RuntimeError: {MESSAGE}"
    return make_span(
        "execute_tool convert_currency", attrs, parent=parent, status=2, status_message=status_message, events=events
    )


ENCODINGS = ["exception_event", "error_type_attribute", "generic_marker_and_result", "status_message_only"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_error_free_reads_a_tool_error_alike_whatever_the_encoding(encoding: str) -> None:
    failure = failure_of("error_free", trace_of(chat("ok"), tool_span(encoding)))
    assert failure == Failure("tool", "convert_currency", "http_503", MESSAGE)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_tool_success_rate_names_the_failing_tool_and_its_error(encoding: str) -> None:
    root = agent("planner")
    trace = trace_of(root, chat("ok", parent=root), tool_span(encoding, parent=root))
    assert failure_of("tool_success_rate", trace.agent_traces()[0]) == Failure(
        "tool", "convert_currency", "http_503", MESSAGE
    )


def test_without_an_http_status_the_error_type_is_the_exception_type_else_error() -> None:
    failure = failure_of("error_free", trace_of(tool("lookup", error="KeyError: 'user'")))
    assert (failure.step_kind, failure.step_name, failure.error_type, failure.message) == (
        "tool",
        "lookup",
        "KeyError",
        "'user'",
    )
    plain = failure_of("error_free", trace_of(tool("lookup", error="the lookup failed")))
    assert (plain.error_type, plain.message) == ("error", "the lookup failed")
    status = make_span("GET /rates", {"http.response.status_code": 429}, status=2, status_message="Too Many Requests")
    failure = failure_of("error_free", trace_of(status))
    assert (failure.step_kind, failure.step_name, failure.error_type) == ("trace", "GET /rates", "http_429")


def test_error_free_states_the_origin_of_an_error_not_the_parents_it_reached() -> None:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    root = make_span("invoke_agent planner", attrs, status=2, status_message="tool failed")
    middle = make_span("step", {}, parent=root)
    failed = tool_span("exception_event", parent=middle)
    failure = failure_of("error_free", trace_of(root, middle, failed))
    assert (failure.step_kind, failure.step_name, failure.error_type) == ("tool", "convert_currency", "http_503")


def test_one_failure_mode_with_other_ids_and_numbers_is_one_signature() -> None:
    one = failure_of("error_free", trace_of(tool("db", error="TimeoutError: query 8812 timed out after 30.2s")))
    two = failure_of("error_free", trace_of(tool("db", error="TimeoutError: query 17 timed out after 4s")))
    assert (
        failure_signature("error_free", "trace", None, one).id == failure_signature("error_free", "trace", None, two).id
    )


def test_budget_failures_state_their_kind_without_the_measured_value() -> None:
    start = next_start()
    slow = trace_of(chat("ok", start=start, end=start + 900 * MS))
    assert failure_of("latency", slow, max_latency_ms=100) == Failure(
        "trace", None, "too_slow", "the trace took longer than its latency budget"
    )
    start = next_start()
    slower = trace_of(chat("ok", start=start, end=start + 5000 * MS))
    assert failure_of("latency", slower, max_latency_ms=100) == failure_of("latency", slow, max_latency_ms=100)
    assert failure_of("token_budget", trace_of(chat("ok")), max_tokens=10).error_type == "over_token_budget"
    assert failure_of("cost_budget", trace_of(chat("ok")), max_cost_usd=0.0).error_type == "over_cost_budget"
    assert builtin("latency").run(slow).failure is None  # within the default budget: nothing failed


def test_refusal_states_the_pattern_matched_not_the_words() -> None:
    one = failure_of("refusal", trace_of(chat("Sorry, I couldn't do that.")))
    two = failure_of("refusal", trace_of(chat("sorry I could not finish the booking for order 42")))
    assert one.error_type == "refusal" and one.step_kind == "trace"
    assert one == two
    empty = failure_of("refusal", trace_of(chat("   ")))
    assert empty.error_type == "empty_answer"


def test_llm_and_agent_rules_state_their_step() -> None:
    cut = chat("partial answer", finish="length", model="gpt-4o-mini")
    assert failure_of("finish_reason", trace_of(cut).get_llm_calls()[0]) == Failure(
        "llm", "openai", "length", "the response was cut off by the token limit"
    )  # the provider, not the model: a model switch is not a new failure mode
    empty = chat("", finish="stop", output_tokens=0)
    assert failure_of("non_empty_response", trace_of(empty).get_llm_calls()[0]).error_type == "empty_response"
    root = agent("planner")
    looping = trace_of(root, *[tool("get_weather", {"city": "Paris"}, parent=root) for _ in range(3)])
    assert failure_of("loop_detection", looping.agent_traces()[0]) == Failure(
        "tool", "get_weather", "loop", "the same call repeated with the same arguments"
    )
    root = agent("planner")
    invented = trace_of(root, chat(None, [("get_wether", {"city": "Paris"})], tools=[WEATHER_TOOL], parent=root))
    unknown = failure_of("hallucinated_tool", invented.agent_traces()[0])
    assert (unknown.step_name, unknown.error_type) == ("get_wether", "unknown_tool")
    root = agent("planner")
    bad = trace_of(root, chat(None, [("get_weather", {"city": "Paris", "days": 0})], tools=[WEATHER_TOOL], parent=root))
    invalid = failure_of("tool_arguments_valid", bad.agent_traces()[0])
    assert (invalid.step_name, invalid.error_type) == ("get_weather", "schema_violation")


def test_records_carry_the_failure_and_passes_state_none() -> None:
    trace = trace_of(chat("ok"), tool_span("exception_event"))
    records = {r.evaluator: r for r in run_evaluators(trace, [builtin("error_free"), builtin("latency")])}
    assert records["error_free"].failure == Failure("tool", "convert_currency", "http_503", MESSAGE)
    assert records["latency"].passed is True and records["latency"].failure is None
