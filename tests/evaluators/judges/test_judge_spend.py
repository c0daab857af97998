"""The judges' own spend: the real google-genai client against the fake Gemini server, the real judge engine and
the daemon's JudgeMetrics; each reply's usage metadata (cached content and thoughts included) priced like the
agents' calls. The expected figures are genai-prices' own, from the raw body the fake sent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import genai_prices
import pytest
from prometheus_client import CollectorRegistry

from evaluators.judges import JudgeSettings, RetrySettings
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.pricing import ModelPrice
from monitor.metrics.judges import JudgeMetrics
from tests.support.fake_gemini import FakeAnswer, FakeGemini, blocked, ok
from tests.support.judge_stub import AnswerJudge

pytestmark = pytest.mark.integration  # each test starts a process or a server

MODEL = "gemini-2.5-flash"  # in genai-prices' table
UNKNOWN = "gemini-judge-in-house"  # not in it
VERDICT = {"score": 0.9, "verdict": "pass", "explanation": "fine"}


def settings_for(url: str, model: str) -> JudgeSettings:
    retry = RetrySettings(attempts=1, initial_delay=0.01, max_delay=0.01, jitter=0.0)
    return JudgeSettings(
        api_key="k", base_url=url, model=model, retry=retry, requests_per_minute=0, cache_size=0, request_timeout=5
    )


def judge(fake: FakeGemini, model: str, answers: list[FakeAnswer], prices: dict[str, ModelPrice] | None = None) -> Any:
    """Each answer as one judgement of `model` through the engine; the JudgeMetrics they fed."""
    registry = CollectorRegistry()
    metrics = JudgeMetrics(registry)
    fake.script(*answers)

    async def scenario() -> None:
        engine = JudgeEngine(
            settings_for(fake.url, model), JudgeClient(settings_for(fake.url, model)), metrics, prices=prices
        )
        try:
            for index in range(len(answers)):
                await engine.judge(AnswerJudge(), AnswerJudge().request(f"answer {index}"), name="answer_quality")
        finally:
            await engine.aclose()

    asyncio.run(scenario())
    assert len(fake.requests) == len(answers)
    return registry


def sample(registry: CollectorRegistry, name: str, model: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, {"judge": "answer_quality", "model": model, **labels})


def library_figure(answer: FakeAnswer, model: str) -> float:
    """genai-prices' price of the usage it reads itself from the body the fake sent."""
    extracted = genai_prices.extract_usage(json.loads(answer.body), provider_id="google")
    return float(genai_prices.calc_price(extracted.usage, model, provider_id="google").total_price)


ANSWERS = [
    ok(VERDICT, prompt_tokens=12_000, output_tokens=300, thoughts_tokens=900, cached_tokens=8_000, model_version=MODEL),
    ok(VERDICT, prompt_tokens=4_000, output_tokens=150, thoughts_tokens=0, cached_tokens=0, model_version=MODEL),
]


def test_judge_spend_is_genai_prices_figure_cached_content_and_thoughts_included() -> None:
    with FakeGemini() as fake:
        registry = judge(fake, MODEL, ANSWERS)
    spent = sample(registry, "agent_monitor_judge_cost_usd_total", MODEL)
    expected = sum(library_figure(answer, MODEL) for answer in ANSWERS)
    assert spent == pytest.approx(expected, rel=1e-9, abs=0)
    # the cached prompt tokens are cheaper: ignoring them (or the thoughts) gives another figure
    no_cache = genai_prices.Usage(input_tokens=12_000, output_tokens=1_200)
    assert expected != pytest.approx(
        float(genai_prices.calc_price(no_cache, MODEL, provider_id="google").total_price)
        + library_figure(ANSWERS[1], MODEL)
    )
    assert sample(registry, "agent_monitor_judge_tokens_total", MODEL, direction="input") == 16_000
    assert sample(registry, "agent_monitor_judge_tokens_total", MODEL, direction="output") == 1_350
    assert sample(registry, "agent_monitor_judge_unpriced_calls_total", MODEL) is None


def test_a_reply_without_content_still_costs_its_prompt() -> None:
    answer = blocked(prompt_tokens=5_000)
    with FakeGemini() as fake:
        registry = judge(fake, MODEL, [answer])
    expected = float(
        genai_prices.calc_price(genai_prices.Usage(input_tokens=5_000), MODEL, provider_id="google").total_price
    )
    assert sample(registry, "agent_monitor_judge_cost_usd_total", MODEL) == pytest.approx(expected, rel=1e-9)
    assert sample(registry, "agent_monitor_judge_requests_total", MODEL, status="blocked") == 1


def test_a_judge_model_without_a_price_is_counted_unpriced_never_zero() -> None:
    answers = [ok(VERDICT, prompt_tokens=900, output_tokens=40, model_version=UNKNOWN)] * 2
    with FakeGemini() as fake:
        registry = judge(fake, UNKNOWN, answers)
    assert sample(registry, "agent_monitor_judge_unpriced_calls_total", UNKNOWN) == 2
    assert sample(registry, "agent_monitor_judge_cost_usd_total", UNKNOWN) is None
    assert sample(registry, "agent_monitor_judge_tokens_total", UNKNOWN, direction="input") == 1_800


def test_a_pricing_override_prices_the_judge_model_and_wins_over_the_table() -> None:
    price = ModelPrice(input=2.0, output=10.0, cache_read=0.5)  # USD per 1M tokens
    answer = ANSWERS[0]  # 12000 prompt tokens (8000 cached), 300 + 900 output tokens
    expected = (4_000 * 2.0 + 8_000 * 0.5 + 1_200 * 10.0) / 1_000_000
    with FakeGemini() as fake:
        custom = judge(fake, UNKNOWN, [answer], prices={UNKNOWN: price})
    with FakeGemini() as fake:
        known = judge(fake, MODEL, [answer], prices={MODEL: price})
    assert sample(custom, "agent_monitor_judge_cost_usd_total", UNKNOWN) == pytest.approx(expected, rel=1e-12)
    assert sample(custom, "agent_monitor_judge_unpriced_calls_total", UNKNOWN) is None
    assert sample(known, "agent_monitor_judge_cost_usd_total", MODEL) == pytest.approx(expected, rel=1e-12)
    assert expected != pytest.approx(library_figure(answer, MODEL))
