"""Trace-level rule builtins: latency, token_budget, cost_budget, error_free, refusal."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators import EvaluatorConfigError, Task, builtin, list_builtins
from evaluators.builtins._common import PatternList
from evaluators.builtins.rules_trace import DEFAULT_REFUSAL_PATTERNS
from evaluators.pricing import price_call
from evaluators.traces.records import SpanRecord
from tests.support.builtins_spans import agent, chat, tool
from tests.support.spanfactory import make_span, next_start, trace_of

MS = 1_000_000


def run(name: str, trace, **params):
    return builtin(name, **params).run(trace)


def timed_trace(duration_ms: float):
    start = next_start()
    return trace_of(chat("ok", start=start, end=start + int(duration_ms * MS)))


# --- catalog ----------------------------------------------------------------------------------


def test_rule_builtins_are_registered_with_levels_kinds_and_described_params() -> None:
    infos = {i.name: i for i in list_builtins()}
    levels = {
        "latency": "trace",
        "token_budget": "trace",
        "cost_budget": "trace",
        "error_free": "trace",
        "refusal": "trace",
        "llm_call_budget": "agent",
        "tool_success_rate": "agent",
        "loop_detection": "agent",
        "agent_efficiency": "agent",
        "hallucinated_tool": "agent",
        "tool_arguments_valid": "agent",
        "finish_reason": "llm",
        "response_length": "llm",
        "non_empty_response": "llm",
        "prohibited_content": "llm",
        "pii_leak": "llm",
    }
    for name, level in levels.items():
        info = infos[name]
        assert info.level == level, name
        assert info.kind == "rule" and not info.needs_ground_truth, name
        assert info.description, name
        assert all(p.description for p in info.params), name
    assert {p.name: p.default for p in infos["latency"].params}["max_latency_ms"] == 30000
    assert {p.name: p.default for p in infos["loop_detection"].params}["max_repeats"] == 3


# --- latency ----------------------------------------------------------------------------------


def test_latency_passes_within_budget_and_names_the_ms() -> None:
    result = run("latency", timed_trace(1200))
    assert result.score == 1.0 and result.passed is True
    assert "1200 ms" in result.explanation and "30000 ms" in result.explanation


def test_latency_decays_linearly_to_zero_at_twice_the_budget() -> None:
    over = run("latency", timed_trace(1500), max_latency_ms=1000)
    assert over.score == pytest.approx(0.5) and over.passed is False
    assert "1500 ms" in over.explanation and "over" in over.explanation
    assert run("latency", timed_trace(2500), max_latency_ms=1000).score == 0.0
    assert run("latency", timed_trace(1500), max_latency_ms=1000, decay=3.0).score == pytest.approx(0.75)


def test_latency_skips_without_timestamps() -> None:
    result = run("latency", trace_of(make_span("x", {}, start=0, end=0)))
    assert result.is_skipped and result.skip_reason == "no_data"


# --- token_budget -----------------------------------------------------------------------------


def test_token_budget_passes_and_reports_the_count() -> None:
    result = run("token_budget", trace_of(chat("a", input_tokens=300, output_tokens=50), chat("b")))
    assert result.score == 1.0 and result.passed is True
    assert "470 tokens" in result.explanation and "50000" in result.explanation


def test_token_budget_fails_over_budget() -> None:
    trace = trace_of(chat("a", input_tokens=1200, output_tokens=300))
    result = run("token_budget", trace, max_tokens=1000)
    assert result.score == pytest.approx(0.5) and result.passed is False
    assert "1500 tokens" in result.explanation and "over" in result.explanation


def test_token_budget_skips_without_usage() -> None:
    result = run("token_budget", trace_of(chat("a", input_tokens=None, output_tokens=None)))
    assert result.skip_reason == "no_data"


# --- cost_budget ------------------------------------------------------------------------------


def test_cost_budget_estimates_from_the_price_table() -> None:
    call = chat("a", model="gpt-4o-mini-2024-07-18", input_tokens=1000, output_tokens=1000)
    trace = trace_of(call)
    result = run("cost_budget", trace)
    expected = price_call(call_of(trace).model, call_of(trace).usage, when=None)
    assert expected is not None and expected.source == "price_table"
    assert result.details["cost_usd"] == pytest.approx(expected.usd)
    assert result.score == 1.0 and result.passed is True and "1 from the price table" in result.explanation


def call_of(trace):
    (call,) = trace.get_llm_calls()
    return call


def test_cost_budget_fails_over_budget_with_custom_prices() -> None:
    trace = trace_of(chat("a", model="my-model", input_tokens=2000, output_tokens=1000))
    result = run("cost_budget", trace, max_cost_usd=1.0, prices={"my-model": [0.5, 0.5]})
    assert result.details["cost_usd"] == pytest.approx(1.5)
    assert result.passed is False and result.score == pytest.approx(0.5)
    assert "$1.500000" in result.explanation and "over" in result.explanation


def test_cost_budget_prefers_the_recorded_span_cost() -> None:
    span = make_span(
        "llm",
        {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.cost.total": 2.5},
        kind=3,
    )
    result = run("cost_budget", trace_of(span))
    assert result.details["cost_usd"] == pytest.approx(2.5) and result.passed is False
    assert "reported by the span" in result.explanation


def test_cost_budget_skips_when_nothing_is_priced() -> None:
    result = run("cost_budget", trace_of(chat("a", model="unknown-llm")))
    assert result.skip_reason == "no_data" and "unknown-llm" in result.explanation


def test_cost_budget_rejects_malformed_prices() -> None:
    with pytest.raises(EvaluatorConfigError, match="prices"):
        builtin("cost_budget", prices={"gpt-4o": [0.1]})


def test_cost_budget_reports_an_unknown_model_as_unpriced_beside_priced_calls() -> None:
    trace = trace_of(chat("a", model="gpt-4o"), chat("b", model="unknown-llm"))
    result = run("cost_budget", trace)
    assert result.details["calls_price_table"] == 1 and result.details["calls_unpriced"] == 1
    assert result.details["unpriced"] == ["no price for unknown-llm"]
    assert "1 unpriced call(s) left out (no price for unknown-llm)" in result.explanation


# --- error_free -------------------------------------------------------------------------------


def test_error_free_passes_without_error_spans() -> None:
    result = run("error_free", trace_of(chat("a"), tool("get_weather", {"city": "Paris"})))
    assert result.score == 1.0 and result.passed is True and "no error spans" in result.explanation


def test_error_free_names_failing_spans_and_bounds_the_list() -> None:
    root = agent("bot")
    spans = [root] + [tool(f"t{i}", {}, error=f"boom {i}", parent=root) for i in range(5)]
    result = run("error_free", trace_of(*spans))
    assert result.score == 0.0 and result.passed is False
    assert "5 error span(s)" in result.explanation
    assert "execute_tool t0 (boom 0)" in result.explanation
    assert "(+2 more)" in result.explanation and "boom 4" not in result.explanation


# --- refusal ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "I'm sorry, but I can't help with that.",
        "I cannot share that information.",
        "As an AI language model, I have no opinions.",
        "Sorry, I couldn't find the flight.",
        "I’m unable to access your account.",
    ],
)
def test_refusal_fails_on_a_refusing_answer(answer: str) -> None:
    result = run("refusal", trace_of(chat(answer)))
    assert result.score == 0.0 and result.passed is False
    assert "refuses or gives up" in result.explanation


def test_refusal_passes_on_a_real_answer() -> None:
    result = run("refusal", trace_of(chat("It's 18°C in Paris. I can help with more if you like.")))
    assert result.score == 1.0 and result.passed is True


def test_refusal_uses_configured_patterns_and_rejects_bad_ones() -> None:
    trace = trace_of(chat("Computer says no."))
    assert run("refusal", trace).passed is True
    custom = run("refusal", trace, patterns=[r"computer says no"])
    assert custom.passed is False and "Computer says no" in custom.explanation
    with pytest.raises(EvaluatorConfigError, match="regex"):
        builtin("refusal", patterns=["("])


WORDS = ["I", "i", "AS", "cannot", "can't", "sorry", "but", "as", "an", "AI", "give", "up", "help", "unable", "Paris"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join))
def test_the_patterns_combined_find_what_each_searched_in_order_finds(text: str) -> None:
    """PatternList answers "none" with one combined search: the first pattern in order found, or none, is the
    same as searching them one by one (the default patterns, and ones with groups and alternatives)."""
    for patterns in (DEFAULT_REFUSAL_PATTERNS, [r"(can)'t", r"a|an", r"\bup$", r"sorry,? (but)?"]):
        listed = PatternList("refusal", "patterns", patterns, re.IGNORECASE)
        expected = next((p.pattern for p in listed.compiled if p.search(text)), None)
        found = listed.first_match(text)
        assert (found[0].pattern if found else None) == expected


def test_refusal_skips_without_an_answer() -> None:
    assert run("refusal", trace_of(chat(None, [("get_weather", {"city": "Paris"})]))).skip_reason == "no_data"


# --- an empty final answer is an answer of length 0 ----------------------------------------------


def oi_agent(**attrs) -> SpanRecord:
    return make_span("agent", {"openinference.span.kind": "AGENT", "input.value": "What's the weather?", **attrs})


def oi_llm(parent: SpanRecord, **attrs) -> SpanRecord:
    base = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}
    return make_span("ChatCompletion", {**base, **attrs}, kind=3, parent=parent)


def test_an_empty_output_value_is_an_empty_answer_that_fails_refusal() -> None:
    root = oi_agent(**{"output.value": ""})
    trace = trace_of(root, oi_llm(root, **{"llm.token_count.prompt": 10, "llm.token_count.completion": 0}))
    assert trace.output == ""
    result = run("refusal", trace)
    assert (result.score, result.passed, result.is_skipped) == (0.0, False, False)
    assert "empty" in result.explanation


def test_a_final_assistant_message_without_text_is_an_empty_answer() -> None:
    first = chat("Let me check.", [("get_weather", {"city": "Paris"})])
    last = chat(None, finish="stop", output_tokens=0)  # gen_ai.output.messages: an assistant message, no parts
    trace = trace_of(first, last)
    assert trace.output == ""
    assert run("refusal", trace).passed is False
    oi_root = oi_agent()  # no output.value: the answer comes from the last LLM call
    oi_trace = trace_of(oi_root, oi_llm(oi_root, **{"llm.output_messages.0.message.role": "assistant"}))
    assert oi_trace.output == "" and run("refusal", oi_trace).score == 0.0


def test_ground_truth_answer_evaluators_score_an_empty_answer() -> None:
    trace = trace_of(oi_agent(**{"output.value": ""}))
    task = Task(task_id="t", expected_output="Sunny, 21°C")
    for name in ("exact_match", "contains_match", "response_match"):
        result = builtin(name).run(trace, task=task)
        assert (result.score, result.passed) == (0.0, False), name


def test_a_trace_without_any_output_still_skips_with_no_data() -> None:
    task = Task(task_id="t", expected_output="Sunny, 21°C")
    for trace in (
        trace_of(oi_agent()),  # no output.value, no LLM call
        trace_of(make_span("run", {})),
        trace_of(chat(None, [("get_weather", {"city": "Paris"})])),  # ended on a tool request
        trace_of(chat(None, output_tokens=40)),  # tokens but no text: content not captured
    ):
        assert trace.output is None
        assert run("refusal", trace).skip_reason == "no_data"
        assert builtin("exact_match").run(trace, task=task).skip_reason == "no_data"
    assert run("refusal", trace_of(oi_agent(**{"output.value": "It's sunny."}))).passed is True
