"""OpenInference: `openinference.span.kind` and flattened, indexed attributes."""

from __future__ import annotations

import json

from evaluators.traces import (
    AgentSpan,
    AssistantMessage,
    HandoffSpan,
    LLMSpan,
    RetrieverSpan,
    Span,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpan,
    UserMessage,
)
from evaluators.traces.conventions import OpenInference
from tests.support.spanfactory import make_span, trace_of

IN = "llm.input_messages"
OUT = "llm.output_messages"


def llm(attrs: dict[str, object]) -> dict[str, object]:
    return {"openinference.span.kind": "LLM", **attrs}


def only_llm(*spans) -> LLMSpan:
    calls = trace_of(*spans).get_llm_calls()
    assert len(calls) == 1
    return calls[0]


def test_sparse_indices_sort_numerically_not_lexically() -> None:
    attrs = llm(
        {
            f"{IN}.10.message.role": "user",
            f"{IN}.10.message.content": "tenth",
            f"{IN}.0.message.role": "system",
            f"{IN}.0.message.content": "zeroth",
            f"{IN}.2.message.role": "user",
            f"{IN}.2.message.content": "second",
        }
    )
    call = only_llm(make_span("ChatCompletion", attrs))
    assert [m.content for m in call.messages] == ["zeroth", "second", "tenth"]
    assert [type(m) for m in call.messages] == [SystemMessage, UserMessage, UserMessage]
    assert call.system_prompt == "zeroth"
    assert call.user_input == "second"


def test_full_llm_span() -> None:
    schema = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather now",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    args = json.dumps({"city": "Paris"})
    attrs = llm(
        {
            "llm.model_name": "gpt-4o-mini",
            "llm.provider": "openai",
            "llm.token_count.prompt": 50,
            "llm.token_count.completion": 10,
            "llm.token_count.total": 60,
            "llm.cost.prompt": 0.001,
            "llm.cost.completion": 0.002,
            f"{IN}.0.message.role": "system",
            f"{IN}.0.message.content": "Be helpful.",
            f"{IN}.1.message.role": "user",
            f"{IN}.1.message.contents.0.message_content.type": "text",
            f"{IN}.1.message.contents.0.message_content.text": "Weather in",
            f"{IN}.1.message.contents.1.message_content.type": "image",
            f"{IN}.1.message.contents.1.message_content.image.image.url": "http://x/img.png",
            f"{IN}.1.message.contents.2.message_content.type": "text",
            f"{IN}.1.message.contents.2.message_content.text": "Paris?",
            f"{IN}.2.message.role": "assistant",
            f"{IN}.2.message.tool_calls.0.tool_call.id": "call_a",
            f"{IN}.2.message.tool_calls.0.tool_call.function.name": "get_weather",
            # double-encoded: a JSON string holding a JSON string
            f"{IN}.2.message.tool_calls.0.tool_call.function.arguments": json.dumps(args),
            f"{IN}.2.message.tool_calls.1.tool_call.id": "call_b",
            f"{IN}.2.message.tool_calls.1.tool_call.function.name": "get_time",
            f"{IN}.2.message.tool_calls.1.tool_call.function.arguments": '{"tz": "CET"}',
            f"{IN}.3.message.role": "tool",
            f"{IN}.3.message.content": "18C",
            f"{IN}.3.message.tool_call_id": "call_a",
            f"{IN}.3.message.name": "get_weather",
            f"{OUT}.0.message.role": "assistant",
            f"{OUT}.0.message.content": "It is 18C.",
            f"{OUT}.0.message.tool_calls.0.tool_call.id": "call_c",
            f"{OUT}.0.message.tool_calls.0.tool_call.function.name": "book",
            f"{OUT}.0.message.tool_calls.0.tool_call.function.arguments": '{"when": "now"}',
            "llm.finish_reason": "stop",
            "llm.tools.0.tool.json_schema": json.dumps(schema),
            "llm.tools.1.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_time"}}),
        }
    )
    call = only_llm(make_span("ChatCompletion", attrs, kind=3))
    assert call.model == "gpt-4o-mini" and call.provider == "openai"
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (50, 10, 60)
    assert call.metrics.cost == 0.001 + 0.002
    system, user, assistant, tool = call.messages
    assert isinstance(system, SystemMessage) and system.content == "Be helpful."
    assert isinstance(user, UserMessage) and user.content == "Weather in\nParis?"
    assert isinstance(assistant, AssistantMessage)
    assert assistant.tool_calls == [
        ToolCall(name="get_weather", arguments={"city": "Paris"}, id="call_a"),
        ToolCall(name="get_time", arguments={"tz": "CET"}, id="call_b"),
    ]
    assert isinstance(tool, ToolMessage)
    assert (tool.content, tool.tool_call_id, tool.name) == ("18C", "call_a", "get_weather")
    assert call.response == "It is 18C."
    assert call.tool_calls == [ToolCall(name="book", arguments={"when": "now"}, id="call_c")]
    assert call.finish_reasons == ["stop"]
    tools = call.available_tools
    assert [t.name for t in tools] == ["get_weather", "get_time"]
    assert tools[0].description == "Weather now"
    assert tools[0].parameters == schema["function"]["parameters"]


def test_total_cost_and_total_tokens_default() -> None:
    call = only_llm(
        make_span(
            "x",
            llm({"llm.token_count.prompt": "7", "llm.token_count.completion": 3, "llm.cost.total": 0.5}),
        )
    )
    assert call.usage is not None and call.usage.total_tokens == 10
    assert call.metrics.cost == 0.5
    assert trace_of(make_span("x", llm({"llm.cost.total": 0.25}))).metrics.cost == 0.25


def test_legacy_completions_prompts() -> None:
    call = only_llm(make_span("Completion", llm({"llm.prompts.0.prompt.text": "Say hi"})))
    assert [(m.role, m.content) for m in call.messages] == [("user", "Say hi")]


def test_truncated_tool_call_arguments_stay_raw() -> None:
    attrs = llm(
        {
            f"{OUT}.0.message.role": "assistant",
            f"{OUT}.0.message.tool_calls.0.tool_call.function.name": "f",
            f"{OUT}.0.message.tool_calls.0.tool_call.function.arguments": '{"a": [1, 2',
        }
    )
    (tool_call,) = only_llm(make_span("x", attrs)).tool_calls
    assert tool_call.arguments == '{"a": [1, 2'
    assert tool_call.arguments_error


def test_tool_span() -> None:
    span = make_span(
        "get_weather",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "tool.description": "Weather now",
            "tool_call.id": "call_a",
            "input.value": '{"city": "Paris"}',
            "input.mime_type": "application/json",
            "output.value": '{"temp": 18}',
        },
    )
    (tool,) = trace_of(span).get_tool_calls()
    assert isinstance(tool, ToolSpan) and not isinstance(tool, HandoffSpan)
    assert (tool.name, tool.call_id, tool.description) == ("get_weather", "call_a", "Weather now")
    assert tool.arguments == {"city": "Paris"}
    assert tool.result == {"temp": 18}


def test_tool_span_truncated_input_is_raw_with_error() -> None:
    span = make_span("t", {"openinference.span.kind": "TOOL", "input.value": '{"city": "Par'})
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.name == "t"
    assert tool.arguments == '{"city": "Par'
    assert tool.arguments_error


def test_adk_tool_result_wrapper_is_unwrapped() -> None:
    span = make_span(
        "execute_tool f",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "f",
            "output.value": json.dumps({"id": "1", "name": "f", "response": {"ok": True}}),
        },
    )
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.result == {"ok": True}


def test_retriever_span_documents() -> None:
    span = make_span(
        "retrieve",
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "where is paris",
            "retrieval.documents.0.document.id": "d1",
            "retrieval.documents.0.document.content": "Paris is in France",
            "retrieval.documents.0.document.score": 0.93,
            "retrieval.documents.0.document.metadata": json.dumps({"source": "wiki", "page": 3}),
            "retrieval.documents.1.document.content": "Second doc",
            "retrieval.documents.1.document.metadata": "{'python': 'repr'}",  # not JSON
            "retrieval.documents.11.document.content": "Twelfth",
        },
    )
    (retrieval,) = trace_of(span).get_retrievals()
    assert isinstance(retrieval, RetrieverSpan)
    assert retrieval.query == "where is paris"
    docs = retrieval.documents
    assert [d.content for d in docs] == ["Paris is in France", "Second doc", "Twelfth"]
    assert (docs[0].id, docs[0].score, docs[0].metadata) == ("d1", 0.93, {"source": "wiki", "page": 3})
    assert docs[1].id is None and docs[1].score is None and docs[1].metadata is None


def test_agent_span_named_by_span_name_and_owns_its_steps() -> None:
    agent = make_span("Weather Agent", {"openinference.span.kind": "AGENT"})
    call = make_span("response", llm({f"{OUT}.0.message.content": "hi"}), parent=agent)
    tool = make_span("get_weather", {"openinference.span.kind": "TOOL", "tool.name": "get_weather"}, parent=agent)
    trace = trace_of(agent, call, tool)
    (agent_view,) = trace.get_agents()
    assert isinstance(agent_view, AgentSpan)
    assert agent_view.name == "Weather Agent"
    assert trace.agent_names == ["Weather Agent"]
    (agent_trace,) = trace.agent_traces()
    assert agent_trace.agent_name == "Weather Agent"
    assert [s.span_id for s in agent_trace.llm_steps] == [call.span_id]
    assert agent_trace.tool_names_used == ["get_weather"]


def test_agent_name_attribute_and_bracketed_names() -> None:
    named = make_span("ignored", {"openinference.span.kind": "AGENT", "agent.name": "triage"})
    bracket = make_span("agent_run [billing]", {"openinference.span.kind": "AGENT"})
    assert [a.name for a in trace_of(named, bracket).get_agents()] == ["triage", "billing"]


def test_openai_agents_handoff_tool_span() -> None:
    triage = make_span("Triage Agent", {"openinference.span.kind": "AGENT", "graph.node.id": "Triage Agent"})
    handoff = make_span(
        "handoff to Billing Agent",
        {"openinference.span.kind": "TOOL", "input.value": "Triage Agent", "output.value": "Billing Agent"},
        parent=triage,
    )
    billing = make_span("Billing Agent", {"openinference.span.kind": "AGENT"})
    real_tool = make_span("lookup", {"openinference.span.kind": "TOOL"}, parent=billing)
    trace = trace_of(triage, handoff, billing, real_tool)
    assert isinstance(trace.spans[1], HandoffSpan)
    assert [t.name for t in trace.get_tool_calls()] == ["lookup"]
    assert [(h.from_agent, h.to_agent, h.span_id) for h in trace.handoffs] == [
        ("Triage Agent", "Billing Agent", handoff.span_id)
    ]
    assert trace.metrics.tool_call_count == 1
    assert trace.metrics.agent_count == 2


def test_handoff_target_from_span_name_when_no_output() -> None:
    span = make_span("handoff to Helper", {"openinference.span.kind": "TOOL"})
    assert OpenInference().handoff_target(span) == "Helper"


def test_chain_root_input_output_values_are_trace_io() -> None:
    root = make_span(
        "Agent workflow",
        {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"messages": [{"role": "user", "content": "Book a table"}]}),
            "output.value": "Booked for 8pm.",
        },
    )
    call = make_span("llm", llm({f"{IN}.0.message.role": "user", f"{IN}.0.message.content": "inner"}), parent=root)
    trace = trace_of(root, call)
    assert type(trace.root) is Span
    assert trace.input == "Book a table"
    assert trace.output == "Booked for 8pm."


def test_unknown_kind_is_generic_span() -> None:
    trace = trace_of(make_span("guard", {"openinference.span.kind": "GUARDRAIL"}))
    assert type(trace.spans[0]) is Span
    assert trace.span_count == 1


OPENAI_AGENTS = "openinference.instrumentation.openai_agents"


def test_openai_agents_workflow_root_is_the_runs_envelope_not_an_agent() -> None:
    root = make_span("Agent workflow", {"openinference.span.kind": "AGENT"}, scope=OPENAI_AGENTS)
    chain = make_span("Agent workflow", {"openinference.span.kind": "CHAIN"}, parent=root, scope=OPENAI_AGENTS)
    agent = make_span(
        "triage_agent",
        {"openinference.span.kind": "AGENT", "agent.name": "triage_agent", "graph.node.id": "triage_agent"},
        parent=chain,
        scope=OPENAI_AGENTS,
    )
    call = make_span("response", llm({f"{OUT}.0.message.content": "hi"}), parent=agent, scope=OPENAI_AGENTS)
    trace = trace_of(root, chain, agent, call)
    assert type(trace.root) is Span
    assert [a.name for a in trace.get_agents()] == ["triage_agent"]
    assert [a.agent_name for a in trace.agent_traces()] == ["triage_agent"]
    assert trace.metrics.agent_count == 1
    assert trace.output == "hi"


def test_failed_llm_span_model_from_invocation_parameters() -> None:
    span = make_span(
        "ChatCompletion",
        llm({"llm.invocation_parameters": json.dumps({"model": "gpt-4o-mini", "temperature": 0})}),
        status=2,
        status_message="InternalServerError",
    )
    call = only_llm(span)
    assert call.model == "gpt-4o-mini"
    named = only_llm(
        make_span("c", llm({"llm.model_name": "gpt-4o", "llm.invocation_parameters": "{}", "llm.token_count.total": 5}))
    )
    assert named.model == "gpt-4o"


def _langchain_tool(name: str, arguments: str, content: str, call_id: str, **extra: object):
    message = {
        "type": "tool",
        "data": {"content": content, "type": "tool", "name": name, "tool_call_id": call_id, "status": "success"},
    }
    return make_span(
        name,
        {
            "openinference.span.kind": "TOOL",
            "tool.name": name,
            "input.value": arguments,
            "output.value": json.dumps(message),
            "output.mime_type": "application/json",
            **extra,
        },
    )


def test_langchain_tool_message_result_and_plain_text_argument() -> None:
    weather = _langchain_tool("get_weather", "Tokyo", json.dumps({"city": "Tokyo", "temp": 24}), "call_1")
    outfit = _langchain_tool(
        "suggest_outfit",
        json.dumps({"temperature_c": 24}),
        "T-shirt.",
        "call_2",
        **{"input.mime_type": "application/json"},
    )
    first, second = trace_of(weather, outfit).get_tool_calls()
    assert (first.arguments, first.arguments_error) == ("Tokyo", None)
    assert first.result == {"city": "Tokyo", "temp": 24}
    assert first.call_id == "call_1"
    assert (second.arguments, second.result, second.call_id) == ({"temperature_c": 24}, "T-shirt.", "call_2")
