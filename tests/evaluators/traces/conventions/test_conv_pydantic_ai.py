"""Pydantic AI: `invoke_agent` / `agent run`, `chat {model}`, `execute_tool` / `running tool` spans."""

from __future__ import annotations

import json

from evaluators.traces import AgentSpan, AssistantMessage, SystemMessage, ToolMessage, UserMessage
from evaluators.traces import conventions as conv
from evaluators.traces.conventions.base import SpanKind
from evaluators.traces.conventions.pydantic_ai import PydanticAI
from tests.support.spanfactory import make_span, trace_of

SCOPE = "pydantic-ai"
CLIENT = 3
QUESTION = "What's the weather in Paris?"
ANSWER = "It is sunny and 22°C in Paris."
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
REQUEST_PARAMETERS = {
    "function_tools": [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters_json_schema": SCHEMA,
            "outer_typed_dict_key": None,
            "strict": None,
            "kind": "function",
        }
    ],
    "builtin_tools": [],
    "output_mode": "text",
    "output_object": None,
    "output_tools": [],
    "allow_text_output": True,
}
USER = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_A", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_call",
}
FINAL = {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}


def tool_result(role: str) -> dict:
    """PAI writes `result` (not the OTel `response`); role `user` before format v6, `tool` from v6."""
    part = {"type": "tool_call_response", "id": "call_A", "name": "get_weather", "result": "Sunny, 22°C"}
    return {"role": role, "parts": [part]}


def chat_attrs(inputs: list, outputs: list, usage: tuple[int, int], **extra: object) -> dict:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "server.address": "api.openai.com",
        "model_request_parameters": json.dumps(REQUEST_PARAMETERS),
        "logfire.json_schema": '{"type":"object","properties":{"model_request_parameters":{"type":"object"}}}',
        "logfire.msg": "chat gpt-4o",
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be concise."}]),
        "gen_ai.response.finish_reasons": [outputs[-1]["finish_reason"]],
        "gen_ai.usage.input_tokens": usage[0],
        "gen_ai.usage.output_tokens": usage[1],
        **extra,
    }


def v3_trace(result_role: str = "user", all_messages: list | None = None, **agent_extra: object):
    history = [USER, CALL, tool_result(result_role), FINAL]
    agent = make_span(
        "invoke_agent weather_agent",
        {
            "model_name": "gpt-4o",
            "agent_name": "weather_agent",
            "gen_ai.agent.name": "weather_agent",
            "logfire.msg": "weather_agent run",
            "final_result": ANSWER,
            "pydantic_ai.all_messages": json.dumps(all_messages or history),
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be concise."}]),
            "gen_ai.aggregated_usage.input_tokens": 250,
            "gen_ai.aggregated_usage.output_tokens": 40,
            **agent_extra,
        },
        scope=SCOPE,
    )
    first = make_span("chat gpt-4o", chat_attrs([USER], [CALL], (100, 20)), parent=agent, kind=CLIENT, scope=SCOPE)
    tool = make_span(
        "execute_tool get_weather",
        {
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_A",
            "gen_ai.tool.call.arguments": '{"city":"Paris"}',
            "gen_ai.tool.call.result": "Sunny, 22°C",
            "logfire.msg": "running tool: get_weather",
            "gen_ai.agent.name": "weather_agent",
        },
        parent=agent,
        scope=SCOPE,
    )
    second = make_span(
        "chat gpt-4o",
        chat_attrs([USER, CALL, tool_result(result_role)], [FINAL], (150, 20)),
        parent=agent,
        kind=CLIENT,
        scope=SCOPE,
    )
    return trace_of(agent, first, tool, second)


def test_calls_agent_and_usage_without_aggregated_usage():
    trace = v3_trace()
    calls = trace.get_llm_calls()
    assert len(calls) == 2
    assert [c.model for c in calls] == ["gpt-4o", "gpt-4o"]
    assert calls[0].provider == "openai"
    usage = trace.metrics.token_usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (250, 40, 290)
    assert trace.agent_names == ["weather_agent"]
    [agent] = trace.get_agents()
    assert isinstance(agent, AgentSpan)
    assert conv.first("usage", agent.record, agent.conventions) is None


def test_first_call_messages_output_and_tools():
    first, _ = v3_trace().get_llm_calls()
    assert [type(m) for m in first.messages] == [SystemMessage, UserMessage]
    assert first.messages[0].content == "Be concise."
    assert first.response is None
    assert first.finish_reasons == ["tool_call"]
    [call] = first.tool_calls
    assert (call.name, call.id, call.arguments) == ("get_weather", "call_A", {"city": "Paris"})
    [tool] = first.available_tools
    assert (tool.name, tool.description, tool.parameters) == ("get_weather", "Weather for a city.", SCHEMA)


def test_tool_results_before_v6_are_tool_messages():
    _, second = v3_trace(result_role="user").get_llm_calls()
    messages = second.messages
    assert [type(m) for m in messages] == [SystemMessage, UserMessage, AssistantMessage, ToolMessage]
    result = messages[3]
    assert (result.role, result.tool_call_id, result.name, result.content) == (
        "tool",
        "call_A",
        "get_weather",
        "Sunny, 22°C",
    )
    assert second.response == ANSWER
    assert second.finish_reasons == ["stop"]


def test_tool_results_from_v6_are_tool_messages():
    _, second = v3_trace(result_role="tool").get_llm_calls()
    result = second.messages[-1]
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.content) == ("call_A", "Sunny, 22°C")


def test_tool_span():
    [tool] = v3_trace().get_tool_calls()
    assert (tool.name, tool.call_id) == ("get_weather", "call_A")
    assert tool.arguments == {"city": "Paris"}
    assert tool.result == "Sunny, 22°C"
    assert tool.agent_name == "weather_agent"


def test_agent_io_from_all_messages_and_final_result():
    trace = v3_trace()
    [agent] = trace.get_agents()
    assert agent.input == QUESTION
    assert agent.output == ANSWER
    assert trace.input == QUESTION
    assert trace.output == ANSWER


def test_agent_input_is_the_new_request_when_history_was_passed():
    earlier = [
        {"role": "user", "parts": [{"type": "text", "content": "Hi"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}], "finish_reason": "stop"},
    ]
    history = [*earlier, USER, CALL, tool_result("user"), FINAL]
    trace = v3_trace(all_messages=history, **{"pydantic_ai.new_message_index": 2})
    assert trace.input == QUESTION


def test_structured_final_result():
    trace = v3_trace(final_result='{"city":"Paris","temp_c":22}')
    assert json.loads(trace.get_agents()[0].output) == {"city": "Paris", "temp_c": 22}


def test_tool_definitions_attribute_wins_over_request_parameters():
    definitions = [{"type": "function", "name": "get_time", "description": "Current time", "parameters": SCHEMA}]
    span = make_span(
        "chat gpt-4o",
        chat_attrs([USER], [FINAL], (1, 1), **{"gen_ai.tool.definitions": json.dumps(definitions)}),
        scope=SCOPE,
    )
    [call] = trace_of(span).get_llm_calls()
    assert [t.name for t in call.available_tools] == ["get_time"]


def test_v2_agent_run_and_running_tool():
    agent = make_span(
        "agent run",
        {
            "model_name": "gpt-4o",
            "agent_name": "weather_agent",
            "logfire.msg": "weather_agent run",
            "final_result": ANSWER,
            "pydantic_ai.all_messages": json.dumps([USER, CALL, tool_result("user"), FINAL]),
            "gen_ai.usage.input_tokens": 250,
            "gen_ai.usage.output_tokens": 40,
        },
        scope=SCOPE,
    )
    chat = make_span("chat gpt-4o", chat_attrs([USER], [CALL], (100, 20)), parent=agent, kind=CLIENT, scope=SCOPE)
    tool = make_span(
        "running tool",
        {
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_A",
            "tool_arguments": '{"city":"Paris"}',
            "tool_response": "Sunny, 22°C",
            "logfire.msg": "running tool: get_weather",
        },
        parent=agent,
        scope=SCOPE,
    )
    trace = trace_of(agent, chat, tool)
    assert trace.agent_names == ["weather_agent"]
    assert len(trace.get_llm_calls()) == 1
    assert trace.metrics.token_usage.input_tokens == 100  # the agent span's run total is not a call
    [tool_view] = trace.get_tool_calls()
    assert (tool_view.name, tool_view.call_id, tool_view.arguments, tool_view.result) == (
        "get_weather",
        "call_A",
        {"city": "Paris"},
        "Sunny, 22°C",
    )
    assert tool_view.agent_name == "weather_agent"
    assert trace.input == QUESTION and trace.output == ANSWER


def test_v1_events_attribute():
    events = [
        {"content": "Be brief.", "role": "system", "gen_ai.system": "openai", "event.name": "gen_ai.system.message"},
        {"content": QUESTION, "role": "user", "gen_ai.message.index": 0, "event.name": "gen_ai.user.message"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c4", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
            ],
            "gen_ai.message.index": 1,
            "event.name": "gen_ai.assistant.message",
        },
        {
            "content": "Sunny, 22°C",
            "role": "tool",
            "id": "c4",
            "name": "get_weather",
            "gen_ai.message.index": 2,
            "event.name": "gen_ai.tool.message",
        },
        {
            "index": 0,
            "message": {"role": "assistant", "content": ANSWER},
            "gen_ai.system": "openai",
            "event.name": "gen_ai.choice",
        },
    ]
    span = make_span(
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "model_request_parameters": json.dumps(REQUEST_PARAMETERS),
            "events": json.dumps(events),
            "gen_ai.usage.input_tokens": 80,
            "gen_ai.usage.output_tokens": 9,
        },
        scope=SCOPE,
    )
    [call] = trace_of(span).get_llm_calls()
    assert [type(m) for m in call.messages] == [SystemMessage, UserMessage, AssistantMessage, ToolMessage]
    assert [(c.name, c.id, c.arguments) for c in call.messages[2].tool_calls] == [
        ("get_weather", "c4", {"city": "Paris"})
    ]
    assert (call.messages[3].tool_call_id, call.messages[3].content) == ("c4", "Sunny, 22°C")
    assert call.response == ANSWER
    assert [t.name for t in call.available_tools] == ["get_weather"]
    assert call.usage.total_tokens == 89


def test_running_output_function_is_other():
    span = make_span("running output function", {"logfire.msg": "running output function: final"}, scope=SCOPE)
    assert conv.first("span_kind", span, conv.detect(span)) == SpanKind.OTHER


def test_truncated_all_messages_degrades_without_exceptions():
    agent = make_span(
        "agent run",
        {
            "agent_name": "weather_agent",
            "pydantic_ai.all_messages": json.dumps([USER, FINAL])[:30],
            "final_result": ANSWER,
        },
        scope=SCOPE,
    )
    pai = PydanticAI()
    assert pai.io(agent) == (None, ANSWER)
    chat = make_span(
        "chat gpt-4o",
        {**chat_attrs([USER], [FINAL], (1, 1)), "gen_ai.input.messages": json.dumps([USER])[:25]},
        parent=agent,
        scope=SCOPE,
    )
    assert [type(m) for m in pai.input_messages(chat)] == [SystemMessage]  # the unparsable history is left out
    trace = trace_of(agent, chat)
    assert trace.output == ANSWER
    assert trace.get_llm_calls()[0].response == ANSWER


def test_other_logfire_spans_stay_inert():
    span = make_span("GET /weather", {"logfire.msg": "GET /weather", "http.method": "GET"})
    assert PydanticAI().detect(span)
    assert conv.first("span_kind", span, conv.detect(span)) is None
    assert conv.first("io", span, conv.detect(span)) is None
    assert conv.first("tool_invocation", span, conv.detect(span)) is None
