"""OTel GenAI semantic conventions: 1.37+ attributes, 1.28-1.36 log events, 1.26 span events."""

from __future__ import annotations

import json

from evaluators.traces import (
    AgentSpan,
    AssistantMessage,
    HandoffSpan,
    LLMSpan,
    RetrieverSpan,
    Span,
    SpanEvent,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpan,
    UserMessage,
)
from evaluators.traces.conventions import OTelGenAI
from tests.support.spanfactory import make_span, trace_of

SYSTEM = [{"type": "text", "content": "You are a weather bot."}]
INPUT = [
    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": "Let me check."},
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        ],
    },
    # ADK schema 2 / Gemini: tool results come back in a user-role message
    {
        "role": "user",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": {"temp_c": 18}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_2", "response": "sunny"}]},
    # Gemini role name
    {"role": "model", "parts": [{"type": "text", "content": "It is 18C."}]},
    {"role": "user", "parts": [{"type": "text", "content": "Thanks"}]},
]
OUTPUT = [
    {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": "You're welcome."},
            {"type": "tool_call", "id": "call_3", "name": "log", "arguments": {"x": 1}},
        ],
        "finish_reason": "stop",
    }
]
TOOL_DEFS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
    {"type": "function", "name": "log"},
]


def chat_attrs(**extra: object) -> dict[str, object]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.provider.name": "openai",
        "gen_ai.system_instructions": json.dumps(SYSTEM),
        "gen_ai.input.messages": json.dumps(INPUT),
        "gen_ai.output.messages": json.dumps(OUTPUT),
        "gen_ai.tool.definitions": json.dumps(TOOL_DEFS),
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        **extra,
    }


def only_llm(*spans) -> LLMSpan:
    calls = trace_of(*spans).get_llm_calls()
    assert len(calls) == 1
    return calls[0]


# --- 1.37+ attributes ---------------------------------------------------------------------------


def test_chat_span_is_llm_with_model_provider_and_tokens() -> None:
    call = only_llm(make_span("chat gpt-4o", chat_attrs(), kind=3))
    assert isinstance(call, LLMSpan)
    assert call.model == "gpt-4o"
    assert call.response_model == "gpt-4o-2024-08-06"
    assert call.provider == "openai"
    assert call.usage is not None
    # OTel has no total attribute: total = input + output
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (120, 30, 150)
    assert call.metrics.total_tokens == 150 and call.metrics.has_usage
    assert "otel_genai" in call.convention_names


def test_json_string_parts_to_typed_messages() -> None:
    messages = only_llm(make_span("chat gpt-4o", chat_attrs())).messages
    assert [type(m) for m in messages] == [
        SystemMessage,
        UserMessage,
        AssistantMessage,
        ToolMessage,
        ToolMessage,
        AssistantMessage,
        UserMessage,
    ]
    system, user, assistant, result_from_user, result_from_tool, model, last = messages
    assert system.content == "You are a weather bot."
    assert user.content == "Weather in Paris?"
    assert assistant.content == "Let me check."
    assert assistant.tool_calls == [ToolCall(name="get_weather", arguments={"city": "Paris"}, id="call_1")]
    assert result_from_user.tool_call_id == "call_1"
    assert json.loads(result_from_user.content) == {"temp_c": 18}
    assert (result_from_tool.tool_call_id, result_from_tool.content) == ("call_2", "sunny")
    assert model.role == "assistant" and model.content == "It is 18C."
    assert last.content == "Thanks"


def test_convenience_accessors() -> None:
    call = only_llm(make_span("chat gpt-4o", chat_attrs()))
    assert call.system_prompt == "You are a weather bot."
    assert call.user_input == "Weather in Paris?"
    assert call.input_messages is call.messages


def test_output_messages_text_tool_calls_and_finish_reason() -> None:
    call = only_llm(make_span("chat gpt-4o", chat_attrs()))
    assert call.response == "You're welcome."
    assert call.tool_calls == [ToolCall(name="log", arguments={"x": 1}, id="call_3")]
    assert call.finish_reasons == ["stop"]
    # the span-level attribute wins over per-message finish reasons
    call = only_llm(make_span("chat", chat_attrs(**{"gen_ai.response.finish_reasons": ["tool_call"]})))
    assert call.finish_reasons == ["tool_call"]


def test_structured_not_string_messages_are_read_too() -> None:
    attrs = chat_attrs(**{"gen_ai.input.messages": INPUT, "gen_ai.output.messages": OUTPUT})
    call = only_llm(make_span("chat", attrs))
    assert call.user_input == "Weather in Paris?"
    assert call.response == "You're welcome."


def test_tool_definitions() -> None:
    tools = only_llm(make_span("chat gpt-4o", chat_attrs())).available_tools
    assert [t.name for t in tools] == ["get_weather", "log"]
    assert tools[0].description == "Current weather"
    assert tools[0].parameters == TOOL_DEFS[0]["parameters"]
    assert tools[1].parameters is None


def test_system_instructions_without_messages() -> None:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.system_instructions": json.dumps(SYSTEM)}
    call = only_llm(make_span("chat", attrs))
    assert [(m.role, m.content) for m in call.messages] == [("system", "You are a weather bot.")]


def test_text_completion_and_generate_content_are_llm_calls() -> None:
    spans = [
        make_span("text_completion m", {"gen_ai.operation.name": "text_completion"}),
        make_span("generate_content gemini", {"gen_ai.operation.name": "generate_content"}),
        make_span("no op", {"gen_ai.system": "openai", "gen_ai.request.model": "gpt"}),
    ]
    trace = trace_of(*spans)
    assert len(trace.get_llm_calls()) == 3
    assert trace.metrics.llm_call_count == 3


def test_framework_provider_is_not_the_vendor() -> None:
    call = only_llm(make_span("chat", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "strands-agents"}))
    assert call.provider is None


def test_truncated_input_messages_degrade_without_error() -> None:
    raw = json.dumps(INPUT)[:57]
    call = only_llm(make_span("chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": raw}))
    assert isinstance(call.messages, list)
    assert call.user_input is None
    assert call.response is None and call.tool_calls == []


def test_truncated_tool_call_arguments_inside_output_stay_raw() -> None:
    output = [{"role": "assistant", "parts": [{"type": "tool_call", "name": "f", "arguments": '{"city": "Par'}]}]
    call = only_llm(make_span("chat", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(output)}))
    (tool_call,) = call.tool_calls
    assert tool_call.arguments == '{"city": "Par'
    assert tool_call.arguments_error


# --- 1.28-1.36 log events joined to the span ----------------------------------------------------


def _log(name: str, body: object, t: int, **attrs: object) -> SpanEvent:
    return SpanEvent(name, t, {"gen_ai.system": "openai", **attrs}, body=body, from_log=True)


def test_log_event_messages_joined_from_logs() -> None:
    span = make_span(
        "chat gpt-4o",
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 9},
    )
    span.logs = [
        _log("gen_ai.system.message", {"content": "Be brief."}, 1),
        _log("gen_ai.user.message", {"content": "Weather?"}, 2),
        _log(
            "gen_ai.assistant.message",
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ]
            },
            3,
        ),
        _log("gen_ai.tool.message", {"content": "18C", "id": "c1"}, 4),
        _log(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "tool_calls", "message": {"content": "It is 18C.", "role": "assistant"}},
            5,
        ),
    ]
    call = only_llm(span)
    assert [(m.role, m.content) for m in call.messages] == [
        ("system", "Be brief."),
        ("user", "Weather?"),
        ("assistant", ""),
        ("tool", "18C"),
    ]
    assistant = call.messages[2]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.tool_calls == [ToolCall(name="get_weather", arguments={"city": "Paris"}, id="c1")]
    assert isinstance(call.messages[3], ToolMessage) and call.messages[3].tool_call_id == "c1"
    assert call.response == "It is 18C."
    assert call.finish_reasons == ["tool_calls"]
    assert call.usage is not None and call.usage.input_tokens == 9 and call.usage.total_tokens == 9


def test_choice_event_with_tool_calls() -> None:
    span = make_span("chat", {"gen_ai.operation.name": "chat"})
    span.logs = [
        _log(
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {},
                "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            1,
        )
    ]
    call = only_llm(span)
    assert call.response is None
    assert call.tool_calls == [ToolCall(name="f", arguments={}, id="x")]


def test_details_log_event_with_structured_attributes_and_usage() -> None:
    span = make_span(
        "generate_content gemini-2.0-flash",
        {"gen_ai.operation.name": "generate_content", "gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 1},
    )
    span.logs = [
        SpanEvent(
            "gen_ai.client.inference.operation.details",
            1,
            {
                "gen_ai.input.messages": INPUT[:1],
                "gen_ai.output.messages": [{"role": "model", "parts": [{"type": "text", "content": "Sunny."}]}],
                "gen_ai.system_instructions": SYSTEM,
                "gen_ai.tool.definitions": TOOL_DEFS,
                "gen_ai.usage.input_tokens": 100,
                "gen_ai.usage.output_tokens": 20,
            },
            from_log=True,
        ),
        SpanEvent(
            "gen_ai.client.inference.operation.details",
            2,
            {"gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 5},
            from_log=True,
        ),
    ]
    call = only_llm(span)
    assert [(m.role, m.content) for m in call.messages] == [
        ("system", "You are a weather bot."),
        ("user", "Weather in Paris?"),
    ]
    assert call.response == "Sunny."
    assert [t.name for t in call.available_tools] == ["get_weather", "log"]
    # one details record per real call: summed, and preferred over the span's attributes
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (150, 25, 175)


# --- 1.26 span events ---------------------------------------------------------------------------


def test_span_events_content_prompt_and_completion() -> None:
    prompt = json.dumps([{"role": "system", "content": "Sys"}, {"role": "user", "content": "Hi there"}])
    completion = json.dumps([{"role": "assistant", "content": "Hello!"}])
    span = make_span(
        "chat gpt-3.5",
        {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-3.5", "gen_ai.response.finish_reasons": ["stop"]},
        events=[
            SpanEvent("gen_ai.content.prompt", 1, {"gen_ai.prompt": prompt}),
            SpanEvent("gen_ai.content.completion", 2, {"gen_ai.completion": completion}),
        ],
    )
    call = only_llm(span)
    assert [(m.role, m.content) for m in call.messages] == [("system", "Sys"), ("user", "Hi there")]
    assert call.response == "Hello!"
    assert call.finish_reasons == ["stop"]


def test_span_event_plain_text_prompt() -> None:
    span = make_span(
        "chat",
        {"gen_ai.operation.name": "chat"},
        events=[
            SpanEvent("gen_ai.content.prompt", 1, {"gen_ai.prompt": "just text"}),
            SpanEvent("gen_ai.content.completion", 2, {"gen_ai.completion": "answer text"}),
        ],
    )
    call = only_llm(span)
    assert call.user_input == "just text"
    assert call.response == "answer text"


# --- tools, agents, retrieval -------------------------------------------------------------------


def test_execute_tool_arguments_and_result() -> None:
    span = make_span(
        "execute_tool get_weather",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.description": "Weather lookup",
            "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            "gen_ai.tool.call.result": '{"temp_c": 18}',
        },
    )
    (tool,) = trace_of(span).get_tool_calls()
    assert isinstance(tool, ToolSpan)
    assert tool.name == "get_weather" and tool.call_id == "call_1" and tool.description == "Weather lookup"
    assert tool.arguments == {"city": "Paris"} and tool.arguments_error is None
    assert tool.result == {"temp_c": 18}


def test_execute_tool_named_only_by_span_name() -> None:
    (tool,) = trace_of(make_span("execute_tool lookup", {})).get_tool_calls()
    assert tool.name == "lookup"
    assert tool.arguments is None and tool.result is None


def test_truncated_tool_arguments_degrade_to_raw_string() -> None:
    raw = '{"city": "Pa'
    span = make_span("execute_tool f", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": raw})
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.arguments == raw
    assert tool.arguments_error
    span = make_span("execute_tool f", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.result": '{"t": 1'})
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.result == '{"t": 1'
    assert tool.arguments is None and tool.arguments_error is None


def test_truncated_retrieval_documents_degrade_without_error() -> None:
    span = make_span("retrieval", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": '[{"id": "d'})
    (retrieval,) = trace_of(span).get_retrievals()
    assert retrieval.documents == [] and retrieval.query is None


def test_tool_error_status() -> None:
    span = make_span(
        "execute_tool f",
        {"gen_ai.operation.name": "execute_tool", "error.type": "ValueError"},
        status=2,
        events=[SpanEvent("exception", 1, {"exception.type": "ValueError", "exception.message": "bad city"})],
    )
    trace = trace_of(span)
    (tool,) = trace.get_tool_calls()
    assert tool.has_error and tool.status == "ERROR"
    assert tool.error == "ValueError: bad city"
    assert trace.has_errors and trace.error_spans() == [tool]


def test_transfer_to_agent_tool_is_a_handoff() -> None:
    agent = make_span("invoke_agent root", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "root"})
    handoff = make_span(
        "execute_tool transfer_to_agent",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": '{"agent_name": "helper"}'},
        parent=agent,
    )
    trace = trace_of(agent, handoff)
    assert trace.get_tool_calls() == []
    assert isinstance(trace.spans[1], HandoffSpan)
    assert [(h.from_agent, h.to_agent) for h in trace.handoffs] == [("root", "helper")]


def test_invoke_agent_span_names_and_tools() -> None:
    agent = make_span(
        "invoke_agent planner",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.description": "Plans trips",
            "gen_ai.tool.definitions": json.dumps(TOOL_DEFS[:1]),
        },
    )
    trace = trace_of(agent)
    (view,) = trace.get_agents()
    assert isinstance(view, AgentSpan)
    assert view.name == "planner" and view.description == "Plans trips"
    assert [t.name for t in view.available_tools] == ["get_weather"]
    assert trace.agent_names == ["planner"]


def test_invoke_agent_input_output_messages_are_trace_io() -> None:
    agent = make_span(
        "invoke_agent",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "a",
            "gen_ai.input.messages": json.dumps(INPUT[:1]),
            "gen_ai.output.messages": json.dumps(OUTPUT),
        },
    )
    trace = trace_of(agent)
    assert trace.input == "Weather in Paris?"
    assert trace.output == "You're welcome."


def test_retrieval_span_documents() -> None:
    docs = [
        {"id": "d1", "score": 0.9, "content": "Paris is in France", "source": "wiki"},
        {"id": "d2", "score": "0.5"},
    ]
    span = make_span(
        "retrieval kb",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "kb",
            "gen_ai.retrieval.query.text": "where is paris",
            "gen_ai.retrieval.documents": json.dumps(docs),
        },
    )
    (retrieval,) = trace_of(span).get_retrievals()
    assert isinstance(retrieval, RetrieverSpan)
    assert retrieval.query == "where is paris"
    assert [(d.id, d.score, d.content) for d in retrieval.documents] == [
        ("d1", 0.9, "Paris is in France"),
        ("d2", 0.5, None),
    ]
    assert retrieval.documents[0].metadata == {"source": "wiki"}


def test_unrecognised_span_stays_generic_and_is_counted() -> None:
    plain = make_span("http GET /health", {"http.method": "GET"})
    call = make_span("chat", {"gen_ai.operation.name": "chat"}, parent=plain)
    trace = trace_of(plain, call)
    assert type(trace.spans[0]) is Span
    assert trace.span_count == 2 and len(trace.spans) == 2
    assert trace.root is trace.spans[0]
    assert OTelGenAI().span_kind(plain) is None


def test_embeddings_and_other_operations_are_not_llm_calls() -> None:
    trace = trace_of(
        make_span("embeddings m", {"gen_ai.operation.name": "embeddings"}),
        make_span("invoke_workflow w", {"gen_ai.operation.name": "invoke_workflow"}),
    )
    assert trace.get_llm_calls() == [] and trace.get_tool_calls() == []
    assert trace.span_count == 2
