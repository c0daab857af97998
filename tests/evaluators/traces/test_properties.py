"""Property tests: decoders raise only TraceDecodeError, normalizers and views never raise."""

from __future__ import annotations

import gc
import inspect
import json
import weakref
from functools import cached_property
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from evaluators.traces import (
    AgentTrace,
    DecodedBatch,
    Message,
    SpanEvent,
    SpanRecord,
    Trace,
    TraceDecodeError,
    build_trace,
    decode_bytes,
)
from evaluators.traces.conventions import CONVENTIONS, Convention
from evaluators.traces.otlp_json import decode_traces_json, decode_traces_object
from evaluators.traces.otlp_proto import decode_logs_protobuf, decode_traces_protobuf
from evaluators.traces.serialize import trace_dict

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
FACETS = sorted(
    name
    for name, member in vars(Convention).items()
    if not name.startswith("_")
    and inspect.isfunction(member)
    and list(inspect.signature(member).parameters) == ["self", "span"]
)
TRACE_ID = "0" * 31 + "1"


def expect_batch_or_decode_error(fn: Any, *args: Any) -> None:
    try:
        result = fn(*args)
    except TraceDecodeError as exc:
        assert str(exc)
        return
    assert isinstance(result, DecodedBatch)


# --- decoders -----------------------------------------------------------------------------------


def _valid_request_bytes() -> bytes:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i in range(3):
        span = ss.spans.add()
        span.trace_id = bytes.fromhex(TRACE_ID)
        span.span_id = bytes([0, 0, 0, 0, 0, 0, 0, i + 1])
        span.name = f"span {i}"
        value = AnyValue()
        value.kvlist_value.values.extend([KeyValue(key="k", value=AnyValue(string_value="v" * i))])
        span.attributes.extend([KeyValue(key="a", value=value)])
    return request.SerializeToString()


VALID_PB = _valid_request_bytes()


@st.composite
def mutated_protobuf(draw: st.DrawFn) -> bytes:
    data = bytearray(VALID_PB)
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(data) - 1))
        data[index] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut])


any_bytes = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=100).map(lambda b: b"{" + b),
    st.binary(max_size=100).map(lambda b: b"[" + b),
    mutated_protobuf(),
)


@SETTINGS
@given(any_bytes)
def test_decode_bytes_raises_only_trace_decode_error(data: bytes) -> None:
    expect_batch_or_decode_error(decode_bytes, data)


@SETTINGS
@given(any_bytes)
def test_protobuf_decoders_raise_only_trace_decode_error(data: bytes) -> None:
    expect_batch_or_decode_error(decode_traces_protobuf, data)
    expect_batch_or_decode_error(decode_logs_protobuf, data)


@SETTINGS
@given(any_bytes)
def test_json_decoder_on_bytes_raises_only_trace_decode_error(data: bytes) -> None:
    expect_batch_or_decode_error(decode_traces_json, data)


OTLP_KEYS = [
    "resourceSpans",
    "resource_spans",
    "resourceLogs",
    "scopeSpans",
    "scope_spans",
    "scopeLogs",
    "logRecords",
    "resource",
    "scope",
    "spans",
    "attributes",
    "key",
    "value",
    "values",
    "events",
    "links",
    "status",
    "code",
    "message",
    "name",
    "version",
    "kind",
    "traceId",
    "spanId",
    "parentSpanId",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "timeUnixNano",
    "body",
    "eventName",
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "bytesValue",
    "arrayValue",
    "kvlistValue",
    "int_value",
]
json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(
        [TRACE_ID, "00000000000000a1", "abc", "", "SPAN_KIND_CLIENT", "STATUS_CODE_ERROR", "AAAAAAAAAAE=", "12"]
    ),
)
otlp_json_values = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(OTLP_KEYS) | st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=30,
)


def _in_span(value: Any) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": [value]}]}]}


def _in_attribute(value: Any) -> dict[str, Any]:
    span = {"traceId": TRACE_ID, "spanId": "00000000000000a1", "attributes": [{"key": "k", "value": value}]}
    return _in_span(span)


json_documents = st.one_of(
    otlp_json_values,
    otlp_json_values.map(lambda v: {"resourceSpans": v}),
    otlp_json_values.map(lambda v: {"resourceLogs": v}),
    otlp_json_values.map(_in_span),
    otlp_json_values.map(_in_attribute),
    otlp_json_values.map(lambda v: {"resourceLogs": [{"scopeLogs": [{"logRecords": [v]}]}]}),
)


@SETTINGS
@given(json_documents)
def test_decode_traces_object_raises_only_trace_decode_error(document: Any) -> None:
    expect_batch_or_decode_error(decode_traces_object, document)


@SETTINGS
@given(json_documents, st.booleans())
def test_decode_traces_json_text_raises_only_trace_decode_error(document: Any, as_lines: bool) -> None:
    text = json.dumps(document)
    if as_lines:
        text = text + "\n" + text
    expect_batch_or_decode_error(decode_traces_json, text.encode("utf-8", "surrogatepass"))


# --- convention normalizers ---------------------------------------------------------------------

CONTENT_KEYS = [
    "role",
    "content",
    "parts",
    "type",
    "text",
    "name",
    "arguments",
    "id",
    "response",
    "function",
    "tool_calls",
    "tool_call_id",
    "contents",
    "config",
    "system_instruction",
    "tools",
    "function_declarations",
    "functionDeclarations",
    "usage_metadata",
    "prompt_token_count",
    "candidates_token_count",
    "function_call",
    "function_response",
    "functionCall",
    "args",
    "kwargs",
    "documents",
    "query",
    "message",
    "messages",
    "finish_reason",
    "agent_name",
    "score",
    "metadata",
    "new_message",
    "choices",
    "inputs",
    "outputs",
    "candidates",
    "page_content",
    "parameters",
    "description",
    "thought",
    "model",
    "toolUse",
    "toolResult",
    "toolUseId",
    "toolCallId",
    "toolName",
    "input",
    "output",
    "result",
    "system",
    "prompt",
    "kind",
    "part_kind",
    "tool_name",
]
content_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=10),
    st.sampled_from(
        [
            "user",
            "assistant",
            "model",
            "tool",
            "system",
            "text",
            "tool_call",
            "tool_call_response",
            "function",
            "STOP",
            "tool-call",
            "tool-result",
            "request",
            "response",
        ]
    ),
)
content_values = st.recursive(
    content_leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(CONTENT_KEYS) | st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=12,
)
json_strings = content_values.map(json.dumps)
truncated_json = st.tuples(json_strings, st.floats(0, 1)).map(lambda t: t[0][: int(len(t[0]) * t[1])])
double_encoded = json_strings.map(json.dumps)
attribute_values = st.one_of(
    st.text(max_size=12),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.binary(max_size=8),
    st.lists(st.one_of(st.text(max_size=5), st.integers(), st.booleans()), max_size=4),
    content_values,
    json_strings,
    truncated_json,
    double_encoded,
)

REAL_KEYS = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.name",
    "gen_ai.tool.type",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.description",
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.agent.description",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.provider.name",
    "gen_ai.system",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.total_tokens",
    "gen_ai.retrieval.documents",
    "gen_ai.retrieval.query.text",
    "gen_ai.prompt",
    "gen_ai.completion",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "tool.name",
    "tool.description",
    "tool_call.id",
    "agent.name",
    "graph.node.id",
    "llm.model_name",
    "llm.provider",
    "llm.system",
    "llm.token_count.prompt",
    "llm.token_count.completion",
    "llm.token_count.total",
    "llm.cost.total",
    "llm.cost.prompt",
    "llm.finish_reason",
    "llm.input_messages",
    "llm.input_messages.x",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.tool_response",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "llm.request.type",
    "llm.request.model",
    "llm.vendor",
    "llm.usage.total_tokens",
    "llm.usage.prompt_tokens",
    "llm.response.finish_reason",
    "ai.prompt.messages",
    "ai.prompt",
    "ai.prompt.tools",
    "ai.response.text",
    "ai.response.toolCalls",
    "ai.response.object",
    "ai.response.finishReason",
    "ai.operationId",
    "ai.model.id",
    "ai.model.provider",
    "ai.toolCall.name",
    "ai.toolCall.id",
    "ai.toolCall.args",
    "ai.toolCall.input",
    "ai.toolCall.result",
    "ai.toolCall.output",
    "ai.usage.promptTokens",
    "ai.usage.inputTokens",
    "ai.usage.totalTokens",
    "pydantic_ai.all_messages",
    "pydantic_ai.new_message_index",
    "final_result",
    "model_request_parameters",
    "logfire.msg",
    "agent_name",
    "tool_arguments",
    "tool_response",
    "gen_ai.agent.tools",
    "gen_ai.aggregated_usage.input_tokens",
    "error.type",
]
INDEXED = {
    "llm.input_messages": [
        "message.role",
        "message.content",
        "message.contents.0.message_content.text",
        "message.contents.1.message_content.type",
        "message.contents",
        "message.tool_calls.0.tool_call.function.arguments",
        "message.tool_calls.1.tool_call.function.name",
        "message.tool_calls.0.tool_call.id",
        "message.tool_calls",
        "message.tool_call_id",
        "message.name",
        "message",
    ],
    "llm.output_messages": ["message.role", "message.content", "message.tool_calls.0.tool_call.function.arguments"],
    "llm.tools": ["tool.json_schema", "tool"],
    "llm.prompts": ["prompt.text", "role", "content"],
    "retrieval.documents": ["document.id", "document.content", "document.score", "document.metadata", "document"],
    "gen_ai.prompt": ["role", "content", "tool_calls.0.name", "tool_calls.0.arguments", "tool_calls", "tool_call_id"],
    "gen_ai.completion": ["role", "content", "finish_reason", "tool_calls.0.arguments", "tool_calls.2.name"],
    "llm.request.functions": ["name", "description", "parameters"],
}
indexed_keys = st.sampled_from(
    [f"{prefix}.{i}.{suffix}" for prefix, suffixes in INDEXED.items() for suffix in suffixes for i in (0, 1, 2, 3, 10)]
)
attribute_keys = st.one_of(st.sampled_from(REAL_KEYS), indexed_keys, st.text(max_size=10))
MARKERS = {
    "openinference.span.kind": ["LLM", "TOOL", "AGENT", "RETRIEVER", "CHAIN", "EMBEDDING", "RERANKER", "x"],
    "gen_ai.operation.name": ["chat", "execute_tool", "invoke_agent", "retrieval", "embeddings", "generate_content"],
    "traceloop.span.kind": ["tool", "agent", "task", "workflow"],
    "llm.request.type": ["chat", "completion", "embedding", "rerank"],
    "gen_ai.tool.name": ["transfer_to_agent", "get_weather"],
    "gen_ai.tool.type": ["TransferToAgentTool", "FunctionTool"],
    "gen_ai.agent.name": ["a", "b"],
    "ai.operationId": ["ai.generateText", "ai.generateText.doGenerate", "ai.streamText.doStream", "ai.toolCall"],
    "gen_ai.system": ["strands-agents", "gcp.vertex.agent", "openai"],
}


def attribute_maps(max_size: int) -> st.SearchStrategy[dict[str, Any]]:
    """Classification markers (mostly real values) merged over random keys and values."""
    return st.builds(
        lambda markers, rest: {**rest, **markers},
        st.fixed_dictionaries(
            {}, optional={key: st.sampled_from(values) | attribute_values for key, values in MARKERS.items()}
        ),
        st.dictionaries(attribute_keys, attribute_values, max_size=max_size),
    )


EVENT_NAMES = [
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
    "gen_ai.choice",
    "gen_ai.content.prompt",
    "gen_ai.content.completion",
    "gen_ai.client.inference.operation.details",
    "exception",
]


def span_events(max_events: int, max_attributes: int) -> st.SearchStrategy[list[SpanEvent]]:
    return st.lists(
        st.builds(
            SpanEvent,
            st.sampled_from(EVENT_NAMES) | st.text(max_size=5),
            st.integers(0, 10**6),
            st.dictionaries(
                attribute_keys | st.sampled_from(["content", "id", "message", "finish_reason", "exception.type"]),
                attribute_values,
                max_size=max_attributes,
            ),
            st.one_of(st.none(), content_values, json_strings, truncated_json, attribute_values),
            st.booleans(),
        ),
        max_size=max_events,
    )


SPAN_NAMES = [
    "call_llm",
    "agent_run [weather_agent]",
    "agent_run [",
    "agent_run []",
    "invocation",
    "send_data",
    "execute_tool transfer_to_agent",
    "execute_tool get_weather",
    "execute_tool",
    "invoke_agent",
    "invoke_agent planner",
    "handoff to B",
    "transfer_to_agent",
    "chat gpt-4o",
    "generate_content gemini",
    "openai.chat",
    "lookup.tool",
    "ai.generateText",
    "ai.generateText.doGenerate",
    "ai.toolCall",
    "ai.embed",
    "execute_event_loop_cycle",
    "agent run",
    "running tool",
    "running output function",
    "",
]
FULL_ATTRIBUTES, LIGHT_ATTRIBUTES = attribute_maps(10), attribute_maps(5)
FULL_EVENTS, LIGHT_EVENTS = span_events(3, 4), span_events(1, 2)
span_names = st.sampled_from(SPAN_NAMES) | st.text(max_size=12)
scopes = st.sampled_from(["", "gcp.vertex.agent", "pydantic-ai", "strands.telemetry.tracer", "ai"])


@st.composite
def records(draw: st.DrawFn, span_id: str = "00000000000000a1", parent: str = "", light: bool = False) -> SpanRecord:
    """A random span; `light` draws fewer attributes and events (for whole random traces)."""
    start = draw(st.integers(0, 10**9))
    events = LIGHT_EVENTS if light else FULL_EVENTS
    return SpanRecord(
        trace_id=TRACE_ID,
        span_id=span_id,
        parent_span_id=parent,
        name=draw(span_names),
        kind=draw(st.integers(0, 5)),
        start_time_unix_nano=start,
        end_time_unix_nano=draw(st.sampled_from([0, start, start + 10**6]) | st.integers(0, 2 * 10**9)),
        status_code=draw(st.integers(0, 3)),
        status_message=draw(st.text(max_size=5)),
        attributes=draw(LIGHT_ATTRIBUTES if light else FULL_ATTRIBUTES),
        events=draw(events),
        logs=draw(events),
        resource_attributes=draw(st.sampled_from([{}, {"service.name": "svc"}, {"service.name": 5, "x": [1]}])),
        scope_name=draw(scopes),
    )


@SETTINGS
@given(records())
def test_every_facet_of_every_convention_never_raises(record: SpanRecord) -> None:
    assert "span_kind" in FACETS and "input_messages" in FACETS and "io" in FACETS
    for convention in CONVENTIONS:
        convention.detect(record)
        for facet in FACETS:
            getattr(convention, facet)(record)  # directly, not through `first`, which swallows errors


# --- building and reading traces ----------------------------------------------------------------

ID_POOL = [f"{i:016x}" for i in range(1, 9)]


@st.composite
def span_sets(draw: st.DrawFn) -> list[SpanRecord]:
    count = draw(st.integers(1, 8))
    spans = []
    for _ in range(count):
        span_id = draw(st.sampled_from(ID_POOL))  # duplicates happen
        parent = draw(st.sampled_from(["", "00000000000000ff", *ID_POOL]))  # missing, self, cycles
        spans.append(draw(records(span_id=span_id, parent=parent, light=True)))
    return spans


def _is_property(owner: type, name: str) -> bool:
    static = inspect.getattr_static(owner, name, None)
    return isinstance(static, (property, cached_property))


DESTRUCTIVE = {"release"}  # Trace.release leaves the trace unusable: read last, by the test of it


def _read_everything(obj: Any) -> list[Any]:
    """Every public property's value, and the result of every argument-less public method (not DESTRUCTIVE)."""
    values = []
    for name in dir(type(obj)):
        if name.startswith("_") or name in DESTRUCTIVE:
            continue
        if _is_property(type(obj), name):
            values.append(getattr(obj, name))
            continue
        member = getattr(obj, name)
        if inspect.ismethod(member) and not inspect.signature(member).parameters:
            values.append(member())
    return values


def touch_everything(trace: Trace) -> None:
    _read_everything(trace)
    for span in trace.spans:
        for value in _read_everything(span):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, Message):
                        item.to_dict()
    for agent_trace in trace.agent_traces():
        assert isinstance(agent_trace, AgentTrace)
        _read_everything(agent_trace)
    json.dumps(trace_dict(trace), default=str)


@settings(SETTINGS, max_examples=60)
@given(span_sets())
def test_a_released_trace_is_freed_by_reference_counting_alone(spans: list[SpanRecord]) -> None:
    """Every view read, then `release`: dropping the trace frees it, its span views and its agent traces without
    the collector (which the worker would otherwise spend a tenth of its time on, walking their cycles)."""
    trace = build_trace(spans)
    touch_everything(trace)
    views = [trace, *trace.spans, *trace.agent_traces()]
    alive = [weakref.ref(view) for view in views]
    gc.disable()  # only reference counting frees from here
    try:
        trace.release()
        del trace, views
        assert [ref() for ref in alive if ref() is not None] == []
    finally:
        gc.enable()


@settings(SETTINGS, max_examples=120)
@given(span_sets())
def test_building_and_reading_random_traces_never_raises(spans: list[SpanRecord]) -> None:
    trace = build_trace(spans)
    unique_ids = {s.span_id for s in spans}
    assert sorted(s.span_id for s in trace.spans) == sorted(unique_ids)  # every span once, cycles or not
    assert trace.roots or not spans
    touch_everything(trace)
    metrics = trace.metrics
    assert metrics.llm_call_count == len(trace.get_llm_calls()) <= trace.span_count
    assert metrics.tool_call_count == len(trace.get_tool_calls())
    assert not {t.span_id for t in trace.get_tool_calls()} & {h.span_id for h in trace.handoffs}
