"""The Anthropic Messages API through OpenInference and OpenLLMetry, and OpenLIT on the OpenAI client: each call's
facts as the scenario READMEs state them (tokens with cache reads and writes, the tools asked for with their
arguments, the tool results the next request sends back), and each call's price with its cache writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import genai_prices
import pytest

from evaluators.pricing import call_cost
from evaluators.traces import load_traces
from evaluators.traces.messages import AssistantMessage, ToolMessage
from evaluators.traces.model import Trace
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of

ANTHROPIC = ("oi_anthropic__tool_use", "tl_anthropic__tool_use", "openlit__anthropic_tool_use")
WEATHER = {"city": "Paris", "temperature_c": 18, "conditions": "light rain"}
OUTFIT = "Light waterproof jacket over a sweater; bring an umbrella."

# (input, output, cache_read, cache_write) per call in start order, from the READMEs; None: the span leaves it out.
# Input = Anthropic's input_tokens + cache_creation_input_tokens + cache_read_input_tokens (both libraries add them).
CALLS = {
    "71ce8daf49a86fe6e1a3f744b1df0826": [(412, 58, None, None), (503, 71, None, None), (601, 32, None, None)],
    "6d88de4dc83af5022dbd1fb7d96b19af": [(1885, 38, None, 1864), (1881, 24, 1864, None)],
    "f4c3495c6ea11d9a25bd7222f4671153": [(412, 58, 0, 0), (503, 71, 0, 0), (601, 32, 0, 0)],
    # streamed: OpenLLMetry adds message_start's output placeholder (1) to message_delta's cumulative 24
    "644b952aea153f013f99e36b8eb18921": [(1885, 38, 0, 1864), (1881, 25, 1864, 0)],
    "a610d6f6cea5fe04f0569f65da4afcb5": [(71, 16, 0, 0), (113, 14, 0, 0)],
    "bf7ef98e2d3ff6fa50cc4acb9764c1cc": [(412, 58, 0, 0), (503, 71, 0, 0), (601, 32, 0, 0)],
    # OpenLIT writes Anthropic's own input_tokens (21, 17: the cache left out); read as the others report it
    "cc257b21a4d4445959faee780010b1b6": [(1885, 38, 0, 1864), (1881, 24, 1864, 0)],
}
# Trace totals (input, output, cache_read, cache_write).
TOTALS = {
    "71ce8daf49a86fe6e1a3f744b1df0826": (1516, 161, None, None),
    "6d88de4dc83af5022dbd1fb7d96b19af": (3766, 62, 1864, 1864),
    "f4c3495c6ea11d9a25bd7222f4671153": (1516, 161, 0, 0),
    "644b952aea153f013f99e36b8eb18921": (3766, 63, 1864, 1864),
    "a610d6f6cea5fe04f0569f65da4afcb5": (184, 30, 0, 0),
    "bf7ef98e2d3ff6fa50cc4acb9764c1cc": (1516, 161, 0, 0),
    "cc257b21a4d4445959faee780010b1b6": (3766, 62, 1864, 1864),
}
SCENARIO_OF = {
    "71ce8daf49a86fe6e1a3f744b1df0826": "oi_anthropic__tool_use",
    "6d88de4dc83af5022dbd1fb7d96b19af": "oi_anthropic__tool_use",
    "f4c3495c6ea11d9a25bd7222f4671153": "tl_anthropic__tool_use",
    "644b952aea153f013f99e36b8eb18921": "tl_anthropic__tool_use",
    "a610d6f6cea5fe04f0569f65da4afcb5": "openlit__openai_tool_agent",
    "bf7ef98e2d3ff6fa50cc4acb9764c1cc": "openlit__anthropic_tool_use",
    "cc257b21a4d4445959faee780010b1b6": "openlit__anthropic_tool_use",
}
# The tool-use traces: per call, the tools it asked for (name, arguments, id).
ASKED = {
    "71ce8daf49a86fe6e1a3f744b1df0826": [
        [("get_weather", {"city": "Paris"}, "toolu_01A1fakeWeather")],
        [("suggest_outfit", {"temperature_c": 18, "conditions": "light rain"}, "toolu_01B2fakeOutfit")],
        [],
    ],
    "a610d6f6cea5fe04f0569f65da4afcb5": [[("get_weather", {"city": "Paris"}, "call_0001olitFAKE")], []],
}
for _same in ("f4c3495c6ea11d9a25bd7222f4671153", "bf7ef98e2d3ff6fa50cc4acb9764c1cc"):  # the same script
    ASKED[_same] = ASKED["71ce8daf49a86fe6e1a3f744b1df0826"]
# ... and the tool results each call's request carried back (tool call id, content).
RESULTS = {
    "71ce8daf49a86fe6e1a3f744b1df0826": [
        [],
        [("toolu_01A1fakeWeather", WEATHER)],
        [("toolu_01A1fakeWeather", WEATHER), ("toolu_01B2fakeOutfit", OUTFIT)],
    ],
    "a610d6f6cea5fe04f0569f65da4afcb5": [[], [("call_0001olitFAKE", WEATHER)]],
}
for _same in ("f4c3495c6ea11d9a25bd7222f4671153", "bf7ef98e2d3ff6fa50cc4acb9764c1cc"):
    RESULTS[_same] = RESULTS["71ce8daf49a86fe6e1a3f744b1df0826"]


def _trace(trace_id: str) -> Trace:
    (trace,) = [t for t in load_traces(CORPUS / SCENARIO_OF[trace_id]) if t.trace_id == trace_id]
    return trace


@pytest.mark.parametrize("trace_id", sorted(CALLS), ids=lambda t: f"{SCENARIO_OF[t]}-{t[:8]}")
def test_each_calls_tokens_with_cache_reads_and_writes(trace_id: str) -> None:
    trace = _trace(trace_id)
    got = []
    for call in trace.get_llm_calls():
        assert call.usage is not None
        usage = call.usage
        got.append((usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens))
    assert got == CALLS[trace_id]
    total = trace.metrics.token_usage
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens, total.cache_write_tokens) == TOTALS[
        trace_id
    ]


@pytest.mark.parametrize("trace_id", sorted(ASKED), ids=lambda t: f"{SCENARIO_OF[t]}-{t[:8]}")
def test_tools_asked_for_and_their_results_in_the_next_request(trace_id: str) -> None:
    calls = _trace(trace_id).get_llm_calls()
    assert [[(c.name, c.arguments, c.id) for c in call.tool_calls] for call in calls] == ASKED[trace_id]
    sent_back = [
        [(m.tool_call_id, _json(m.content)) for m in call.messages if isinstance(m, ToolMessage)] for call in calls
    ]
    assert sent_back == RESULTS[trace_id]
    assert all(c.arguments_error is None for call in calls for c in call.tool_calls)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.mark.parametrize("scenario", ANTHROPIC)
def test_anthropic_history_keeps_the_assistant_tool_use_turns(scenario: str) -> None:
    """The last request's history: system, question, then each tool_use turn (text kept) and its tool_result."""
    (trace, _) = load_traces(CORPUS / scenario)
    last = trace.get_llm_calls()[-1]
    assert [m.role for m in last.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    first_turn = last.messages[2]
    assert isinstance(first_turn, AssistantMessage)
    assert first_turn.content == "I'll check the current weather in Paris first."
    assert [c.name for c in first_turn.tool_calls] == ["get_weather"]
    assert [t.name for t in last.available_tools] == ["get_weather", "suggest_outfit"]
    assert last.available_tools[0].parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert all(c.model == "claude-sonnet-4-5" and c.provider == "anthropic" for c in trace.get_llm_calls())


def test_oi_tool_spans_carry_arguments_and_results() -> None:
    (trace, _) = load_traces(CORPUS / "oi_anthropic__tool_use")
    tools = trace.get_tool_calls()
    assert [(t.name, t.arguments, t.result) for t in tools] == [
        ("get_weather", {"city": "Paris"}, WEATHER),
        ("suggest_outfit", {"temperature_c": 18, "conditions": "light rain"}, OUTFIT),
    ]


def _library_figure(model: str, start_ns: int, inp: int, out: int, read: int, write: int) -> float:
    usage = genai_prices.Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=read, cache_write_tokens=write)
    when = datetime.fromtimestamp(start_ns // 1_000_000_000, UTC)
    return float(
        genai_prices.calc_price(usage, model, provider_id="anthropic", genai_request_timestamp=when).total_price
    )


@pytest.mark.parametrize("scenario", ANTHROPIC)
def test_cache_writes_and_reads_are_priced_at_their_rates(scenario: str) -> None:
    """Each call costs genai-prices' figure for its usage (cache parts included); the write is dearer than plain
    input, the read cheaper."""
    cached = load_traces(CORPUS / scenario)[1].get_llm_calls()
    for call in (call for trace in load_traces(CORPUS / scenario) for call in trace.get_llm_calls()):
        usage = call.usage
        assert usage is not None
        cost = call_cost(call)
        assert cost is not None and cost.source == "price_table"
        read, write = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
        figure = _library_figure(
            call.model or "", call.start_time, usage.input_tokens, usage.output_tokens, read, write
        )
        assert cost.usd == pytest.approx(figure, rel=1e-12, abs=0)
    write_call, read_call = cached
    for call, dearer in ((write_call, True), (read_call, False)):
        assert call.usage is not None
        cost = call_cost(call)
        plain = _library_figure(
            call.model or "", call.start_time, call.usage.input_tokens, call.usage.output_tokens, 0, 0
        )
        assert cost is not None and (cost.usd > plain) is dearer and cost.usd != plain


def test_openlit_reads_messages_once_and_http_spans_are_not_llm_calls() -> None:
    (trace,) = load_traces(CORPUS / "openlit__openai_tool_agent")
    calls = trace.get_llm_calls()
    assert [c.span_name for c in calls] == ["chat gpt-4o-mini", "chat gpt-4o-mini"]
    assert len(trace.spans) == 5  # the root, two chat spans and their httpx `POST` children
    # gen_ai.system_instructions and a system message in gen_ai.input.messages: the prompt as sent, once
    assert [(m.role, m.content) for m in calls[0].messages] == [
        ("system", "You are a helpful assistant. Use the tools when they help."),
        ("user", "What's the weather in Paris right now?"),
    ]
    # OpenLIT leaves the assistant tool-call message out of the second request's history
    assert [m.role for m in calls[1].messages] == ["system", "user", "tool"]
    assert [(c.model, c.response_model, c.provider) for c in calls] == [
        ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", "openai")
    ] * 2
    assert (
        calls[0].finish_reasons == ["tool_calls"]
        and calls[1].response == "It's 18°C with light rain in Paris right now."
    )
    assert [t.name for t in calls[0].available_tools] == ["get_weather"]
    assert trace.input == "What's the weather in Paris right now?"
    assert trace.output == "It's 18°C with light rain in Paris right now."


def test_openlit_calls_are_priced_from_the_table_not_from_its_own_cost() -> None:
    """OpenLIT's `gen_ai.usage.cost` comes from whatever pricing JSON it was given (0 for a model it lacks):
    the calls are priced from their usage."""
    (trace,) = load_traces(CORPUS / "openlit__openai_tool_agent")
    for call in trace.get_llm_calls():
        cost = call_cost(call)
        assert cost is not None and cost.source == "price_table" and cost.usd > 0


SYSTEM = "You are a weather bot."


def _chat(system_instructions: str, first_message: dict[str, Any]) -> list[tuple[str, str]]:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": system_instructions}]),
        "gen_ai.input.messages": json.dumps(
            [first_message, {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
        ),
    }
    (call,) = trace_of(make_span("chat m", attrs)).get_llm_calls()
    return [(m.role, m.content) for m in call.messages]


def test_system_instructions_repeated_as_the_first_message_are_read_once() -> None:
    same = {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]}
    assert _chat(SYSTEM, same) == [("system", SYSTEM), ("user", "Hi")]


def test_other_system_instructions_still_come_first() -> None:
    other = {"role": "system", "parts": [{"type": "text", "content": "Answer in French."}]}
    assert _chat(SYSTEM, other) == [("system", SYSTEM), ("system", "Answer in French."), ("user", "Hi")]


def _usage_of(attrs: dict[str, Any]) -> tuple[int, int, int | None]:
    base = {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 40,
        "gen_ai.usage.cache_creation.input_tokens": 10,
    }
    (call,) = trace_of(make_span("chat m", {**base, **attrs})).get_llm_calls()
    assert call.usage is not None
    return call.usage.input_tokens, call.usage.total_tokens, call.usage.cache_read_tokens


def test_openlit_anthropic_input_gets_its_cache_tokens_back() -> None:
    openlit = {"telemetry.sdk.name": "openlit"}
    assert _usage_of({**openlit, "gen_ai.provider.name": "anthropic"}) == (150, 155, 40)
    assert _usage_of({**openlit, "gen_ai.system": "anthropic"}) == (150, 155, 40)
    # OpenAI's prompt tokens already include the cached ones; other libraries' Anthropic spans add them in
    assert _usage_of({**openlit, "gen_ai.provider.name": "openai"}) == (100, 105, 40)
    assert _usage_of({"gen_ai.provider.name": "anthropic"}) == (100, 105, 40)
