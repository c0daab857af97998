"""Agent-level rule builtins: llm_call_budget, tool_success_rate, loop_detection, agent_efficiency,
hallucinated_tool, tool_arguments_valid, and the small JSON-schema validator behind the last one."""

from __future__ import annotations

import pytest

from evaluators import builtin
from evaluators.builtins._schema import validate
from tests.support.builtins_spans import WEATHER_TOOL, agent, chat, tool
from tests.support.spanfactory import trace_of

OUTFIT_TOOL = {
    "type": "function",
    "name": "suggest_outfit",
    "parameters": {
        "type": "object",
        "properties": {"temperature_c": {"type": "integer"}, "conditions": {"type": "string"}},
        "required": ["temperature_c", "conditions"],
    },
}


def one_agent(*make_steps, name: str = "bot"):
    """A trace with one agent span whose steps are built by the callables (each given the parent)."""
    root = agent(name)
    spans = [root, *(make(root) for make in make_steps)]
    agents = trace_of(*spans).agent_traces()
    assert len(agents) == 1
    return agents[0]


def run(name: str, subject, **params):
    return builtin(name, **params).run(subject)


def calls_and_tools(sequence):
    """Steps for a list of (tool, args): one chat requesting it, then its execution."""
    steps = []
    for name, args in sequence:
        steps.append(lambda p, n=name, a=args: chat(None, [(n, a)], tools=[WEATHER_TOOL], parent=p))
        steps.append(lambda p, n=name, a=args: tool(n, a, parent=p))
    return steps


# --- llm_call_budget --------------------------------------------------------------------------


def test_llm_call_budget_passes_within_budget() -> None:
    result = run("llm_call_budget", one_agent(*[lambda p: chat("x", parent=p)] * 3))
    assert result.score == 1.0 and result.passed is True
    assert "3 LLM call(s)" in result.explanation and "'bot'" in result.explanation


def test_llm_call_budget_decays_over_budget() -> None:
    result = run("llm_call_budget", one_agent(*[lambda p: chat("x", parent=p)] * 6), max_llm_calls=4)
    assert result.score == pytest.approx(0.5) and result.passed is False
    assert "6 LLM call(s)" in result.explanation and "over" in result.explanation


# --- tool_success_rate ------------------------------------------------------------------------


def test_tool_success_rate_all_ok() -> None:
    subject = one_agent(lambda p: tool("get_weather", {"city": "Paris"}, parent=p))
    result = run("tool_success_rate", subject)
    assert result.score == 1.0 and result.passed is True and "1/1" in result.explanation


def test_tool_success_rate_names_failed_tools_and_uses_threshold() -> None:
    subject = one_agent(
        lambda p: tool("get_weather", {"city": "Paris"}, parent=p),
        lambda p: tool("get_weather", {"city": "Rome"}, parent=p),
        lambda p: tool("get_weather", {"city": "Oslo"}, parent=p),
        lambda p: tool("convert", {"x": 1}, error="HTTP 503", parent=p),
    )
    result = run("tool_success_rate", subject)
    assert result.score == pytest.approx(0.75) and result.passed is False  # threshold 0.8
    assert "3/4" in result.explanation and "convert (HTTP 503)" in result.explanation


def test_tool_success_rate_skips_without_tools() -> None:
    assert run("tool_success_rate", one_agent(lambda p: chat("x", parent=p))).skip_reason == "no_data"


# --- loop_detection ---------------------------------------------------------------------------


def test_loop_detection_passes_on_varied_calls() -> None:
    subject = one_agent(*calls_and_tools([("get_weather", {"city": c}) for c in ("Paris", "Paris ", "Rome")]))
    result = run("loop_detection", subject)
    assert result.score == 1.0 and result.passed is True and "no loop in 3" in result.explanation


def test_loop_detection_finds_the_same_call_repeated() -> None:
    subject = one_agent(*calls_and_tools([("get_weather", {"city": "Paris"})] * 3))
    result = run("loop_detection", subject)
    assert result.score == 0.0 and result.passed is False
    assert "get_weather called 3 times in a row" in result.explanation
    assert run("loop_detection", subject, max_repeats=4).passed is True


def test_loop_detection_finds_an_abab_cycle() -> None:
    a, b = ("get_weather", {"city": "Paris"}), ("suggest_outfit", {"temperature_c": 18, "conditions": "rain"})
    subject = one_agent(*calls_and_tools([a, b, a, b]))
    result = run("loop_detection", subject)
    assert result.passed is False and result.score == 0.0
    assert "get_weather → suggest_outfit" in result.explanation and "2 times" in result.explanation
    assert run("loop_detection", subject, max_cycles=3).passed is True


def test_loop_detection_uses_requested_calls_when_no_tool_spans() -> None:
    subject = one_agent(*[lambda p: chat(None, [("search", {"q": "x"})], parent=p)] * 3)
    result = run("loop_detection", subject)
    assert result.passed is False and "search called 3 times" in result.explanation
    assert result.details["source"] == "requested"


def test_loop_detection_does_not_treat_unrecorded_arguments_as_equal() -> None:
    subject = one_agent(*[lambda p: tool("get_weather", None, parent=p)] * 4)
    assert run("loop_detection", subject).passed is True


# --- agent_efficiency -------------------------------------------------------------------------


def test_agent_efficiency_passes_at_two_llm_calls_per_tool() -> None:
    subject = one_agent(*calls_and_tools([("get_weather", {"city": "Paris"})]), lambda p: chat("done", parent=p))
    result = run("agent_efficiency", subject)
    assert result.score == 1.0 and result.passed is True and "2.00 per tool" in result.explanation


def test_agent_efficiency_decays_for_a_chatty_agent() -> None:
    subject = one_agent(
        lambda p: tool("get_weather", {"city": "Paris"}, parent=p), *[lambda p: chat("x", parent=p)] * 3
    )
    result = run("agent_efficiency", subject)
    assert result.score == pytest.approx(0.5) and result.passed is False
    assert "3 LLM call(s) for 1 tool call(s)" in result.explanation


def test_agent_efficiency_skips_without_llm_calls() -> None:
    assert run("agent_efficiency", one_agent(lambda p: tool("t", {}, parent=p))).skip_reason == "no_data"


# --- hallucinated_tool ------------------------------------------------------------------------


def test_hallucinated_tool_passes_for_offered_tools_and_ignores_handoffs() -> None:
    subject = one_agent(
        lambda p: chat(
            None,
            [("get_weather", {"city": "Paris"}), ("transfer_to_agent", {"agent_name": "x"})],
            tools=[WEATHER_TOOL],
            parent=p,
        ),
    )
    result = run("hallucinated_tool", subject)
    assert result.score == 1.0 and result.passed is True and "all 1 requested" in result.explanation


def test_hallucinated_tool_fails_on_an_unknown_tool_with_agent_fallback() -> None:
    subject = one_agent(
        lambda p: chat(None, [("get_weather", {"city": "Paris"})], tools=[WEATHER_TOOL], parent=p),
        # no definitions on this call: the agent's tools (get_weather) apply
        lambda p: chat(None, [("book_flight", {"to": "NYC"})], parent=p),
    )
    result = run("hallucinated_tool", subject)
    assert result.score == pytest.approx(0.5) and result.passed is False
    assert "book_flight" in result.explanation and "1/2" in result.explanation


def test_hallucinated_tool_skips_without_definitions() -> None:
    subject = one_agent(lambda p: chat(None, [("anything", {})], parent=p))
    result = run("hallucinated_tool", subject)
    assert result.skip_reason == "no_data" and "no tool definitions" in result.explanation


# --- tool_arguments_valid ---------------------------------------------------------------------


def test_tool_arguments_valid_passes_for_schema_conforming_calls() -> None:
    subject = one_agent(
        lambda p: chat(
            None,
            [
                ("get_weather", {"city": "Paris", "days": 2}),
                ("suggest_outfit", {"temperature_c": 18.0, "conditions": "rain"}),
            ],
            tools=[WEATHER_TOOL, OUTFIT_TOOL],
            parent=p,
        ),
    )
    result = run("tool_arguments_valid", subject)
    assert result.score == 1.0 and result.passed is True and "2/2" in result.explanation


def test_tool_arguments_valid_lists_problems() -> None:
    subject = one_agent(
        lambda p: chat(
            None,
            [
                ("get_weather", {"city": "Paris"}),
                ("get_weather", {"days": 0, "units": "C"}),
                ("get_weather", "{not json"),
                ("suggest_outfit", {"temperature_c": "warm", "conditions": "sun"}),
            ],
            tools=[WEATHER_TOOL, OUTFIT_TOOL],
            parent=p,
        ),
    )
    result = run("tool_arguments_valid", subject, max_listed=10)
    assert result.score == pytest.approx(0.25) and result.passed is False
    text = result.explanation
    assert "1/4" in text
    assert "missing required property 'city'" in text
    assert "unexpected property 'units'" in text
    assert "0 is below minimum 1" in text
    assert "not valid JSON" in text
    assert "$.temperature_c: expected integer, got string" in text


def test_tool_arguments_valid_skips_without_schemas() -> None:
    bare = {"type": "function", "name": "get_weather"}
    subject = one_agent(lambda p: chat(None, [("get_weather", "raw text")], tools=[bare], parent=p))
    assert run("tool_arguments_valid", subject).skip_reason == "no_data"


@pytest.mark.parametrize(
    ("value", "schema", "problem"),
    [
        ("x", {"type": ["integer", "null"]}, "expected integer or null"),
        (None, {"type": "string", "nullable": True}, None),
        (True, {"type": "integer"}, "expected integer, got boolean"),
        (3, {"type": "NUMBER", "maximum": 2}, "above maximum 2"),
        ("abcd", {"type": "string", "maxLength": 3}, "above maxLength 3"),
        ("", {"type": "string", "minLength": 1}, "below minLength 1"),
        ("b", {"enum": ["a", "c"]}, "is not one of"),
        ([1, "x"], {"type": "array", "items": {"type": "integer"}}, "$[1]: expected integer"),
        ({"a": {"b": 1}}, {"properties": {"a": {"properties": {"b": {"type": "string"}}}}}, "$.a.b: expected string"),
        ({"a": 1}, {"type": "object", "additionalProperties": {"type": "string"}}, "$.a: expected string"),
        ("x", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "matches none of the anyOf options"),
        (5, {"anyOf": [{"type": "string"}, {"type": "integer"}]}, None),
        ({"x": 1}, {"$ref": "#/defs/thing", "format": "weird"}, None),
        ("x", "not a schema", None),
    ],
)
def test_schema_validator(value, schema, problem) -> None:
    found = validate(value, schema)
    if problem is None:
        assert found == []
    else:
        assert any(problem in p for p in found), found
