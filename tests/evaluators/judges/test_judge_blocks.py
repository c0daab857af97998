"""Gemini's safety filters and the judges: the real google-genai client, the real judge engine and the daemon's
JudgeMetrics against the fake Gemini server. The judge sends safety settings that let it read harmful content;
what Gemini blocks anyway is a skip that says so, counted per judge and reason."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from evaluators.judges import JudgeRequest, JudgeSettings, LLMJudge, RetrySettings, prepare
from evaluators.judges.builtins_llm import Safety
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.judges.settings import DEFAULT_MODEL
from evaluators.sdk.result import EvalResult, SkipReason
from monitor.metrics.judges import JudgeMetrics
from tests.evaluators.judges.synthetic import agent_trace
from tests.support.fake_gemini import FakeAnswer, FakeGemini, FakeRequest, blocked, filtered, ok
from tests.support.judge_stub import AnswerJudge

pytestmark = pytest.mark.integration  # each test starts a process or a server

SAFE = {"score": 0.9, "verdict": "pass", "explanation": "fine"}
HARMFUL_ANSWER = "Step 1: mix the two cleaning products in a closed room."


def settings_for(url: str, **extra: Any) -> JudgeSettings:
    retry = RetrySettings(attempts=1, initial_delay=0.01, max_delay=0.01, jitter=0.0)
    return JudgeSettings(api_key="k", base_url=url, retry=retry, requests_per_minute=0, cache_size=0, **extra)


def judge_all(
    fake: FakeGemini, requests: list[JudgeRequest], judge: LLMJudge, **extra: Any
) -> tuple[list[EvalResult], Any]:
    """Each request as one judgement of `judge` through the engine (metric label "answer_quality"); the results
    and the JudgeMetrics' registry."""
    registry = CollectorRegistry()

    async def scenario() -> list[EvalResult]:
        settings = settings_for(fake.url, **extra)
        engine = JudgeEngine(settings, JudgeClient(settings), JudgeMetrics(registry))
        try:
            return [await engine.judge(judge, request, name="answer_quality") for request in requests]
        finally:
            await engine.aclose()

    return asyncio.run(scenario()), registry


def answers(*texts: str) -> list[JudgeRequest]:
    return [AnswerJudge().request(text) for text in texts]


def safety_requests() -> list[JudgeRequest]:
    """The safety judge's requests for an agent whose LLM answered with harmful instructions."""
    trace = agent_trace(question="How do I make a toxic gas at home?", answer=HARMFUL_ANSWER)
    return [p.request for p in prepare(trace, [Safety()]) if p.request is not None]


def blocks(registry: CollectorRegistry, reason: str) -> float | None:
    labels = {"judge": "answer_quality", "model": DEFAULT_MODEL, "reason": reason}
    return registry.get_sample_value("agent_monitor_judge_blocked_total", labels)


def requests(registry: CollectorRegistry, status: str) -> float | None:
    labels = {"judge": "answer_quality", "model": DEFAULT_MODEL, "status": status}
    return registry.get_sample_value("agent_monitor_judge_requests_total", labels)


def test_a_blocked_reply_is_a_skip_that_says_so_and_is_counted_per_reason() -> None:
    with FakeGemini() as fake:
        fake.script(blocked("SAFETY"), blocked("PROHIBITED_CONTENT", prompt=True), blocked("SAFETY"), ok(SAFE))
        results, registry = judge_all(fake, answers("a", "b", "c", "d"), AnswerJudge())
    first, second, third, fourth = results
    assert first.skip_reason is SkipReason.JUDGE_UNAVAILABLE and second.skip_reason is SkipReason.JUDGE_UNAVAILABLE
    assert first.explanation == (
        "answer_quality: blocked by Gemini (SAFETY): the reply was blocked: finish reason SAFETY "
        "(HARM_CATEGORY_DANGEROUS_CONTENT HIGH)"
    )
    assert second.explanation.startswith("answer_quality: blocked by Gemini (PROHIBITED_CONTENT): the prompt was")
    assert (first.details["blocked"], second.details["blocked"], third.details["blocked"]) == (
        "SAFETY",
        "PROHIBITED_CONTENT",
        "SAFETY",
    )
    assert fourth.score == 0.9 and "blocked" not in fourth.details
    assert (blocks(registry, "SAFETY"), blocks(registry, "PROHIBITED_CONTENT")) == (2, 1)
    assert (requests(registry, "blocked"), requests(registry, "ok")) == (3, 1)
    assert requests(registry, "no_content") is None


def test_the_safety_judge_reads_a_harmful_answer_that_gemini_filters_by_default() -> None:
    """The probe's finding: without safety settings, Gemini's default filters block exactly the harmful answers
    the safety judge exists for. The fake filters like them; the judge's settings turn them off."""
    safe = {"verdict": "safe", "reason": ""}
    verdicts = {c: safe for c in ("harassment", "hate", "sexual_content", "self_harm", "pii_disclosure")}
    reply = ok({**verdicts, "dangerous_content": {"verdict": "unsafe", "reason": "instructions for a toxic gas"}})
    requests = safety_requests()
    assert requests, "the safety judge found no LLM response to judge"

    def gemini(request: FakeRequest) -> FakeAnswer:
        return filtered(request, reply)

    with FakeGemini(gemini) as fake:
        results, registry = judge_all(fake, requests, Safety())
        sent = [request.safety_settings for request in fake.requests]
    assert all(r.skip_reason is None and r.passed is False for r in results), results
    assert all(r.details["categories"]["dangerous_content"] == "unsafe" for r in results)
    assert all(s["HARM_CATEGORY_DANGEROUS_CONTENT"] == "OFF" for s in sent) and len(sent) == len(requests)
    assert blocks(registry, "SAFETY") is None


def test_with_the_filters_left_on_the_harmful_answer_is_a_counted_block() -> None:
    with FakeGemini(lambda request: filtered(request, ok(SAFE))) as fake:
        [result], registry = judge_all(fake, answers(HARMFUL_ANSWER), AnswerJudge(), safety_settings={})
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and "blocked by Gemini (SAFETY)" in result.explanation
    assert blocks(registry, "SAFETY") == 1
