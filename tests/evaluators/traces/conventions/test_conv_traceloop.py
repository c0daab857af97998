"""OpenLLMetry / Traceloop: legacy indexed `gen_ai.prompt.N.*` content and decorator entities."""

from __future__ import annotations

import json

from evaluators.traces import (
    AgentSpan,
    AssistantMessage,
    LLMSpan,
    RetrieverSpan,
    Span,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from evaluators.traces.conventions import Traceloop
from tests.support.spanfactory import make_span, trace_of


def chat(attrs: dict[str, object]) -> dict[str, object]:
    return {"llm.request.type": "chat", "llm.vendor": "openai", "llm.request.model": "gpt-4o", **attrs}


def only_llm(*spans) -> LLMSpan:
    calls = trace_of(*spans).get_llm_calls()
    assert len(calls) == 1
    return calls[0]


def test_legacy_prompt_and_completion_attributes() -> None:
    attrs = chat(
        {
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "You help with weather.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Weather in Paris?",
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.tool_calls.0.id": "call_1",
            "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
            "gen_ai.prompt.2.tool_calls.0.arguments": '{"city": "Paris"}',
            "gen_ai.prompt.2.tool_calls.1.id": "call_2",
            "gen_ai.prompt.2.tool_calls.1.name": "get_time",
            "gen_ai.prompt.2.tool_calls.1.arguments": "{}",
            "gen_ai.prompt.3.role": "tool",
            "gen_ai.prompt.3.content": "18C",
            "gen_ai.prompt.3.tool_call_id": "call_1",
            "gen_ai.prompt.10.role": "user",
            "gen_ai.prompt.10.content": "And tomorrow?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Rain tomorrow.",
            "gen_ai.completion.0.finish_reason": "stop",
        }
    )
    call = only_llm(make_span("openai.chat", attrs, kind=3))
    assert call.model == "gpt-4o" and call.provider == "openai"
    assert [type(m) for m in call.messages] == [
        SystemMessage,
        UserMessage,
        AssistantMessage,
        ToolMessage,
        UserMessage,
    ]
    system, user, assistant, tool, later = call.messages
    assert system.content == "You help with weather."
    assert user.content == "Weather in Paris?"
    assert assistant.tool_calls == [
        ToolCall(name="get_weather", arguments={"city": "Paris"}, id="call_1"),
        ToolCall(name="get_time", arguments={}, id="call_2"),
    ]
    assert (tool.content, tool.tool_call_id) == ("18C", "call_1")
    assert later.content == "And tomorrow?"  # index 10 sorts after 3
    assert call.response == "Rain tomorrow."
    assert call.finish_reasons == ["stop"]


def test_completion_with_tool_calls_and_no_text() -> None:
    attrs = chat(
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "hi",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": "c9",
            "gen_ai.completion.0.tool_calls.0.name": "lookup",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"q": "x"}',
        }
    )
    call = only_llm(make_span("openai.chat", attrs))
    assert call.response is None
    assert call.tool_calls == [ToolCall(name="lookup", arguments={"q": "x"}, id="c9")]
    assert call.finish_reasons == ["tool_calls"]


def test_list_content_is_json_dumped_parts() -> None:
    content = json.dumps([{"type": "text", "text": "Look at"}, {"type": "image_url", "image_url": {"url": "u"}}])
    call = only_llm(make_span("c", chat({"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": content})))
    assert call.user_input == "Look at"


def test_pre_2024_llm_prompts_prefix() -> None:
    attrs = chat(
        {
            "llm.prompts.0.role": "user",
            "llm.prompts.0.content": "old style",
            "llm.completions.0.role": "assistant",
            "llm.completions.0.content": "old answer",
        }
    )
    call = only_llm(make_span("openai.chat", attrs))
    assert call.user_input == "old style"
    assert call.response == "old answer"


def test_request_functions_are_available_tools() -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}}
    attrs = chat(
        {
            "llm.request.functions.0.name": "get_weather",
            "llm.request.functions.0.description": "Weather",
            "llm.request.functions.0.parameters": json.dumps(params),
            "llm.request.functions.1.name": "get_time",
        }
    )
    tools = only_llm(make_span("openai.chat", attrs)).available_tools
    assert [(t.name, t.description, t.parameters) for t in tools] == [
        ("get_weather", "Weather", params),
        ("get_time", None, None),
    ]


def test_usage_with_llm_usage_total_tokens() -> None:
    # TL writes gen_ai.usage.prompt/completion_tokens beside llm.usage.total_tokens
    attrs = chat(
        {
            "gen_ai.usage.prompt_tokens": 40,
            "gen_ai.usage.completion_tokens": 12,
            "llm.usage.total_tokens": 55,  # may include extras; kept as reported
        }
    )
    call = only_llm(make_span("openai.chat", attrs))
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (40, 12, 55)
    # the pre-2024 llm.usage.* spelling
    old = chat({"llm.usage.prompt_tokens": 3, "llm.usage.completion_tokens": 4, "llm.usage.total_tokens": 7})
    usage = only_llm(make_span("openai.chat", old)).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (3, 4, 7)
    # no total: computed
    new = chat({"gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 6})
    usage = only_llm(make_span("openai.chat", new)).usage
    assert usage is not None and usage.total_tokens == 11


def test_tool_decorator_kwargs_envelope() -> None:
    span = make_span(
        "get_weather.tool",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "get_weather",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"city": "Paris"}}),
            "traceloop.entity.output": json.dumps({"temperature_c": 18}),
        },
    )
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.name == "get_weather"
    assert tool.arguments == {"city": "Paris"}
    assert tool.result == {"temperature_c": 18}


def test_tool_decorator_positional_args() -> None:
    single = make_span(
        "f.tool",
        {"traceloop.span.kind": "tool", "traceloop.entity.input": json.dumps({"args": [{"q": 1}], "kwargs": {}})},
    )
    mixed = make_span(
        "g.tool",
        {"traceloop.span.kind": "tool", "traceloop.entity.input": json.dumps({"args": ["a", 2], "kwargs": {"k": 3}})},
    )
    first, second = trace_of(single, mixed).get_tool_calls()
    assert first.name == "f" and first.arguments == {"q": 1}
    assert second.name == "g" and second.arguments == {"args": ["a", 2], "k": 3}


def test_tool_output_json_string_result() -> None:
    span = make_span("s.tool", {"traceloop.span.kind": "tool", "traceloop.entity.output": '"Bring an umbrella."'})
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.result == "Bring an umbrella."


def test_truncated_tool_input_degrades_to_raw() -> None:
    raw = '{"args": [], "kwargs": {"city": "Pa'
    span = make_span("f.tool", {"traceloop.span.kind": "tool", "traceloop.entity.input": raw})
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.arguments == raw
    assert tool.arguments_error


def test_agent_with_decorator_envelope_is_trace_io() -> None:
    agent = make_span(
        "assistant_agent.agent",
        {
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": "assistant_agent",
            "traceloop.entity.input": json.dumps({"args": ["What's the weather?"], "kwargs": {}}),
            "traceloop.entity.output": json.dumps("Sunny and 20C."),
        },
    )
    call = make_span(
        "openai.chat",
        chat({"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "inner prompt"}),
        parent=agent,
    )
    tool = make_span("t.tool", {"traceloop.span.kind": "tool", "traceloop.entity.name": "t"}, parent=agent)
    trace = trace_of(agent, call, tool)
    (agent_view,) = trace.get_agents()
    assert isinstance(agent_view, AgentSpan) and agent_view.name == "assistant_agent"
    assert trace.input == "What's the weather?"
    assert trace.output == "Sunny and 20C."
    (agent_trace,) = trace.agent_traces()
    assert agent_trace.input == "What's the weather?"
    assert agent_trace.output == "Sunny and 20C."
    assert agent_trace.tool_names_used == ["t"]


def test_workflow_root_with_kwargs_envelope() -> None:
    root = make_span(
        "run.workflow",
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "run",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"question": "Why is the sky blue?"}}),
            "traceloop.entity.output": json.dumps({"answer": "Rayleigh scattering."}),
        },
    )
    trace = trace_of(root)
    assert type(trace.root) is Span
    assert trace.input == "Why is the sky blue?"
    assert trace.output == "Rayleigh scattering."


def test_retriever_task() -> None:
    span = make_span(
        "retriever.task",
        {
            "traceloop.span.kind": "task",
            "gen_ai.operation.name": "vector_db_retrieve",
            "traceloop.entity.input": json.dumps({"query": "paris"}),
            "traceloop.entity.output": json.dumps(
                [{"page_content": "Paris is in France", "metadata": {"src": "w"}, "score": 0.8}, "raw doc"]
            ),
        },
    )
    (retrieval,) = trace_of(span).get_retrievals()
    assert isinstance(retrieval, RetrieverSpan)
    assert retrieval.query == "paris"
    assert [(d.content, d.score, d.metadata) for d in retrieval.documents] == [
        ("Paris is in France", 0.8, {"src": "w"}),
        ("raw doc", None, None),
    ]


def test_embedding_and_task_spans_are_not_llm_calls() -> None:
    trace = trace_of(
        make_span("openai.embeddings", {"llm.request.type": "embedding"}),
        make_span("step.task", {"traceloop.span.kind": "task"}),
    )
    assert trace.get_llm_calls() == []
    assert trace.span_count == 2


def test_detection_markers() -> None:
    conv = Traceloop()
    assert conv.detect(make_span("x", {"gen_ai.prompt.0.content": "hi"}))
    assert conv.detect(make_span("x", {"llm.prompts.3.content": "hi"}))
    assert conv.detect(make_span("x", {"traceloop.entity.name": "e"}))
    assert not conv.detect(make_span("x", {"gen_ai.prompt": "hi", "gen_ai.input.messages": "[]"}))
