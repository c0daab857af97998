"""Semantic Kernel's native diagnostics (content in log records) and the official openai-v2 instrumentation under
util-genai `invoke_agent` spans (a conversation of three turns), as recorded: the facts the generic corpus test leaves
out (per-call tokens, tool arguments and results, content joined from the logs, the session's turns)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evaluators.sessions import group_sessions
from evaluators.traces import Trace, load_traces
from evaluators.traces.messages import AssistantMessage, ToolMessage
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of

SK = CORPUS / "semantic_kernel__tool_agent"
V2 = CORPUS / "otel_openai_v2__multi_turn"
SK_ANSWER = "It's 3°C with snow showers in Oslo: wear a warm coat, a hat and waterproof boots."
KYOTO = "conv_kyoto_5Tg8Wm2q"
TURNS = [
    "Hi! I'm spending tomorrow in Kyoto. Which two sights should I not miss?",
    "What will the weather be like there tomorrow?",
    "Thanks. Should I take an umbrella then?",
]


def _one(path: Path) -> Trace:
    (trace,) = load_traces([str(path)])
    return trace


def _turns() -> list[Trace]:
    return sorted(load_traces([str(V2)]), key=lambda t: t.start_time)


def _fake_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "fake_llm_log.jsonl").read_text().splitlines()]


# --- Semantic Kernel ------------------------------------------------------------------------------------------------


def test_sk_calls_tokens_and_tool_requests_match_the_fake_server() -> None:
    calls = _one(SK).get_llm_calls()
    served = [e["response"]["usage"] for e in _fake_log(SK)]
    assert [(c.metrics.input_tokens, c.metrics.output_tokens) for c in calls] == [
        (u["prompt_tokens"], u["completion_tokens"]) for u in served
    ]
    assert [(c.metrics.input_tokens, c.metrics.output_tokens) for c in calls] == [(118, 19), (171, 27), (229, 24)]
    assert [[t.name for t in c.tool_calls] for c in calls] == [
        ["WeatherPlugin-get_weather"],
        ["WeatherPlugin-suggest_outfit"],
        [],
    ]
    assert [c.finish_reasons for c in calls] == [["tool_calls"], ["tool_calls"], ["stop"]]
    assert all(c.model == "gpt-4o-mini" and c.provider == "openai" for c in calls)


def test_sk_tool_spans_carry_arguments_results_and_call_ids() -> None:
    tools = _one(SK).get_tool_calls()
    assert [(t.name, t.call_id, t.arguments, t.arguments_error, t.result) for t in tools] == [
        (
            "WeatherPlugin-get_weather",
            "call_sk01getWeather",
            {"city": "Oslo"},
            None,
            {"city": "Oslo", "temperature_c": 3, "conditions": "snow showers"},
        ),
        (
            "WeatherPlugin-suggest_outfit",
            "call_sk02outfit",
            {"temperature_c": 3, "conditions": "snow showers"},
            None,
            "Warm coat, hat, gloves and waterproof boots.",
        ),
    ]


def test_sk_messages_come_from_the_joined_log_records() -> None:
    """The chat spans hold no content; the last call's six messages and its answer are the log records' (tool
    results tied to their calls by `tool_call_id`)."""
    trace = _one(SK)
    last = trace.get_llm_calls()[-1]
    assert [m.role for m in last.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert last.system_prompt == "You are a helpful weather assistant. Use the tools when they help."
    tool_results = [m for m in last.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in tool_results] == [
        ("call_sk01getWeather", '{"city": "Oslo", "temperature_c": 3, "conditions": "snow showers"}'),
        ("call_sk02outfit", "Warm coat, hat, gloves and waterproof boots."),
    ]
    asked = [c.id for m in last.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert asked == ["call_sk01getWeather", "call_sk02outfit"]
    assert last.response == SK_ANSWER
    assert trace.input == "I'm in Oslo today. What's the weather like, and what should I wear?"
    assert trace.output == SK_ANSWER


def test_sk_spans_alone_keep_tokens_and_finish_reasons(tmp_path: Path) -> None:
    """Without the logs export the chat spans still give usage and, from Semantic Kernel's singular
    `gen_ai.response.finish_reason` ("FinishReason.TOOL_CALLS"), the finish reasons; no content."""
    for source in SK.glob("traces_*.pb"):
        shutil.copy(source, tmp_path / source.name)
    calls = _one(tmp_path).get_llm_calls()
    assert [(c.metrics.input_tokens, c.metrics.output_tokens) for c in calls] == [(118, 19), (171, 27), (229, 24)]
    assert [c.finish_reasons for c in calls] == [["tool_calls"], ["tool_calls"], ["stop"]]
    assert all(not c.messages and c.response is None for c in calls)


def test_sk_agent_span_names_the_agent_and_its_tools() -> None:
    trace = _one(SK)
    (agent,) = trace.agent_traces()
    assert agent.agent_name == "weather_agent" and agent.description == "Answers weather questions."
    assert [t.name for t in agent.available_tools] == ["WeatherPlugin-get_weather", "WeatherPlugin-suggest_outfit"]
    assert agent.tool_names_used == ["WeatherPlugin-get_weather", "WeatherPlugin-suggest_outfit"]
    assert agent.output == SK_ANSWER
    usage = agent.metrics.token_usage
    assert (usage.input_tokens, usage.output_tokens, agent.metrics.llm_call_count) == (518, 70, 3)


# --- openai-v2 + util-genai, three turns ----------------------------------------------------------------------------


def test_v2_per_call_tokens_are_counted_once() -> None:
    """The invoke_agent spans repeat their calls' summed usage; a turn counts its chat calls only."""
    turns = _turns()
    assert [[(c.metrics.input_tokens, c.metrics.output_tokens) for c in t.get_llm_calls()] for t in turns] == [
        [(61, 21)],
        [(104, 22), (151, 17)],
        [(186, 14)],
    ]
    usage = [t.metrics.token_usage for t in turns]
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [(61, 21), (255, 39), (186, 14)]
    assert sum(u.input_tokens for u in usage) == sum(e["response"]["usage"]["prompt_tokens"] for e in _fake_log(V2))


def test_v2_tool_call_of_turn_two() -> None:
    turns = _turns()
    assert [[t.name for t in trace.get_tool_calls()] for trace in turns] == [[], ["get_weather"], []]
    (tool,) = turns[1].get_tool_calls()
    assert (tool.call_id, tool.arguments, tool.arguments_error) == (
        "call_v2weather01",
        {"city": "Kyoto", "day": "tomorrow"},
        None,
    )
    assert tool.result == {
        "city": "Kyoto",
        "day": "tomorrow",
        "temperature_c": 18,
        "conditions": "light rain in the afternoon",
    }
    first, second = turns[1].get_llm_calls()
    assert [c.name for c in first.tool_calls] == ["get_weather"] and first.finish_reasons == ["tool_calls"]
    results = [m for m in second.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["call_v2weather01"]
    assert [t.name for t in turns[1].agent_traces()[0].available_tools] == ["get_weather"]


def test_v2_each_request_resends_the_history() -> None:
    """Turn 3's only call sends the 8 messages the fake server received, the turn's question last."""
    call = _turns()[2].get_llm_calls()[0]
    served = _fake_log(V2)[3]["request"]["messages"]
    assert [m.role for m in call.messages] == [m["role"] for m in served]
    assert call.messages[1].content == TURNS[0] and call.messages[-1].content == TURNS[2]


def test_v2_details_log_records_alone_give_the_content() -> None:
    """Each chat span has its `gen_ai.client.inference.operation.details` record (structured values) joined; with
    the span's own content attributes taken off (content captured as EVENT_ONLY), the messages come from it."""
    trace = _turns()[1]
    records = [s.record for s in trace.spans]
    chats = [r for r in records if r.attributes.get("gen_ai.operation.name") == "chat"]
    assert [[e.name for e in r.logs] for r in chats] == [["gen_ai.client.inference.operation.details"]] * 2
    for record in chats:
        record.attributes.pop("gen_ai.input.messages")
        record.attributes.pop("gen_ai.output.messages")
    first, second = trace_of(*records).get_llm_calls()
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert second.messages[3].content == TURNS[1]
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("get_weather", {"city": "Kyoto", "day": "tomorrow"})]
    assert second.response == "Tomorrow in Kyoto: 18°C with light rain in the afternoon."


def test_v2_one_session_of_three_turns() -> None:
    (session,) = group_sessions(load_traces([str(V2)]))
    assert (session.session_id, session.source) == (KYOTO, "gen_ai.conversation.id")
    assert session.trace_ids == [t.trace_id for t in _turns()]
    assert [turn.user_message for turn in session.turns] == TURNS
    assert [turn.answer for turn in session.turns] == [
        e["response"]["choices"][0]["message"]["content"]
        for e in _fake_log(V2)
        if e["response"]["choices"][0]["finish_reason"] == "stop"
    ]
    assert [list(turn.tool_calls) for turn in session.turns] == [[], ["get_weather"], []]
    assert [(turn.input_tokens, turn.output_tokens) for turn in session.turns] == [(61, 21), (255, 39), (186, 14)]
    assert [turn.agents for turn in session.turns] == [("travel_assistant",)] * 3


def test_v2_trace_input_is_the_turns_own_question() -> None:
    assert [t.input for t in _turns()] == TURNS


@pytest.mark.parametrize(
    ("value", "reasons"),
    [("FinishReason.STOP,FinishReason.LENGTH", ["stop", "length"]), ("stop", ["stop"]), (" , ", []), (42, [])],
)
def test_singular_finish_reason_spellings(value: object, reasons: list[str]) -> None:
    """Semantic Kernel comma-joins its FinishReason enums in one string; anything else is read or left alone."""
    span = make_span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reason": value})
    (call,) = trace_of(span).get_llm_calls()
    assert call.finish_reasons == reasons
