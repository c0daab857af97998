"""OpenInference on the OpenAI Agents SDK with a Chat Completions model: what its `generation` and TOOL spans
carry besides the flattened messages (the streamed output in `output.value`, the tool schema in `tool.parameters`)."""

from __future__ import annotations

import json

from evaluators.traces import LLMSpan, ToolCall, ToolSpan
from tests.support.spanfactory import make_span, trace_of

SCOPE = "openinference.instrumentation.openai_agents"
SCHEMA = {
    "properties": {"city": {"title": "City", "type": "string"}},
    "required": ["city"],
    "title": "get_weather_args",
    "type": "object",
    "additionalProperties": False,
}


def _response(output: list[dict], **fields: object) -> str:
    """`output.value` of a streamed Chat Completions call: `[final_response.model_dump()]` (trimmed)."""
    body = {
        "id": "__fake_id__",
        "object": "response",
        "model": "gpt-4.1",
        "output": output,
        "tools": [],
        "status": None,
    }
    return json.dumps([{**body, **fields}])


def _generation(output_value: str, **attrs: object) -> LLMSpan:
    span = make_span(
        "generation",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",  # what makes it a model call (no tokens when streamed)
            "llm.input_messages.0.message.content": "Hi",
            "output.value": output_value,
            "output.mime_type": "application/json",
            **attrs,
        },
        scope=SCOPE,
    )
    (call,) = trace_of(span).get_llm_calls()
    return call


def test_streamed_output_is_read_from_the_response_object_in_output_value() -> None:
    call = _generation(
        _response(
            [
                {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
                },
            ]
        )
    )
    assert call.tool_calls == [ToolCall(name="get_weather", arguments={"city": "Oslo"}, id="call_1")]
    assert call.response == "Checking."
    assert call.finish_reasons == []  # status null: nothing recorded, nothing invented


def test_a_response_status_gives_the_finish_reason_openinference_would() -> None:
    text = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}]
    assert _generation(_response(text, status="completed")).finish_reasons == ["stop"]
    cut = _generation(_response(text, status="incomplete", incomplete_details={"reason": "max_output_tokens"}))
    assert cut.finish_reasons == ["length"]


def test_flattened_output_messages_win_over_output_value() -> None:
    call = _generation(
        _response([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "raw"}]}]),
        **{"llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "flat"},
    )
    assert call.response == "flat"


def test_output_value_that_is_not_a_response_object_gives_no_output() -> None:
    chat = json.dumps([{"role": "assistant", "content": "hello"}])  # the non-streamed shape, already flattened
    assert _generation(chat).response is None
    assert _generation(json.dumps({"object": "chat.completion", "output": []})).response is None


def _tool(parameters: object) -> ToolSpan:
    span = make_span(
        "get_weather",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "tool.parameters": json.dumps(parameters),
            "input.value": '{"city": "Oslo"}',
        },
        scope=SCOPE,
    )
    (tool,) = trace_of(span).get_tool_calls()
    return tool


def test_tool_parameters_is_the_declared_schema_only_when_it_is_one() -> None:
    assert _tool(SCHEMA).parameters == SCHEMA
    # OpenInference on ADK records the call's arguments under tool.parameters: not a schema
    assert _tool({"city": "Paris"}).parameters is None
    assert _tool({"agent_name": "flight_agent"}).parameters is None
