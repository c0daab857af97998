"""Property: every convention's usage reader, on arbitrary usage attribute values (negative, strings, floats, huge,
NaN, lists), never raises and gives non-negative ints, with each detail None or a non-negative int."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators.traces import build_trace
from evaluators.traces.conventions import CONVENTIONS, TokenUsage
from evaluators.traces.conventions.otel_genai import DETAILS_EVENT
from evaluators.traces.records import SpanEvent, SpanRecord

SETTINGS = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

USAGE_KEYS = [
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
    "gen_ai.usage.total_tokens",
    "llm.usage.total_tokens",
    "llm.usage.prompt_tokens",
    "llm.usage.completion_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
    "gen_ai.usage.reasoning_tokens",
    "gen_ai.usage.details.cache_read_tokens",
    "gen_ai.usage.details.cache_write_tokens",
    "gen_ai.usage.details.reasoning_tokens",
    "llm.token_count.prompt",
    "llm.token_count.completion",
    "llm.token_count.total",
    "llm.token_count.prompt_details.cache_read",
    "llm.token_count.prompt_details.cache_write",
    "llm.token_count.completion_details.reasoning",
    "ai.usage.promptTokens",
    "ai.usage.completionTokens",
    "ai.usage.inputTokens",
    "ai.usage.outputTokens",
    "ai.usage.totalTokens",
    "ai.usage.cachedInputTokens",
    "ai.usage.reasoningTokens",
    "ai.usage.inputTokenDetails.cacheReadTokens",
    "ai.usage.inputTokenDetails.cacheWriteTokens",
    "ai.usage.outputTokenDetails.reasoningTokens",
]
METADATA_KEYS = [
    "prompt_token_count",
    "candidates_token_count",
    "total_token_count",
    "cached_content_token_count",
    "thoughts_token_count",
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
]
counts = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(),
    st.booleans(),
    st.none(),
    st.sampled_from(["12", "-3", "1e400", "nan", "inf", " 7 ", "x", "", "1.5"]),
    st.text(max_size=6),
    st.lists(st.integers(), max_size=2),
)
markers = st.fixed_dictionaries(
    {},
    optional={
        "openinference.span.kind": st.just("LLM"),
        "llm.request.type": st.just("chat"),
        "gen_ai.operation.name": st.sampled_from(["chat", "generate_content"]),
        "ai.operationId": st.just("ai.generateText.doGenerate"),
        "gen_ai.system": st.sampled_from(["strands-agents", "gcp.vertex.agent", "openai"]),
    },
)


@st.composite
def usage_spans(draw: st.DrawFn) -> SpanRecord:
    attrs: dict[str, Any] = {**draw(markers), **draw(st.dictionaries(st.sampled_from(USAGE_KEYS), counts))}
    metadata = draw(st.dictionaries(st.sampled_from(METADATA_KEYS), counts))
    if metadata:
        key = draw(st.sampled_from(["usage_metadata", "usageMetadata"]))
        attrs["gcp.vertex.agent.llm_response"] = json.dumps({key: metadata}, default=str)
    events = [SpanEvent(DETAILS_EVENT, 0, draw(st.dictionaries(st.sampled_from(USAGE_KEYS), counts)))]
    return SpanRecord(
        trace_id="0" * 31 + "1",
        span_id="00000000000000a1",
        parent_span_id="",
        name=draw(st.sampled_from(["call_llm", "chat m", "ai.generateText.doGenerate", "ChatCompletion", "chat"])),
        kind=3,
        start_time_unix_nano=1,
        end_time_unix_nano=2,
        status_code=0,
        status_message="",
        attributes=attrs,
        events=events if draw(st.booleans()) else [],
        scope_name=draw(st.sampled_from(["", "gcp.vertex.agent", "pydantic-ai", "strands.telemetry.tracer"])),
    )


def _check(usage: TokenUsage | None) -> None:
    if usage is None:
        return
    for value in (usage.input_tokens, usage.output_tokens, usage.total_tokens):
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 0
    for value in (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens):
        assert value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


@SETTINGS
@given(usage_spans())
def test_usage_readers_never_raise_and_give_none_or_non_negative_ints(span: SpanRecord) -> None:
    for convention in CONVENTIONS:
        _check(convention.usage(span))  # directly: `first` would swallow an exception


@SETTINGS
@given(usage_spans())
def test_call_and_trace_usage_views_are_non_negative(span: SpanRecord) -> None:
    trace = build_trace([span])
    for call in trace.get_llm_calls():
        _check(call.usage)
    _check(trace.metrics.token_usage)
