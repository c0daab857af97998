"""Realistic synthetic GenAI traces as OTLP protobuf, shared by the benchmarks and load tests.

One agent turn = agent span → LLM call → tool call → LLM call ..., with message content in
OTel GenAI attributes (JSON strings in the parts shape), about 900 bytes per span.
"""

from __future__ import annotations

import json
import os

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

MS = 1_000_000


def _kv(key: str, value: object) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def _span(trace_id: bytes, span_id: bytes, parent: bytes, name: str, start: int, end: int, attrs: dict) -> Span:
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=end,
    )
    span.attributes.extend(_kv(k, v) for k, v in attrs.items())
    return span


def _llm_attrs(step: int, tool: str) -> dict:
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": "You are a helpful travel assistant."}]},
        {
            "role": "user",
            "parts": [{"type": "text", "content": f"Plan step {step}: what is the weather in Paris?"}],
        },
    ]
    output = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": f"call_{step}", "name": tool, "arguments": {"city": "Paris"}}],
            "finish_reason": "tool_call",
        }
    ]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.input_tokens": 120 + step,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(output),
        "gen_ai.agent.name": "travel_agent",
    }


def agent_trace_spans(trace_id: bytes, steps: int, start: int) -> list[Span]:
    """agent → `steps` × (LLM call, tool call) → final retrieval; 2·steps + 2 spans."""
    root_id = os.urandom(8)
    spans: list[Span] = []
    t = start
    for step in range(steps):
        tool = "get_weather" if step % 2 == 0 else "search_flights"
        spans.append(
            _span(trace_id, os.urandom(8), root_id, "chat gpt-4o-mini", t, t + 40 * MS, _llm_attrs(step, tool))
        )
        t += 41 * MS
        tool_attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": f"call_{step}",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Paris", "step": step}),
            "gen_ai.tool.call.result": json.dumps({"temperature_c": 18, "conditions": "light rain"}),
        }
        spans.append(_span(trace_id, os.urandom(8), root_id, f"execute_tool {tool}", t, t + 5 * MS, tool_attrs))
        t += 6 * MS
    retrieval = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.query.text": "Paris travel advice",
        "gen_ai.retrieval.documents": json.dumps([{"id": "doc-1", "score": 0.9}, {"id": "doc-2", "score": 0.7}]),
    }
    spans.append(_span(trace_id, os.urandom(8), root_id, "retrieval kb", t, t + 3 * MS, retrieval))
    t += 4 * MS
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "travel_agent",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Trip?"}]}]),
    }
    spans.append(_span(trace_id, root_id, b"", "invoke_agent travel_agent", start, t, agent))
    return spans


def export_request(spans: list[Span], service: str = "bench-agent") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = ResourceSpans()
    resource_spans.resource.attributes.append(_kv("service.name", service))
    scope = ScopeSpans()
    scope.scope.name = "bench"
    scope.spans.extend(spans)
    resource_spans.scope_spans.append(scope)
    request.resource_spans.append(resource_spans)
    return request


_CITIES = ("Paris", "Lisbon", "Kyoto", "Oslo", "Lima", "Cairo", "Hanoi", "Quebec")
_SYSTEM = (
    "You are a helpful travel assistant. Use the tools to check the weather and flights before answering, "
    "cite the knowledge-base documents you rely on, and keep answers short."
)


def _text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def bench_trace_spans(trace_id: bytes, start: int, variant: int = 0) -> list[Span]:
    """agent → retrieval, 3 LLM calls and 2 tool calls between them; 7 spans, about 900 bytes each."""
    city = _CITIES[variant % len(_CITIES)]
    question = f"I fly to {city} next Tuesday for three days: what should I pack, and is there an earlier flight?"
    doc = (
        f"{city} in spring: mild days around 17 °C, cool evenings, frequent short showers. Pack layers, a light "
        "waterproof jacket and comfortable walking shoes; museums close on Mondays and book out at weekends."
    )
    answer = (
        f"Expect 16-19 °C and light rain in {city}: pack layers, a rain jacket and walking shoes. An earlier flight "
        "leaves Tuesday at 07:10 (AF1234, 2 seats left); I can hold it if you like."
    )
    forecast = {"forecast": [{"day": d, "max_c": 17 + d, "rain": True} for d in range(3)]}
    flights = {"flights": [{"no": "AF1234", "dep": "07:10", "seats": 2}]}
    tools = [
        ("get_weather", {"city": city, "days": 3}, forecast),
        ("search_flights", {"to": city, "date": "next tuesday"}, flights),
    ]
    root_id = os.urandom(8)
    model = {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.agent.name": "travel_agent",
    }
    spans: list[Span] = []
    t = start + MS
    retrieval = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": "travel-kb",
        "gen_ai.retrieval.query.text": question,
        "gen_ai.retrieval.documents": json.dumps(
            [{"id": f"kb-{city.lower()}-1", "score": 0.91, "content": doc}, {"id": "kb-packing", "score": 0.74}]
        ),
    }
    spans.append(_span(trace_id, os.urandom(8), root_id, "retrieval travel-kb", t, t + 12 * MS, retrieval))
    t += 13 * MS
    history = [_text("system", _SYSTEM), _text("user", question)]
    for step in range(3):
        if step < 2:
            name, args, result = tools[step]
            call_id = f"call_{variant}_{step}"
            parts = [{"type": "tool_call", "id": call_id, "name": name, "arguments": args}]
            output = [{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}]
        else:
            output = [{**_text("assistant", answer), "finish_reason": "stop"}]
        attrs = {
            "gen_ai.operation.name": "chat",
            **model,
            "gen_ai.usage.input_tokens": 180 + 60 * step,
            "gen_ai.usage.output_tokens": 24 if step < 2 else 70,
            "gen_ai.response.finish_reasons": "tool_call" if step < 2 else "stop",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(output),
        }
        spans.append(_span(trace_id, os.urandom(8), root_id, "chat gpt-4o-mini", t, t + 400 * MS, attrs))
        t += 401 * MS
        if step == 2:
            break
        history.append(output[0])
        tool_attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": f"{name.replace('_', ' ')} for a destination, from the partner API",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps(result),
        }
        spans.append(_span(trace_id, os.urandom(8), root_id, f"execute_tool {name}", t, t + 80 * MS, tool_attrs))
        t += 81 * MS
        history.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]})
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "travel_agent",
        "gen_ai.agent.id": "agent-travel-v3",
        "gen_ai.conversation.id": f"conv-{trace_id.hex()[:12]}",
        "gen_ai.input.messages": json.dumps([_text("user", question)]),
        "gen_ai.output.messages": json.dumps([{**_text("assistant", answer), "finish_reason": "stop"}]),
    }
    spans.append(_span(trace_id, root_id, b"", "invoke_agent travel_agent", start, t + MS, agent))
    return spans
