"""Vercel AI SDK (`ai.*`): outer generateText/streamText spans, per-call do* spans, `ai.toolCall`."""

from __future__ import annotations

import json

from evaluators.traces import (
    AssistantMessage,
    LLMSpan,
    Span,
    SystemMessage,
    ToolMessage,
    ToolSpan,
    UserMessage,
)
from evaluators.traces import conventions as conv
from evaluators.traces.conventions.base import SpanKind
from evaluators.traces.conventions.vercel import VercelAI
from tests.support.spanfactory import make_span, trace_of

CLIENT = 3
SYSTEM = "You are a weather bot."
QUESTION = "What is the weather in Paris?"
ANSWER = "It is 18°C and sunny in Paris."
TOOL_DEF = {
    "type": "function",
    "name": "getWeather",
    "description": "Get the weather for a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def base_attrs(op: str, **extra: object) -> dict:
    return {
        "operation.name": f"{op} weather-fn",
        "ai.operationId": op,
        "ai.model.id": "gpt-4o-mini",
        "ai.model.provider": "openai.chat",
        "ai.telemetry.functionId": "weather-fn",
        "ai.settings.maxRetries": 2,
        "resource.name": "weather-fn",
        **extra,
    }


def do_generate_attrs(messages: list, **extra: object) -> dict:
    return base_attrs(
        "ai.generateText.doGenerate",
        **{
            "ai.prompt.messages": json.dumps(messages),
            "ai.prompt.tools": [json.dumps(TOOL_DEF)],
            "ai.prompt.toolChoice": '{"type":"auto"}',
            "ai.response.model": "gpt-4o-mini-2024-07-18",
            "ai.response.id": "chatcmpl-1",
            "gen_ai.system": "openai.chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            **extra,
        },
    )


FIRST_MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
]
SECOND_MESSAGES = [
    *FIRST_MESSAGES,
    {
        "role": "assistant",
        "content": [
            {"type": "tool-call", "toolCallId": "call_1", "toolName": "getWeather", "input": {"city": "Paris"}}
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "call_1",
                "toolName": "getWeather",
                "output": {"type": "json", "value": {"temperature": 18, "condition": "sunny"}},
            }
        ],
    },
]


def v5_trace():
    """generateText with one tool round trip (AI SDK v5 spellings)."""
    root = make_span(
        "ai.generateText",
        base_attrs(
            "ai.generateText",
            **{
                "ai.prompt": json.dumps({"system": SYSTEM, "prompt": QUESTION}),
                "ai.response.text": ANSWER,
                "ai.response.finishReason": "stop",
                "ai.usage.inputTokens": 150,
                "ai.usage.outputTokens": 30,
                "ai.usage.totalTokens": 180,
            },
        ),
        scope="ai",
    )
    first = make_span(
        "ai.generateText.doGenerate",
        do_generate_attrs(
            FIRST_MESSAGES,
            **{
                "ai.response.text": "",
                # v5 writes `input` as a JSON string inside the JSON: double encoded.
                "ai.response.toolCalls": json.dumps(
                    [{"toolCallId": "call_1", "toolName": "getWeather", "input": json.dumps({"city": "Paris"})}]
                ),
                "ai.response.finishReason": "tool-calls",
                "gen_ai.response.finish_reasons": ["tool-calls"],
                "ai.usage.promptTokens": 60,
                "ai.usage.completionTokens": 15,
                "gen_ai.usage.input_tokens": 60,
                "gen_ai.usage.output_tokens": 15,
            },
        ),
        parent=root,
        kind=CLIENT,
        scope="ai",
    )
    tool = make_span(
        "ai.toolCall",
        {
            "operation.name": "ai.toolCall weather-fn",
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "getWeather",
            "ai.toolCall.id": "call_1",
            "ai.toolCall.args": '{"city":"Paris"}',
            "ai.toolCall.result": '{"temperature":18,"condition":"sunny"}',
        },
        parent=root,
        scope="ai",
    )
    second = make_span(
        "ai.generateText.doGenerate",
        do_generate_attrs(
            SECOND_MESSAGES,
            **{
                "ai.response.text": ANSWER,
                "ai.response.finishReason": "stop",
                "gen_ai.response.finish_reasons": ["stop"],
                "ai.usage.promptTokens": 90,
                "ai.usage.completionTokens": 15,
                "gen_ai.usage.input_tokens": 90,
                "gen_ai.usage.output_tokens": 15,
            },
        ),
        parent=root,
        kind=CLIENT,
        scope="ai",
    )
    return trace_of(root, first, tool, second)


def test_outer_span_is_not_a_call_and_usage_counts_once():
    trace = v5_trace()
    calls = trace.get_llm_calls()
    assert [c.span_name for c in calls] == ["ai.generateText.doGenerate"] * 2
    assert not isinstance(trace.root, LLMSpan) and type(trace.root) is Span
    usage = trace.metrics.token_usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (150, 30, 180)
    assert trace.metrics.llm_call_count == 2
    assert trace.agent_names == []


def test_model_provider_and_first_call_output():
    first, _ = v5_trace().get_llm_calls()
    assert first.model == "gpt-4o-mini"
    assert first.response_model == "gpt-4o-mini-2024-07-18"
    assert first.provider == "openai"
    assert first.response is None
    assert first.finish_reasons == ["tool-calls"]
    [call] = first.tool_calls
    assert (call.name, call.id, call.arguments, call.arguments_error) == (
        "getWeather",
        "call_1",
        {"city": "Paris"},
        None,
    )
    assert [type(m) for m in first.messages] == [SystemMessage, UserMessage]
    assert first.messages[1].content == QUESTION


def test_available_tools_from_prompt_tools():
    first, _ = v5_trace().get_llm_calls()
    [tool] = first.available_tools
    assert tool.name == "getWeather"
    assert tool.description == "Get the weather for a city"
    assert tool.parameters["required"] == ["city"]


def test_second_call_messages_with_tool_results():
    _, second = v5_trace().get_llm_calls()
    messages = second.messages
    assert [type(m) for m in messages] == [SystemMessage, UserMessage, AssistantMessage, ToolMessage]
    assert messages[0].content == SYSTEM
    assistant = messages[2]
    assert [(c.name, c.id, c.arguments) for c in assistant.tool_calls] == [("getWeather", "call_1", {"city": "Paris"})]
    result = messages[3]
    assert (result.role, result.tool_call_id, result.name) == ("tool", "call_1", "getWeather")
    assert json.loads(result.content) == {"temperature": 18, "condition": "sunny"}
    assert second.response == ANSWER
    assert second.finish_reasons == ["stop"]
    assert second.tool_calls == []


def test_tool_call_span():
    [tool] = v5_trace().get_tool_calls()
    assert isinstance(tool, ToolSpan)
    assert (tool.name, tool.call_id) == ("getWeather", "call_1")
    assert tool.arguments == {"city": "Paris"}
    assert tool.result == {"temperature": 18, "condition": "sunny"}


def test_trace_input_and_output_from_outer_span():
    trace = v5_trace()
    assert trace.input == QUESTION
    assert trace.output == ANSWER


def test_outer_prompt_with_messages_takes_last_user_text():
    prompt = {
        "system": SYSTEM,
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        ],
    }
    root = make_span(
        "ai.streamText",
        base_attrs("ai.streamText", **{"ai.prompt": json.dumps(prompt), "ai.response.text": ANSWER}),
    )
    trace = trace_of(root)
    assert trace.input == QUESTION
    assert trace.output == ANSWER


def test_v3_v4_spellings_and_gen_ai_usage_fallback():
    """`ai.result.*`, `ai.finishReason`, `args` / `result` parts, usage only in gen_ai.usage.*."""
    messages = [
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool-call", "toolCallId": "c9", "toolName": "getWeather", "args": {"city": "Paris"}},
            ],
        },
        {
            "role": "tool",
            "content": [{"type": "tool-result", "toolCallId": "c9", "toolName": "getWeather", "result": "sunny"}],
        },
    ]
    root = make_span(
        "ai.streamText",
        {
            "ai.operationId": "ai.streamText",
            "ai.model.id": "gpt-4-turbo",
            "ai.prompt": json.dumps({"prompt": QUESTION}),
            "ai.result.text": ANSWER,
        },
    )
    call = make_span(
        "ai.streamText.doStream",
        {
            "ai.operationId": "ai.streamText.doStream",
            "ai.model.id": "gpt-4-turbo",
            "ai.model.provider": "openai.chat",
            "ai.prompt.format": "messages",
            "ai.prompt.messages": json.dumps(messages),
            "ai.result.text": ANSWER,
            "ai.result.toolCalls": json.dumps(
                [{"toolCallType": "function", "toolCallId": "c10", "toolName": "getTime", "args": {"tz": "CET"}}]
            ),
            "ai.finishReason": "tool-calls",
            "gen_ai.system": "openai.chat",
            "gen_ai.request.model": "gpt-4-turbo",
            "gen_ai.usage.prompt_tokens": 40,
            "gen_ai.usage.completion_tokens": 12,
        },
        parent=root,
        kind=CLIENT,
    )
    trace = trace_of(root, call)
    [llm] = trace.get_llm_calls()
    assert [m.role for m in llm.messages] == ["user", "assistant", "tool"]
    assert llm.messages[1].content == "Let me check."
    [asked] = llm.messages[1].tool_calls
    assert (asked.name, asked.id, asked.arguments) == ("getWeather", "c9", {"city": "Paris"})
    assert (llm.messages[2].tool_call_id, llm.messages[2].content) == ("c9", "sunny")
    assert llm.response == ANSWER
    assert [(c.name, c.arguments) for c in llm.tool_calls] == [("getTime", {"tz": "CET"})]
    assert llm.finish_reasons == ["tool-calls"]
    usage = trace.metrics.token_usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (40, 12, 52)
    assert trace.input == QUESTION


def test_detects_by_span_name_without_operation_id():
    span = make_span("ai.generateText.doGenerate", {"gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"})
    assert VercelAI().detect(span)
    assert conv.first("span_kind", span, conv.detect(span)) == SpanKind.LLM
    outer = make_span("ai.generateText", {"gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"})
    assert conv.first("span_kind", outer, conv.detect(outer)) == SpanKind.OTHER


def test_embedding_spans_are_not_llm_calls():
    root = make_span("ai.embed", base_attrs("ai.embed", **{"ai.value": "sunny", "ai.usage.tokens": 3}))
    inner = make_span(
        "ai.embed.doEmbed", base_attrs("ai.embed.doEmbed", **{"ai.values": ["sunny"]}), parent=root, kind=CLIENT
    )
    trace = trace_of(root, inner)
    assert trace.get_llm_calls() == []
    assert trace.metrics.token_usage.total_tokens == 0
    for record in (root, inner):
        assert conv.first("span_kind", record, conv.detect(record)) == SpanKind.EMBEDDING


def test_generate_object_output():
    obj = '{"city":"Paris","temperature":18}'
    root = make_span("ai.generateObject", base_attrs("ai.generateObject", **{"ai.response.object": obj}))
    call = make_span(
        "ai.generateObject.doGenerate",
        base_attrs(
            "ai.generateObject.doGenerate",
            **{
                "ai.response.object": obj,
                "ai.response.finishReason": "stop",
                "ai.response.model": "gpt-4o-mini-2024-07-18",
                "ai.usage.promptTokens": 9,
            },
        ),
        parent=root,
    )
    trace = trace_of(root, call)
    [llm] = trace.get_llm_calls()
    assert (llm.model, llm.provider) == ("gpt-4o-mini", "openai")  # no gen_ai.* here: from ai.model.*
    assert llm.response_model == "gpt-4o-mini-2024-07-18"
    assert llm.response == obj
    assert json.loads(trace.output) == {"city": "Paris", "temperature": 18}
    assert trace.metrics.token_usage.input_tokens == 9


def test_truncated_json_degrades_without_exceptions():
    truncated_messages = json.dumps(FIRST_MESSAGES)[:40]
    root = make_span("ai.generateText", base_attrs("ai.generateText", **{"ai.prompt": '{"prompt": "What is the wea'}))
    call = make_span(
        "ai.generateText.doGenerate",
        base_attrs(
            "ai.generateText.doGenerate",
            **{
                "ai.prompt.messages": truncated_messages,
                "ai.prompt.tools": ['{"type":"function","name":"getWea'],
                "ai.response.text": "partial",
                "ai.response.toolCalls": '[{"toolCallId":"call_1","toolName":"getWea',
            },
        ),
        parent=root,
    )
    tool = make_span(
        "ai.toolCall",
        {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "getWeather", "ai.toolCall.args": '{"city": "Par'},
        parent=root,
    )
    vercel = VercelAI()
    assert vercel.input_messages(call) is None
    assert vercel.available_tools(call) == []
    out = vercel.output(call)
    assert (out.text, out.tool_calls) == ("partial", [])
    assert vercel.io(root) == ('{"prompt": "What is the wea', None)

    trace = trace_of(root, call, tool)
    [llm] = trace.get_llm_calls()
    assert llm.messages == [] and llm.response == "partial"
    [tool_view] = trace.get_tool_calls()
    assert tool_view.arguments == '{"city": "Par'
    assert tool_view.arguments_error
    assert "What is the wea" in trace.input


def test_non_vercel_spans_are_not_detected():
    vercel = VercelAI()
    assert not vercel.detect(make_span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}))
    assert not vercel.detect(make_span("openai.chat", {"llm.request.type": "chat"}))
    assert not vercel.detect(make_span("ai.custom", {}))
