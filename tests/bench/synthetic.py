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


def _span(
    trace_id: bytes, span_id: bytes, parent: bytes, name: str, start: int, end: int, attrs: dict
) -> Span:
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
            "parts": [
                {"type": "tool_call", "id": f"call_{step}", "name": tool, "arguments": {"city": "Paris"}}
            ],
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
            _span(
                trace_id, os.urandom(8), root_id, "chat gpt-4o-mini", t, t + 40 * MS, _llm_attrs(step, tool)
            )
        )
        t += 41 * MS
        tool_attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": f"call_{step}",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Paris", "step": step}),
            "gen_ai.tool.call.result": json.dumps({"temperature_c": 18, "conditions": "light rain"}),
        }
        spans.append(
            _span(trace_id, os.urandom(8), root_id, f"execute_tool {tool}", t, t + 5 * MS, tool_attrs)
        )
        t += 6 * MS
    retrieval = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.query.text": "Paris travel advice",
        "gen_ai.retrieval.documents": json.dumps(
            [{"id": "doc-1", "score": 0.9}, {"id": "doc-2", "score": 0.7}]
        ),
    }
    spans.append(_span(trace_id, os.urandom(8), root_id, "retrieval kb", t, t + 3 * MS, retrieval))
    t += 4 * MS
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "travel_agent",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Trip?"}]}]
        ),
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
