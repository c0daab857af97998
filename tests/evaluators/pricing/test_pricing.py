"""evaluators.pricing: a call's cost is genai-prices' own figure (computed here from the library), overrides win,
an unknown model is unpriced (None), and cost_budget agrees with price_call summed over a trace's calls."""

from __future__ import annotations

from datetime import UTC, datetime

import genai_prices
import pytest

from evaluators import builtin
from evaluators.pricing import ModelPrice, price_call
from evaluators.traces.conventions.base import TokenUsage
from tests.support.builtins_spans import chat
from tests.support.spanfactory import trace_of

WHEN = datetime(2025, 9, 1, tzinfo=UTC)

CASES = [
    # (model as a span names it, provider, the library's model ref and provider, usage)
    ("gpt-4o", None, "gpt-4o", None, TokenUsage(1000, 500, 1500)),
    ("gpt-4o-mini-2024-07-18", "openai", "gpt-4o-mini-2024-07-18", "openai", TokenUsage(12000, 800, 12800, 8000)),
    ("openai/gpt-4o-mini", None, "gpt-4o-mini", "openai", TokenUsage(3000, 100, 3100, 1024, None, None)),
    (
        "claude-sonnet-4-20250514",
        "anthropic",
        "claude-sonnet-4-20250514",
        "anthropic",
        TokenUsage(20000, 700, 20700, 15000, 4000, None),
    ),
    ("claude-3-5-haiku-latest", None, "claude-3-5-haiku-latest", None, TokenUsage(5000, 300, 5300, None, 2000)),
    ("models/gemini-2.5-flash", "gcp.gemini", "gemini-2.5-flash", None, TokenUsage(4000, 900, 4900, 2048, None, 400)),
    ("gemini-2.0-flash", "gcp.vertex_ai", "gemini-2.0-flash", None, TokenUsage(800, 60, 860)),
]


def _library_figure(ref: str, provider: str | None, usage: TokenUsage) -> float:
    """The library's own price of `usage`, built from the TokenUsage fields as genai-prices defines them."""
    lib_usage = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens or 0,
        cache_write_tokens=usage.cache_write_tokens or 0,
        output_tokens=usage.output_tokens,
    )
    calc = genai_prices.calc_price(lib_usage, ref, provider_id=provider, genai_request_timestamp=WHEN)
    return float(calc.total_price)


@pytest.mark.parametrize(("model", "provider", "ref", "lib_provider", "usage"), CASES)
def test_price_call_is_the_librarys_own_figure(model, provider, ref, lib_provider, usage) -> None:
    priced = price_call(model, usage, provider=provider, when=WHEN)
    assert priced is not None and priced.source == "price_table"
    assert priced.usd == pytest.approx(_library_figure(ref, lib_provider, usage), rel=1e-12)
    assert priced.usd > 0


def test_cache_reads_make_a_call_cheaper() -> None:
    plain = price_call("claude-sonnet-4-20250514", TokenUsage(20000, 700, 20700), when=WHEN)
    cached = price_call("claude-sonnet-4-20250514", TokenUsage(20000, 700, 20700, 15000), when=WHEN)
    assert plain is not None and cached is not None and cached.usd < plain.usd


def test_an_override_wins_over_the_table() -> None:
    usage = TokenUsage(2_000_000, 1_000_000, 3_000_000, 1_000_000, None, None)
    overrides = {"gpt-4o": ModelPrice(input=1.0, output=2.0, cache_read=0.5)}
    priced = price_call("gpt-4o-2024-08-06", usage, when=WHEN, overrides=overrides)
    assert priced is not None and priced.source == "override" and priced.entry == "gpt-4o"
    assert priced.usd == pytest.approx(1.0 * 1 + 0.5 * 1 + 2.0 * 1)
    self_hosted = price_call("my-llama", usage, overrides={"my-llama": ModelPrice(0, 0)})
    assert self_hosted is not None and self_hosted.usd == 0 and self_hosted.source == "override"


def test_an_unknown_model_is_unpriced_not_free() -> None:
    assert price_call("no-such-model-xyz", TokenUsage(100, 10, 110), when=WHEN) is None
    assert price_call("no-such-model-xyz", TokenUsage(100, 10, 110), provider="openai") is None
    assert price_call(None, TokenUsage(100, 10, 110)) is None
    assert price_call("", TokenUsage(100, 10, 110)) is None


def test_cost_budget_agrees_with_price_call_summed_over_the_calls() -> None:
    trace = trace_of(
        chat("a", model="gpt-4o", input_tokens=1200, output_tokens=300),
        chat("b", model="gpt-4o-mini", input_tokens=5000, output_tokens=50),
        chat("c", model="no-such-model-xyz", input_tokens=10, output_tokens=10),
    )
    calls = trace.get_llm_calls()
    expected = 0.0
    for call in calls:
        when = datetime.fromtimestamp(call.start_time / 1e9, UTC)
        priced = price_call(call.model, call.usage, provider=call.provider, when=when)
        expected += priced.usd if priced is not None else 0.0
    result = builtin("cost_budget").run(trace)
    assert result.details["cost_usd"] == pytest.approx(expected, rel=1e-12)
    assert result.details["calls_price_table"] == 2 and result.details["calls_unpriced"] == 1


def test_cost_budget_prices_param_is_an_override_per_1k_tokens() -> None:
    trace = trace_of(chat("a", model="gpt-4o", input_tokens=2000, output_tokens=1000))
    result = builtin("cost_budget", prices={"gpt-4o": [0.5, 0.5]}).run(trace)
    assert result.details["cost_usd"] == pytest.approx(1.5) and result.details["calls_override"] == 1


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/GPT-4o", "gpt-4o"),
        ("gpt-4o-mini", None),  # another model, not a version of gpt-4o
        ("my-llama-70b-q4", "my-llama-*"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-sonnet-4-5", None),  # Sonnet 4.5 is another model
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
    ],
)
def test_an_override_matches_its_model_its_dated_versions_and_globs(model: str, expected: str | None) -> None:
    overrides = {
        name: ModelPrice(input=1.0, output=1.0)
        for name in ("gpt-4o", "my-llama-*", "claude-sonnet-4", "gemini-2.0-flash")
    }
    priced = price_call(model, TokenUsage(1_000_000, 0, 1_000_000), overrides=overrides)
    if expected is None:
        assert priced is None or priced.source == "price_table"
    else:
        assert priced is not None and (priced.source, priced.entry, priced.usd) == ("override", expected, 1.0)
