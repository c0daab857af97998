"""Each LLM call's cost in recorded traces of seven instrumentation libraries equals genai-prices' own figure for
that call's usage: the usage is read in this test straight from the span's raw OTLP-JSON attributes (in each
library's own keys, not through `evaluators.traces.conventions`), priced with `genai_prices.calc_price` at the
span's start; cached prompt tokens included (the `*__cache_usage` scenarios report prompt-cache reads)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import genai_prices
import pytest

from evaluators.pricing import call_cost
from evaluators.traces import load_traces
from tests.conftest import CORPUS

Attributes = dict[str, Any]


@dataclass(frozen=True)
class RawCall:
    """One LLM span's usage as its library wrote it."""

    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    start: datetime


def _value(value: dict[str, Any]) -> Any:
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in value:
            return value[key]
    return None


def _raw_spans(scenario: str) -> Iterator[tuple[str, Attributes, int]]:
    """(span id, attributes, start ns) of every span the library exported, from the OTLP-JSON files."""
    for path in sorted((CORPUS / scenario).glob("traces_*.json")):
        for resource in json.loads(path.read_text(encoding="utf-8"))["resourceSpans"]:
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    attributes = {a["key"]: _value(a["value"]) for a in span.get("attributes", [])}
                    yield span["spanId"], attributes, int(span["startTimeUnixNano"])


def _int(attributes: Attributes, key: str) -> int:
    return int(attributes.get(key) or 0)


def openinference(a: Attributes) -> tuple[str, int, int, int] | None:
    """OpenInference: `llm.token_count.*` (the prompt count includes the cache reads)."""
    if a.get("openinference.span.kind") != "LLM" or "llm.token_count.prompt" not in a:
        return None
    return (
        a["llm.model_name"],
        _int(a, "llm.token_count.prompt"),
        _int(a, "llm.token_count.completion"),
        _int(a, "llm.token_count.prompt_details.cache_read"),
    )


AGENT_OPERATIONS = ("invoke_agent", "create_agent")


def genai_semconv(a: Attributes) -> tuple[str, int, int, int] | None:
    """OTel GenAI semantic conventions (google-genai instrumentation, OpenLLMetry, ADK, Pydantic AI, Strands):
    `gen_ai.usage.*` on the model call's span (an `invoke_agent` span's are the agent run's totals); the
    response model, else the requested one."""
    if "gen_ai.usage.input_tokens" not in a or a.get("gen_ai.operation.name") in AGENT_OPERATIONS:
        return None
    model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
    if not model:
        return None
    return (
        model,
        _int(a, "gen_ai.usage.input_tokens"),
        _int(a, "gen_ai.usage.output_tokens"),
        _int(a, "gen_ai.usage.cache_read.input_tokens"),
    )


def vercel(a: Attributes) -> tuple[str, int, int, int] | None:
    """Vercel AI SDK: `ai.usage.*` and `ai.model.id` on the provider call spans (`ai.*.doGenerate`)."""
    if "ai.usage.promptTokens" not in a or "ai.model.id" not in a or "ai.response.model" not in a:
        return None
    return (
        a["ai.response.model"],
        _int(a, "ai.usage.promptTokens"),
        _int(a, "ai.usage.completionTokens"),
        _int(a, "ai.usage.cachedInputTokens"),
    )


Reader = Callable[[Attributes], tuple[str, int, int, int] | None]

# scenario -> (its library's usage reader, genai-prices' id of the provider the fake LLM server stood for)
SCENARIOS: dict[str, tuple[Reader, str]] = {
    "oi_openai__cache_usage": (openinference, "openai"),  # prompt-cache reads, reasoning tokens
    "oi_openai__tool_agent": (openinference, "openai"),
    "otel_genai__cache_usage": (genai_semconv, "google"),  # prompt-cache reads, thoughts
    "otel_genai__tool_agent": (genai_semconv, "google"),
    "tl_openai__tool_agent": (genai_semconv, "openai"),  # OpenLLMetry
    "adk_native__tool_agent": (genai_semconv, "google"),
    "pydantic_ai__tool_agent": (genai_semconv, "openai"),
    "strands__tool_agent": (genai_semconv, "openai"),
    "vercel_ai__tool_agent": (vercel, "openai"),
}


def raw_calls(scenario: str, reader: Reader) -> dict[str, RawCall]:
    """span id -> its usage, for every span the library's reader finds a model call in."""
    calls = {}
    for span_id, attributes, start in _raw_spans(scenario):
        read = reader(attributes)
        if read is not None:
            start_time = datetime.fromtimestamp(start / 1e9, UTC)
            calls[span_id.lower()] = RawCall(*read, start=start_time)
    return calls


def library_figure(call: RawCall, provider: str) -> float:
    usage = genai_prices.Usage(
        input_tokens=call.input_tokens, cache_read_tokens=call.cache_read_tokens, output_tokens=call.output_tokens
    )
    price = genai_prices.calc_price(usage, call.model, provider_id=provider, genai_request_timestamp=call.start)
    return float(price.total_price)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_calls_cost_is_genai_prices_figure_for_its_usage(scenario: str) -> None:
    reader, provider = SCENARIOS[scenario]
    raw = raw_calls(scenario, reader)
    calls = [call for trace in load_traces(CORPUS / scenario) for call in trace.get_llm_calls()]
    assert calls and len(raw) == len(calls), (len(raw), len(calls))
    for call in calls:
        recorded = raw[call.span_id.lower()]
        cost = call_cost(call)
        assert cost is not None and cost.source == "price_table", call.span_id
        assert cost.usd == pytest.approx(library_figure(recorded, provider), rel=1e-12, abs=0), call.span_id
        assert cost.usd > 0


@pytest.mark.parametrize("scenario", ["oi_openai__cache_usage", "otel_genai__cache_usage"])
def test_cached_prompt_tokens_are_priced_at_the_cache_rate(scenario: str) -> None:
    """The cache scenarios' reads change the figure: pricing them as plain input would be dearer."""
    reader, provider = SCENARIOS[scenario]
    cached = {span_id: c for span_id, c in raw_calls(scenario, reader).items() if c.cache_read_tokens > 0}
    assert cached
    by_id = {c.span_id.lower(): c for t in load_traces(CORPUS / scenario) for c in t.get_llm_calls()}
    for span_id, recorded in cached.items():
        cost = call_cost(by_id[span_id])
        uncached = RawCall(recorded.model, recorded.input_tokens, recorded.output_tokens, 0, recorded.start)
        assert cost is not None and cost.usd < library_figure(uncached, provider)


UNKNOWN = "in-house-llm-7b"


@pytest.mark.parametrize("scenario", ["oi_openai__cache_usage", "otel_genai__cache_usage", "vercel_ai__tool_agent"])
def test_a_model_the_table_does_not_know_is_unpriced(scenario: str, tmp_path: Path) -> None:
    """The same recordings with the model renamed (in the raw attributes) to one no table knows: None, not 0."""
    reader, _ = SCENARIOS[scenario]
    models = {c.model for c in raw_calls(scenario, reader).values()}
    models |= {"gpt-4o-mini", "gemini-2.0-flash"}  # the requested names beside the response ones
    paths = []
    exported = [*(CORPUS / scenario).glob("traces_*.json"), *(CORPUS / scenario).glob("logs_*.json")]
    for path in sorted(exported):
        text = path.read_text(encoding="utf-8")
        for model in sorted(models, key=len, reverse=True):
            text = text.replace(f'"{model}"', f'"{UNKNOWN}"')
        (tmp_path / path.name).write_text(text, encoding="utf-8")
        paths.append(tmp_path / path.name)
    calls = [call for trace in load_traces(paths) for call in trace.get_llm_calls()]
    assert calls and all(call.model == UNKNOWN for call in calls)
    assert all(call.usage is not None for call in calls)
    assert [call_cost(call) for call in calls] == [None] * len(calls)
