"""Usage detail read from recorded traces: the cache_usage scenarios' numbers, as their READMEs state them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.traces import load_traces
from tests.conftest import CORPUS, corpus_scenarios

# (input, output, cache_read, reasoning) per LLM call in start order, from each scenario's README ("–": not reported).
README_CALLS = {
    ("oi_openai__cache_usage", "43748ceda3984f790de3bf5bfb97a49c"): [
        (50, 31, 24, 0),
        (130, 40, 94, 0),
        (216, 26, 184, 0),
    ],
    ("oi_openai__cache_usage", "37fd63daeab168a44cee8f24cb9313f7"): [(50, 183, 0, 122), (195, 54, 0, 36)],
    # the google-genai instrumentation omits a 0 count: no reasoning attribute in trace 1, no cache_read in trace 2
    ("otel_genai__cache_usage", "115d119adafa3b7b98529e13c894222e"): [
        (43, 18, 15, None),
        (110, 27, 68, None),
        (185, 26, 144, None),
    ],
    # output 60 = 20 visible + 40 reasoning (the instrumentation adds Gemini's thoughts)
    ("otel_genai__cache_usage", "a5a78d0d443da273001e48004605c088"): [(30, 60, None, 40)],
}
# Trace totals (input, output, cache_read, reasoning) from the READMEs.
README_TOTALS = {
    "43748ceda3984f790de3bf5bfb97a49c": (396, 97, 302, 0),
    "37fd63daeab168a44cee8f24cb9313f7": (245, 237, 0, 158),
    "115d119adafa3b7b98529e13c894222e": (338, 71, 227, None),
    "a5a78d0d443da273001e48004605c088": (30, 60, None, 40),
}


def _traces(scenario: str) -> dict:
    return {t.trace_id: t for t in load_traces(CORPUS / scenario)}


@pytest.mark.parametrize("key", sorted(README_CALLS), ids=lambda k: f"{k[0]}-{k[1][:8]}")
def test_per_call_usage_detail_matches_the_readme(key: tuple[str, str]) -> None:
    scenario, trace_id = key
    trace = _traces(scenario)[trace_id]
    got = []
    for call in trace.get_llm_calls():
        assert call.usage is not None
        usage = call.usage
        got.append((usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.reasoning_tokens))
        assert usage.cache_write_tokens is None  # neither library reports cache writes
    assert got == README_CALLS[key]
    total = trace.metrics.token_usage
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens, total.reasoning_tokens) == README_TOTALS[
        trace_id
    ]


def _usage_scenarios() -> list[str]:
    """The scenarios whose expected.json states per-call usage (`llm_call_usage`)."""
    return [
        p.name
        for p in corpus_scenarios()
        if all("llm_call_usage" in t for t in json.loads((p / "expected.json").read_text())["traces"])
    ]


def test_the_cache_scenarios_state_per_call_usage() -> None:
    assert {"oi_openai__cache_usage", "otel_genai__cache_usage", "oi_anthropic__tool_use"} <= set(_usage_scenarios())


@pytest.mark.parametrize("scenario", _usage_scenarios())
def test_usage_detail_agrees_with_expected_json(scenario: str) -> None:
    """expected.json writes 0 for a count the span leaves out; the views say None (not reported) there. Cache
    writes are checked where expected.json states them (`cache_write_tokens`, an optional key)."""
    expected = json.loads((CORPUS / scenario / "expected.json").read_text())
    traces = _traces(scenario)
    for want in expected["traces"]:
        trace = traces[want["trace_id"]]
        calls = [c.usage for c in trace.get_llm_calls()]
        with_writes = "cache_write_tokens" in want
        got = [
            {
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cache_read_tokens": u.cache_read_tokens or 0,
                "reasoning_tokens": u.reasoning_tokens or 0,
                **({"cache_write_tokens": u.cache_write_tokens or 0} if with_writes else {}),
            }
            for u in calls
            if u is not None
        ]
        keys = ("input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens")
        keys += ("cache_write_tokens",) if with_writes else ()
        assert got == [{k: c[k] for k in keys} for c in want["llm_call_usage"]]
        total = trace.metrics.token_usage
        assert (total.cache_read_tokens or 0, total.reasoning_tokens or 0) == (
            want["cache_read_tokens"],
            want["reasoning_tokens"],
        )
        if "cache_write_tokens" in want:
            assert (total.cache_write_tokens or 0) == want["cache_write_tokens"]


# Scenarios whose spans report the detail as 0 (every call): reported 0 stays 0, never None.
REPORTED_ZERO = {
    "oi_openai__tool_agent": ("cache_read_tokens", "reasoning_tokens"),
    "tl_openai__tool_agent": ("cache_read_tokens", "reasoning_tokens"),
    "pydantic_ai__tool_agent": ("reasoning_tokens",),
}


@pytest.mark.parametrize("scenario", sorted(REPORTED_ZERO))
def test_details_reported_as_zero_are_zero(scenario: str, corpus_dir: Path) -> None:
    for trace in load_traces(corpus_dir / scenario):
        total = trace.metrics.token_usage
        for field in REPORTED_ZERO[scenario]:
            assert getattr(total, field) == 0, field


def test_scenarios_without_detail_report_none() -> None:
    """Vercel AI 5 against a non-caching fake server and ADK 2.x native spans write no detail attributes."""
    for scenario in ("vercel_ai__tool_agent", "adk_native__tool_agent"):
        for trace in load_traces(CORPUS / scenario):
            total = trace.metrics.token_usage
            assert (total.cache_read_tokens, total.cache_write_tokens, total.reasoning_tokens) == (None, None, None)
