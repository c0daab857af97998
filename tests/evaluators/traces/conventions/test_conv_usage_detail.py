"""Usage detail per convention: cache-read, cache-write and reasoning tokens (issue 26), None when not reported."""

from __future__ import annotations

import json

from evaluators.traces import LLMSpan
from evaluators.traces.conventions import TokenUsage
from evaluators.traces.serialize import trace_dict
from tests.support.spanfactory import make_span, trace_of


def only_usage(*spans) -> TokenUsage:
    calls = trace_of(*spans).get_llm_calls()
    assert len(calls) == 1
    usage = calls[0].usage
    assert usage is not None
    return usage


def detail(usage: TokenUsage) -> tuple[int, int, int, int | None, int | None, int | None]:
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
    )


def test_otel_genai_semconv_detail_attributes() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "claude-sonnet-4",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300,
        "gen_ai.usage.cache_read.input_tokens": 800,
        "gen_ai.usage.cache_creation.input_tokens": 100,
        "gen_ai.usage.reasoning.output_tokens": 120,
    }
    assert detail(only_usage(make_span("chat claude-sonnet-4", attrs))) == (1200, 300, 1500, 800, 100, 120)


def test_otel_genai_absent_detail_is_none_and_reported_zero_is_zero() -> None:
    base = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}
    usage = only_usage(make_span("chat m", base))
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (None, None, None)
    zero = only_usage(make_span("chat m", {**base, "gen_ai.usage.cache_read.input_tokens": 0}))
    assert zero.cache_read_tokens == 0 and zero.reasoning_tokens is None


def test_otel_genai_details_log_records_are_summed() -> None:
    """The per-call details log records carry the same keys; their sum keeps the detail fields."""
    from evaluators.traces import SpanEvent
    from evaluators.traces.conventions.otel_genai import DETAILS_EVENT

    def record(inp: int, cached: int | None) -> SpanEvent:
        attrs: dict[str, object] = {"gen_ai.usage.input_tokens": inp, "gen_ai.usage.output_tokens": 1}
        if cached is not None:
            attrs["gen_ai.usage.cache_read.input_tokens"] = cached
        return SpanEvent(DETAILS_EVENT, 0, attrs)

    span = make_span("chat m", {"gen_ai.operation.name": "chat"}, events=[record(10, 4), record(20, None)])
    usage = only_usage(span)
    assert (usage.input_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (30, 4, None)


def test_openinference_prompt_and_completion_details() -> None:
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 216,
        "llm.token_count.completion": 26,
        "llm.token_count.total": 242,
        "llm.token_count.prompt_details.cache_read": 184,
        "llm.token_count.prompt_details.cache_write": 12,
        "llm.token_count.completion_details.reasoning": 0,
        "llm.token_count.prompt_details.audio": 0,
    }
    assert detail(only_usage(make_span("ChatCompletion", attrs, kind=3))) == (216, 26, 242, 184, 12, 0)


def test_traceloop_legacy_and_semconv_detail_names() -> None:
    chat = {"llm.request.type": "chat", "llm.vendor": "anthropic", "llm.request.model": "claude-3-5-sonnet"}
    legacy = {
        **chat,
        "gen_ai.usage.prompt_tokens": 900,
        "gen_ai.usage.completion_tokens": 50,
        "llm.usage.total_tokens": 950,
        "gen_ai.usage.cache_read_input_tokens": 600,
        "gen_ai.usage.cache_creation_input_tokens": 200,
    }
    assert detail(only_usage(make_span("anthropic.chat", legacy))) == (900, 50, 950, 600, 200, None)
    current = {
        **chat,
        "gen_ai.usage.input_tokens": 47,
        "gen_ai.usage.output_tokens": 31,
        "gen_ai.usage.total_tokens": 78,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.reasoning_tokens": 16,
    }
    assert detail(only_usage(make_span("openai.chat", current))) == (47, 31, 78, 0, None, 16)
    # the pre-2024 llm.usage.* counts with detail beside them
    oldest = {
        **chat,
        "llm.usage.prompt_tokens": 3,
        "llm.usage.completion_tokens": 4,
        "gen_ai.usage.reasoning_tokens": 2,
    }
    assert detail(only_usage(make_span("openai.chat", oldest))) == (3, 4, 7, None, None, 2)


def test_adk_usage_metadata_adds_thoughts_to_output() -> None:
    """Gemini counts thoughts apart from candidates: the view's output includes them, as everywhere else."""
    response = {
        "content": {"role": "model", "parts": [{"text": "Hi"}]},
        "usage_metadata": {
            "prompt_token_count": 300,
            "candidates_token_count": 20,
            "thoughts_token_count": 40,
            "cached_content_token_count": 200,
            "total_token_count": 360,
        },
    }
    attrs = {
        "gen_ai.system": "gcp.vertex.agent",
        "gen_ai.request.model": "gemini-2.5-flash",
        "gcp.vertex.agent.llm_request": json.dumps({"model": "gemini-2.5-flash", "contents": []}),
        "gcp.vertex.agent.llm_response": json.dumps(response),
    }
    usage = only_usage(make_span("call_llm", attrs, scope="gcp.vertex.agent"))
    assert detail(usage) == (300, 60, 360, 200, None, 40)
    # camelCase (Gemini REST), no thoughts: output is the candidates alone, reasoning not reported
    camel = {"usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 5, "cachedContentTokenCount": 0}}
    attrs["gcp.vertex.agent.llm_response"] = json.dumps(camel)
    assert detail(only_usage(make_span("call_llm", attrs, scope="gcp.vertex.agent"))) == (30, 5, 35, 0, None, None)


def _vercel_call(**usage: object) -> LLMSpan:
    attrs = {
        "operation.name": "ai.generateText.doGenerate",
        "ai.operationId": "ai.generateText.doGenerate",
        "ai.model.id": "gpt-4o-mini",
        "ai.model.provider": "openai.chat",
        **usage,
    }
    calls = trace_of(make_span("ai.generateText.doGenerate", attrs)).get_llm_calls()
    assert len(calls) == 1
    return calls[0]


def test_vercel_v5_and_v6_detail_names() -> None:
    v5 = _vercel_call(
        **{
            "ai.usage.promptTokens": 500,
            "ai.usage.completionTokens": 90,
            "ai.usage.cachedInputTokens": 384,
            "ai.usage.reasoningTokens": 64,
        }
    )
    assert v5.usage is not None and detail(v5.usage) == (500, 90, 590, 384, None, 64)
    v6 = _vercel_call(
        **{
            "ai.usage.inputTokens": 500,
            "ai.usage.outputTokens": 90,
            "ai.usage.inputTokenDetails.cacheReadTokens": 300,
            "ai.usage.inputTokenDetails.cacheWriteTokens": 100,
            "ai.usage.outputTokenDetails.reasoningTokens": 10,
        }
    )
    assert v6.usage is not None and detail(v6.usage) == (500, 90, 590, 300, 100, 10)


def test_pydantic_ai_usage_details_on_chat_spans_only() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "claude-sonnet-4",
        "model_request_parameters": "{}",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 80,
        "gen_ai.usage.details.cache_read_tokens": 700,
        "gen_ai.usage.details.cache_write_tokens": 250,
        "gen_ai.usage.details.reasoning_tokens": 30,
        "gen_ai.usage.details.audio_tokens": 0,
    }
    assert detail(only_usage(make_span("chat claude-sonnet-4", attrs, scope="pydantic-ai"))) == (
        1000,
        80,
        1080,
        700,
        250,
        30,
    )


def test_strands_bedrock_style_and_semconv_cache_names() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "strands-agents",
        "gen_ai.request.model": "us.anthropic.claude-sonnet-4",
        "gen_ai.usage.prompt_tokens": 54,
        "gen_ai.usage.input_tokens": 54,
        "gen_ai.usage.completion_tokens": 31,
        "gen_ai.usage.output_tokens": 31,
        "gen_ai.usage.total_tokens": 85,
        "gen_ai.usage.cache_read_input_tokens": 500,
        "gen_ai.usage.cache_write_input_tokens": 120,
    }
    span = make_span("chat", attrs, scope="strands.telemetry.tracer")
    assert detail(only_usage(span)) == (54, 31, 85, 500, 120, None)


def test_negative_or_malformed_counts_are_not_reported() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": -5,
        "gen_ai.usage.output_tokens": "7",
        "gen_ai.usage.cache_read.input_tokens": -1,
        "gen_ai.usage.cache_creation.input_tokens": "lots",
        "gen_ai.usage.reasoning.output_tokens": True,
    }
    assert detail(only_usage(make_span("chat m", attrs))) == (0, 7, 7, None, None, None)


def test_trace_and_agent_totals_sum_the_reported_detail() -> None:
    def call(inp: int, out: int, **extra: int) -> dict[str, object]:
        keys = {"cache": "gen_ai.usage.cache_read.input_tokens", "reasoning": "gen_ai.usage.reasoning.output_tokens"}
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": inp,
            "gen_ai.usage.output_tokens": out,
            **{keys[k]: v for k, v in extra.items()},
        }

    agent = make_span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    trace = trace_of(
        agent,
        make_span("chat m", call(100, 10, cache=60), parent=agent),
        make_span("chat m", call(200, 30, cache=150, reasoning=12), parent=agent),
        make_span("chat m", call(50, 5), parent=agent),
    )
    usage = trace.metrics.token_usage
    assert detail(usage) == (350, 45, 395, 210, None, 12)
    metrics = trace_dict(trace)["metrics"]
    assert (metrics["cache_read_tokens"], metrics["cache_write_tokens"], metrics["reasoning_tokens"]) == (210, None, 12)
    [agent_trace] = trace.agent_traces()
    assert agent_trace.metrics.token_usage.cache_read_tokens == 210
    calls = trace.get_llm_calls()
    assert [c.metrics.cache_read_tokens for c in calls] == [60, 150, None]
