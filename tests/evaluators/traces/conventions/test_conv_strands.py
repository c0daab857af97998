"""Strands Agents: messages in span events (Bedrock-Converse content blocks), latest-mode details events."""

from __future__ import annotations

import json

from evaluators.traces import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from evaluators.traces import conventions as conv
from evaluators.traces.conventions.base import SpanKind
from evaluators.traces.conventions.strands import Strands
from evaluators.traces.records import SpanEvent
from tests.support.spanfactory import make_span, trace_of

SCOPE = "strands.telemetry.tracer"
MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
QUESTION = "What is the weather in Paris?"
ANSWER = "It is 22°C and sunny in Paris."
TOOL_USE = {"toolUse": {"toolUseId": "tooluse_abc", "name": "get_weather", "input": {"city": "Paris"}}}
TOOL_RESULT = {"toolResult": {"toolUseId": "tooluse_abc", "status": "success", "content": [{"text": "22°C, sunny"}]}}
DETAILS = "gen_ai.client.inference.operation.details"


def event(name: str, **attributes: object) -> SpanEvent:
    return SpanEvent(name=name, attributes=dict(attributes))


def message(name: str, blocks: list) -> SpanEvent:
    return event(name, content=json.dumps(blocks))


def usage(inp: int, out: int) -> dict:
    """Strands writes both spellings and a total."""
    return {
        "gen_ai.usage.prompt_tokens": inp,
        "gen_ai.usage.input_tokens": inp,
        "gen_ai.usage.completion_tokens": out,
        "gen_ai.usage.output_tokens": out,
        "gen_ai.usage.total_tokens": inp + out,
    }


def common(op: str) -> dict:
    return {
        "gen_ai.operation.name": op,
        "gen_ai.system": "strands-agents",
        "gen_ai.event.start_time": "2025-06-01T10:00",
    }


def legacy_trace(result_event: str = "gen_ai.tool.message"):
    """invoke_agent → cycle → chat, execute_tool; cycle → chat (default, non-latest mode)."""
    user = message("gen_ai.user.message", [{"text": QUESTION}])
    agent = make_span(
        "invoke_agent weather_agent",
        {
            **common("invoke_agent"),
            "gen_ai.agent.name": "weather_agent",
            "gen_ai.request.model": MODEL,
            "gen_ai.agent.tools": json.dumps(["get_weather", "get_time"]),
            "gen_ai.agent.system_prompt": "You report the weather.",
            **usage(300, 50),
        },
        events=[user, event("gen_ai.choice", message=ANSWER + "\n", finish_reason="end_turn")],
        scope=SCOPE,
    )
    cycle1 = make_span(
        "execute_event_loop_cycle",
        {"event_loop.cycle_id": "7a1c", "gen_ai.event.start_time": "2025-06-01T10:00"},
        parent=agent,
        events=[user],
        scope=SCOPE,
    )
    chat1 = make_span(
        "chat",
        {**common("chat"), "gen_ai.request.model": MODEL, **usage(120, 30)},
        parent=cycle1,
        events=[
            message("gen_ai.system.message", [{"text": "You report the weather."}]),
            user,
            event(
                "gen_ai.choice",
                finish_reason="tool_use",
                message=json.dumps([{"text": "Let me check."}, TOOL_USE]),
            ),
        ],
        scope=SCOPE,
    )
    tool = make_span(
        "execute_tool get_weather",
        {
            **common("execute_tool"),
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "tooluse_abc",
            "gen_ai.tool.status": "success",
        },
        parent=cycle1,
        events=[
            event("gen_ai.tool.message", role="tool", content='{"city": "Paris"}', id="tooluse_abc"),
            event("gen_ai.choice", message=json.dumps([{"text": "22°C, sunny"}]), id="tooluse_abc"),
        ],
        scope=SCOPE,
    )
    cycle2 = make_span("execute_event_loop_cycle", {"event_loop.cycle_id": "9b2d"}, parent=cycle1, scope=SCOPE)
    chat2 = make_span(
        "chat",
        {**common("chat"), "gen_ai.request.model": MODEL, **usage(180, 20)},
        parent=cycle2,
        events=[
            user,
            message("gen_ai.assistant.message", [{"text": "Let me check."}, TOOL_USE]),
            message(result_event, [TOOL_RESULT]),
            event("gen_ai.choice", finish_reason="end_turn", message=json.dumps([{"text": ANSWER}])),
        ],
        scope=SCOPE,
    )
    return trace_of(agent, cycle1, chat1, tool, cycle2, chat2)


def test_calls_usage_counted_once_and_provider_not_the_framework():
    trace = legacy_trace()
    calls = trace.get_llm_calls()
    assert len(calls) == 2
    assert [c.model for c in calls] == [MODEL, MODEL]
    assert [c.provider for c in calls] == [None, None]
    u = trace.metrics.token_usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (300, 50, 350)
    assert trace.agent_names == ["weather_agent"]
    assert [c.agent_name for c in calls] == ["weather_agent", "weather_agent"]


def test_event_loop_cycle_is_other():
    trace = legacy_trace()
    cycles = [s for s in trace.spans if s.span_name == "execute_event_loop_cycle"]
    assert len(cycles) == 2
    for cycle in cycles:
        assert Strands().detect(cycle.record)
        assert conv.first("span_kind", cycle.record, cycle.conventions) == SpanKind.OTHER


def test_first_call_messages_and_output_from_events():
    first, _ = legacy_trace().get_llm_calls()
    assert [type(m) for m in first.messages] == [SystemMessage, UserMessage]
    assert first.messages[1].content == QUESTION
    assert first.response == "Let me check."
    assert first.finish_reasons == ["tool_use"]
    [call] = first.tool_calls
    assert (call.name, call.id, call.arguments) == ("get_weather", "tooluse_abc", {"city": "Paris"})


def test_second_call_tool_result_event():
    _, second = legacy_trace().get_llm_calls()
    messages = second.messages
    assert [type(m) for m in messages] == [UserMessage, AssistantMessage, ToolMessage]
    assert [(c.name, c.id) for c in messages[1].tool_calls] == [("get_weather", "tooluse_abc")]
    assert messages[1].content == "Let me check."
    assert (messages[2].tool_call_id, messages[2].content) == ("tooluse_abc", "22°C, sunny")
    assert second.response == ANSWER
    assert second.finish_reasons == ["end_turn"]


def test_tool_results_in_a_user_role_event():
    """Older Strands named the event after the role (`gen_ai.user.message`) even for tool results."""
    _, second = legacy_trace(result_event="gen_ai.user.message").get_llm_calls()
    result = second.messages[-1]
    assert isinstance(result, ToolMessage)
    assert (result.role, result.tool_call_id, result.content) == ("tool", "tooluse_abc", "22°C, sunny")
    assert not any(isinstance(m, UserMessage) and "toolResult" in m.content for m in second.messages)


def test_tool_span_legacy_events():
    [tool] = legacy_trace().get_tool_calls()
    assert (tool.name, tool.call_id) == ("get_weather", "tooluse_abc")
    assert tool.arguments == {"city": "Paris"}
    assert tool.result == "22°C, sunny"


def test_agent_tools_io_and_trace_io():
    trace = legacy_trace()
    [agent_trace] = trace.agent_traces()
    assert [t.name for t in agent_trace.available_tools] == ["get_weather", "get_time"]
    [agent] = trace.get_agents()
    assert agent.input == QUESTION
    assert agent.output == ANSWER + "\n"
    assert trace.input == QUESTION
    assert trace.output == ANSWER


def latest_trace():
    """OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental: details events in the OTel parts shape."""

    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    call = {"type": "tool_call", "name": "get_weather", "id": "tooluse_abc", "arguments": {"city": "Paris"}}
    response = {"type": "tool_call_response", "id": "tooluse_abc", "response": [{"text": "22°C, sunny"}]}
    common_latest = {"gen_ai.provider.name": "strands-agents"}
    agent = make_span(
        "invoke_agent weather_agent",
        {**common_latest, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
        events=[
            event(DETAILS, **{"gen_ai.input.messages": json.dumps([user])}),
            event(
                DETAILS,
                **{
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": ANSWER}],
                                "finish_reason": "end_turn",
                            }
                        ]
                    )
                },
            ),
        ],
        scope=SCOPE,
    )
    chat = make_span(
        "chat",
        {**common_latest, "gen_ai.operation.name": "chat", "gen_ai.request.model": MODEL, **usage(180, 20)},
        parent=agent,
        events=[
            event(
                DETAILS,
                **{
                    "gen_ai.input.messages": json.dumps(
                        [user, {"role": "assistant", "parts": [call]}, {"role": "user", "parts": [response]}]
                    )
                },
            ),
            event(
                DETAILS,
                **{
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": ANSWER}],
                                "finish_reason": "end_turn",
                            }
                        ]
                    )
                },
            ),
        ],
        scope=SCOPE,
    )
    tool = make_span(
        "execute_tool get_weather",
        {
            **common_latest,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "tooluse_abc",
        },
        parent=agent,
        events=[
            event(DETAILS, **{"gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [call]}])}),
            event(DETAILS, **{"gen_ai.output.messages": json.dumps([{"role": "tool", "parts": [response]}])}),
        ],
        scope=SCOPE,
    )
    return trace_of(agent, chat, tool)


def test_latest_mode_messages_and_output():
    trace = latest_trace()
    [call] = trace.get_llm_calls()
    assert call.provider is None
    assert [type(m) for m in call.messages] == [UserMessage, AssistantMessage, ToolMessage]
    assert (call.messages[2].tool_call_id, call.messages[2].content) == ("tooluse_abc", "22°C, sunny")
    assert [(c.name, c.arguments) for c in call.messages[1].tool_calls] == [("get_weather", {"city": "Paris"})]
    assert call.response == ANSWER
    assert call.finish_reasons == ["end_turn"]
    assert trace.metrics.token_usage.total_tokens == 200


def test_latest_mode_tool_span_and_agent_io():
    trace = latest_trace()
    [tool] = trace.get_tool_calls()
    assert (tool.name, tool.call_id, tool.arguments, tool.result) == (
        "get_weather",
        "tooluse_abc",
        {"city": "Paris"},
        "22°C, sunny",
    )
    [agent] = trace.get_agents()
    assert (agent.input, agent.output) == (QUESTION, ANSWER)
    assert trace.input == QUESTION and trace.output == ANSWER


def test_latest_mode_tool_attributes():
    tool = make_span(
        "execute_tool get_weather",
        {
            "gen_ai.provider.name": "strands-agents",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "tooluse_abc",
            "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            "gen_ai.tool.call.result": json.dumps([{"text": "22°C, sunny"}]),
        },
    )
    [view] = trace_of(tool).get_tool_calls()
    assert (view.arguments, view.result) == ({"city": "Paris"}, "22°C, sunny")


def test_truncated_content_degrades_to_raw_text():
    chat = make_span(
        "chat",
        {**common("chat"), "gen_ai.request.model": MODEL},
        events=[
            event("gen_ai.user.message", content='[{"text": "What is the wea'),
            event("gen_ai.choice", finish_reason="max_tokens", message='[{"text": "It is 22'),
        ],
    )
    tool = make_span(
        "execute_tool get_weather",
        {**common("execute_tool"), "gen_ai.tool.name": "get_weather"},
        events=[event("gen_ai.tool.message", role="tool", content='{"city": "Par', id="t1")],
    )
    strands = Strands()
    [user] = strands.input_messages(chat)
    assert isinstance(user, UserMessage) and "What is the wea" in user.content
    assert strands.output(chat).finish_reasons == ["max_tokens"]
    trace = trace_of(chat, tool)
    [view] = trace.get_tool_calls()
    assert view.arguments == '{"city": "Par' and view.arguments_error
    assert view.call_id == "t1"


def test_detection():
    strands = Strands()
    assert strands.detect(make_span("chat", {"gen_ai.system": "strands-agents"}))
    assert strands.detect(make_span("invoke_agent a", {"gen_ai.provider.name": "strands-agents"}))
    assert strands.detect(make_span("invoke_agent a", {"gen_ai.agent.tools": '["x"]'}))
    assert strands.detect(make_span("execute_event_loop_cycle", {}))
    assert not strands.detect(make_span("chat gpt-4o", {"gen_ai.system": "openai", "gen_ai.operation.name": "chat"}))


def test_latest_mode_span_attributes_only():
    """`gen_ai_span_attributes_only`: the same parts JSON as span attributes; tool results still blocks."""
    response = {"type": "tool_call_response", "id": "tooluse_abc", "response": [{"text": "22°C, sunny"}]}
    chat = make_span(
        "chat",
        {
            "gen_ai.provider.name": "strands-agents",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": MODEL,
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [response]}]),
        },
    )
    [call] = trace_of(chat).get_llm_calls()
    [result] = call.messages
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.content) == ("tooluse_abc", "22°C, sunny")
