"""Google ADK native tracing: legacy `call_llm` / `agent_run` spans with `gcp.vertex.agent.*` JSON."""

from __future__ import annotations

import json

from evaluators.traces import (
    AgentSpan,
    AssistantMessage,
    HandoffSpan,
    LLMSpan,
    Span,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpan,
    UserMessage,
)
from evaluators.traces.conventions import GoogleADK
from evaluators.traces.records import SpanEvent
from tests.support.spanfactory import make_span, trace_of

SCOPE = "gcp.vertex.agent"
LLM_REQUEST = {
    "model": "gemini-2.0-flash",
    "config": {
        "system_instruction": "You are a weather agent.",
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city",
                        "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
                    },
                    {"name": "transfer_to_agent", "description": "Hand off"},
                ]
            }
        ],
    },
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {
            "role": "model",
            "parts": [{"function_call": {"id": "adk-1", "name": "get_weather", "args": {"city": "Paris"}}}],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"id": "adk-1", "name": "get_weather", "response": {"temp_c": 18}}}],
        },
    ],
}
LLM_RESPONSE = {
    "content": {"role": "model", "parts": [{"text": "It is 18C in Paris."}]},
    "finish_reason": "STOP",
    "usage_metadata": {"prompt_token_count": 215, "candidates_token_count": 26, "total_token_count": 245},
}


def call_llm_attrs(request: object = LLM_REQUEST, response: object = LLM_RESPONSE, **extra: object) -> dict:
    return {
        "gen_ai.system": "gcp.vertex.agent",
        "gen_ai.request.model": "gemini-2.0-flash",
        "gcp.vertex.agent.invocation_id": "e-1",
        "gcp.vertex.agent.session_id": "s-1",
        "gcp.vertex.agent.llm_request": request if isinstance(request, str) else json.dumps(request),
        "gcp.vertex.agent.llm_response": response if isinstance(response, str) else json.dumps(response),
        **extra,
    }


def only_llm(*spans) -> LLMSpan:
    calls = trace_of(*spans).get_llm_calls()
    assert len(calls) == 1
    return calls[0]


def test_call_llm_request_to_messages() -> None:
    call = only_llm(make_span("call_llm", call_llm_attrs(), scope=SCOPE))
    assert "adk" in call.convention_names
    assert call.model == "gemini-2.0-flash"
    assert call.provider is None  # gcp.vertex.agent is the framework, not the vendor
    assert [type(m) for m in call.messages] == [SystemMessage, UserMessage, AssistantMessage, ToolMessage]
    system, user, model, result = call.messages
    assert system.content == "You are a weather agent."
    assert user.content == "Weather in Paris?"
    assert model.role == "assistant"
    assert model.tool_calls == [ToolCall(name="get_weather", arguments={"city": "Paris"}, id="adk-1")]
    # tool results arrive as role user function_response parts
    assert (result.tool_call_id, result.name) == ("adk-1", "get_weather")
    assert json.loads(result.content) == {"temp_c": 18}
    assert call.user_input == "Weather in Paris?"
    assert call.system_prompt == "You are a weather agent."


def test_call_llm_response_usage_and_tools() -> None:
    call = only_llm(make_span("call_llm", call_llm_attrs(), scope=SCOPE))
    assert call.response == "It is 18C in Paris."
    assert call.tool_calls == []
    assert call.finish_reasons == ["stop"]
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (215, 26, 245)
    tools = call.available_tools
    assert [t.name for t in tools] == ["get_weather", "transfer_to_agent"]
    assert tools[0].description == "Weather for a city"
    assert tools[0].parameters == {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}


def test_call_llm_response_with_function_call() -> None:
    response = {
        "content": {
            "role": "model",
            "parts": [
                {"text": "Checking.", "thought": True},
                {"function_call": {"id": "adk-2", "name": "get_weather", "args": {"city": "Rome"}}},
            ],
        },
        "finish_reason": "STOP",
    }
    call = only_llm(make_span("call_llm", call_llm_attrs(response=response), scope=SCOPE))
    assert call.response is None  # thoughts are not the answer
    assert call.tool_calls == [ToolCall(name="get_weather", arguments={"city": "Rome"}, id="adk-2")]


def test_camel_case_gemini_parts_are_accepted() -> None:
    request = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"ok": 1}}}]},
        ]
    }
    response = {"candidates": [{"content": {"role": "model", "parts": [{"text": "done"}]}}], "finishReason": "STOP"}
    call = only_llm(make_span("call_llm", call_llm_attrs(request, response), scope=SCOPE))
    assert call.messages[0].tool_calls == [ToolCall(name="f", arguments={"a": 1})]
    assert isinstance(call.messages[1], ToolMessage) and call.messages[1].name == "f"
    assert call.response == "done"


def test_call_llm_with_generate_content_child_counts_once() -> None:
    agent = make_span("invoke_agent weather_agent", {"gen_ai.operation.name": "invoke_agent"}, scope=SCOPE)
    wrapper = make_span(
        "call_llm",
        call_llm_attrs(**{"gen_ai.usage.input_tokens": 215, "gen_ai.usage.output_tokens": 26}),
        parent=agent,
        scope=SCOPE,
    )
    child = make_span(
        "generate_content gemini-2.0-flash",
        {
            "gen_ai.operation.name": "generate_content",
            "gen_ai.system": "gemini",
            "gen_ai.request.model": "gemini-2.0-flash",
            "gen_ai.usage.input_tokens": 215,
            "gen_ai.usage.output_tokens": 26,
        },
        parent=wrapper,
        scope=SCOPE,
    )
    trace = trace_of(agent, wrapper, child)
    assert sum(isinstance(s, LLMSpan) for s in trace.spans) == 2  # both are LLM views...
    calls = trace.get_llm_calls()
    assert [c.span_id for c in calls] == [child.span_id]  # ...but exactly one call is counted
    assert trace.metrics.llm_call_count == 1
    usage = trace.metrics.token_usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (215, 26, 241)
    (agent_trace,) = trace.agent_traces()
    assert len(agent_trace.llm_steps) == 1
    assert agent_trace.metrics.token_usage.input_tokens == 215


def test_agent_run_tree_and_trace_io_from_llm_calls() -> None:
    invocation = make_span("invocation", {"gcp.vertex.agent.invocation_id": "e-1"}, scope=SCOPE)
    agent = make_span("agent_run [weather_agent]", {}, parent=invocation, scope=SCOPE)
    first = make_span(
        "call_llm",
        call_llm_attrs(
            request={"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]},
            response={"content": {"role": "model", "parts": [{"function_call": {"name": "get_weather"}}]}},
        ),
        parent=agent,
        scope=SCOPE,
    )
    tool = make_span(
        "execute_tool get_weather",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.type": "FunctionTool",
            "gen_ai.tool.call.id": "<not specified>",
            "gcp.vertex.agent.tool_call_args": json.dumps({"city": "Paris"}),
            "gcp.vertex.agent.tool_response": json.dumps({"temp_c": 18}),
            "gcp.vertex.agent.llm_request": "{}",
            "gcp.vertex.agent.llm_response": "{}",
        },
        parent=first,
        scope=SCOPE,
    )
    second = make_span("call_llm", call_llm_attrs(), parent=agent, scope=SCOPE)
    trace = trace_of(invocation, agent, first, tool, second)
    assert type(trace.root) is Span
    (agent_view,) = trace.get_agents()
    assert isinstance(agent_view, AgentSpan) and agent_view.name == "weather_agent"
    assert trace.agent_names == ["weather_agent"]
    assert [c.span_id for c in trace.get_llm_calls()] == [first.span_id, second.span_id]
    assert all(c.agent_name == "weather_agent" for c in trace.get_llm_calls())
    (tool_view,) = trace.get_tool_calls()
    assert isinstance(tool_view, ToolSpan)
    assert tool_view.name == "get_weather" and tool_view.call_id is None
    assert tool_view.arguments == {"city": "Paris"}
    assert tool_view.result == {"temp_c": 18}
    assert tool_view.agent_name == "weather_agent"
    # agent spans carry no content: first user message of the first call, final text of the last
    assert trace.input == "Weather in Paris?"
    assert trace.output == "It is 18C in Paris."
    (agent_trace,) = trace.agent_traces()
    assert agent_trace.tool_names_used == ["get_weather"]
    assert agent_trace.input == "Weather in Paris?"
    assert agent_trace.output == "It is 18C in Paris."


def test_transfer_to_agent_is_a_handoff_not_a_tool_call() -> None:
    triage = make_span("agent_run [triage_agent]", {}, scope=SCOPE)
    transfer = make_span(
        "execute_tool transfer_to_agent",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "transfer_to_agent",
            "gen_ai.tool.type": "TransferToAgentTool",
            "gcp.vertex.agent.tool_call_args": json.dumps({"agent_name": "flight_agent"}),
            "gcp.vertex.agent.tool_response": "{}",
        },
        parent=triage,
        scope=SCOPE,
    )
    flight = make_span("agent_run [flight_agent]", {}, parent=triage, scope=SCOPE)
    lookup = make_span(
        "execute_tool get_flight_status",
        {"gen_ai.tool.name": "get_flight_status", "gcp.vertex.agent.tool_call_args": '{"flight": "LH1"}'},
        parent=flight,
        scope=SCOPE,
    )
    trace = trace_of(triage, transfer, flight, lookup)
    assert isinstance(trace.spans[1], HandoffSpan)
    assert [t.name for t in trace.get_tool_calls()] == ["get_flight_status"]
    assert [(h.from_agent, h.to_agent, h.span_id) for h in trace.handoffs] == [
        ("triage_agent", "flight_agent", transfer.span_id)
    ]
    assert trace.metrics.tool_call_count == 1
    names = {a.agent_name: a for a in trace.agent_traces()}
    assert set(names) == {"triage_agent", "flight_agent"}
    assert names["triage_agent"].tool_names_used == []
    assert names["flight_agent"].tool_names_used == ["get_flight_status"]


def test_schema2_transfer_with_otel_arguments() -> None:
    transfer = make_span(
        "execute_tool transfer_to_agent",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": '{"agent_name": "b"}'},
        scope=SCOPE,
    )
    trace = trace_of(transfer)
    assert trace.get_tool_calls() == []
    assert [h.to_agent for h in trace.handoffs] == ["b"]


def test_truncated_blobs_degrade_without_error() -> None:
    request = json.dumps(LLM_REQUEST)[:80]
    response = json.dumps(LLM_RESPONSE)[:40]
    call = only_llm(make_span("call_llm", call_llm_attrs(request, response), scope=SCOPE))
    assert call.messages == []
    assert call.response is None
    assert call.model == "gemini-2.0-flash"  # from gen_ai.request.model
    tool = make_span(
        "execute_tool f",
        {"gen_ai.tool.name": "f", "gcp.vertex.agent.tool_call_args": '{"city": "Pa'},
        scope=SCOPE,
    )
    (tool_view,) = trace_of(tool).get_tool_calls()
    assert tool_view.arguments == '{"city": "Pa'
    assert tool_view.arguments_error


def test_content_capture_off_gives_empty_views() -> None:
    call = only_llm(make_span("call_llm", call_llm_attrs("{}", "{}"), scope=SCOPE))
    assert call.messages == [] and call.response is None and call.usage is None


def test_detection_by_scope_or_attribute_prefix() -> None:
    adk = GoogleADK()
    assert adk.detect(make_span("anything", {}, scope=SCOPE))
    assert adk.detect(make_span("anything", {"gcp.vertex.agent.event_id": "e"}))
    assert not adk.detect(make_span("call_llm", {}))
    assert adk.span_kind(make_span("send_data", {}, scope=SCOPE)) is not None


# --- ADK 1.x: a sub-agent runs inside the caller's model call; content only on call_llm -------------


def _adk1_call(
    agent: object, request: object, response: object, tokens: tuple[int, int], start: int, end: int
) -> tuple:
    """One ADK 1.x model call: `call_llm` (JSON blobs) and its `generate_content` child (same usage)."""
    usage = {"gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]}
    outer = make_span(
        "call_llm", call_llm_attrs(request, response, **usage), parent=agent, scope=SCOPE, start=start, end=end
    )
    inner = make_span(
        "generate_content gemini-2.0-flash",
        {"gen_ai.operation.name": "generate_content", "gen_ai.system": "gemini", **usage},
        parent=outer,
        scope=SCOPE,
        start=start + 1,
        end=end - 1,
    )
    return outer, inner


def _elided_logs(span: object, roles: list[str]) -> None:
    """What ADK 1.x logs when log content capture is off: every body content is "<elided>"."""
    events = [f"gen_ai.{role}.message" for role in roles] + ["gen_ai.choice"]
    span.logs.extend(  # type: ignore[attr-defined]
        SpanEvent(name, 0, {"gen_ai.system": "gemini"}, body={"content": "<elided>"}, from_log=True) for name in events
    )


def _handoff_trace():
    base = 1_800_000_000_000_000_000
    ms = 1_000_000
    triage = make_span(
        "invoke_agent triage_agent",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage_agent"},
        scope=SCOPE,
        start=base,
        end=base + 500 * ms,
    )
    transfer = {"function_call": {"id": "adk-t", "name": "transfer_to_agent", "args": {"agent_name": "weather_agent"}}}
    t_outer, t_inner = _adk1_call(
        triage,
        {
            "config": {"system_instruction": "Route weather questions."},
            "contents": [{"role": "user", "parts": [{"text": "Weather in Tokyo?"}]}],
        },
        {"content": {"role": "model", "parts": [transfer]}},
        (227, 23),
        base + 1 * ms,
        base + 499 * ms,
    )
    weather = make_span(
        "invoke_agent weather_agent",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
        parent=t_inner,
        scope=SCOPE,
        start=base + 100 * ms,
        end=base + 400 * ms,
    )
    w_outer, w_inner = _adk1_call(
        weather,
        {"contents": [{"role": "user", "parts": [{"text": "For context: transfer"}]}]},
        {"content": {"role": "model", "parts": [{"text": "Tokyo is 24C and sunny."}]}},
        (467, 18),
        base + 101 * ms,
        base + 399 * ms,
    )
    return triage, t_outer, t_inner, weather, w_outer, w_inner


def test_sub_agent_inside_a_model_call_does_not_make_that_call_a_wrapper() -> None:
    spans = _handoff_trace()
    t_inner, w_inner = spans[2], spans[5]
    trace = trace_of(*spans)
    assert [c.span_id for c in trace.get_llm_calls()] == [t_inner.span_id, w_inner.span_id]
    usage = trace.metrics.token_usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (694, 41, 735)
    calls = {a.agent_name: [c.span_id for c in a.llm_steps] for a in trace.agent_traces()}
    assert calls == {"triage_agent": [t_inner.span_id], "weather_agent": [w_inner.span_id]}


def test_answer_is_the_nested_agents_last_call_not_the_enclosing_call_that_ends_last() -> None:
    trace = trace_of(*_handoff_trace())
    assert trace.input == "Weather in Tokyo?"
    assert trace.output == "Tokyo is 24C and sunny."
    agents = {a.agent_name: a for a in trace.agent_traces()}
    assert agents["weather_agent"].output == "Tokyo is 24C and sunny."
    assert agents["triage_agent"].output is None  # it only transferred


def test_elided_log_content_never_wins_over_call_llm_json() -> None:
    spans = _handoff_trace()
    _elided_logs(spans[2], ["system", "user"])
    _elided_logs(spans[5], ["system", "user", "user"])
    trace = trace_of(*spans)
    triage_call, weather_call = trace.get_llm_calls()
    assert triage_call.user_input == "Weather in Tokyo?"
    assert [c.name for c in triage_call.tool_calls] == ["transfer_to_agent"]
    assert weather_call.response == "Tokyo is 24C and sunny."
    assert triage_call.system_prompt == "Route weather questions."  # from call_llm's config
    assert trace.input == "Weather in Tokyo?"
    assert trace.output == "Tokyo is 24C and sunny."
    assert not any("<elided>" in m.content for c in trace.get_llm_calls() for m in c.messages)
