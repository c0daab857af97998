"""Judgements the judges' limits cannot take: a wait for a rate or concurrency limit past `judgement_timeout` is a
`rate_limited` skip naming the limit (told to the observer and counted in the metrics), a spent budget is counted
with its setting, and the engine shows the requests waiting behind its limits."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from evaluators.judges.base import JudgeRequest, LLMJudge
from evaluators.judges.engine import JudgeEngine
from evaluators.judges.settings import JudgeSettings
from evaluators.sdk.result import EvalResult, SkipReason
from monitor.metrics.judges import JudgeMetrics
from tests.support.judge_stub import AnswerJudge, RecordingObserver, StubClient, verdict


def settings(**changes: Any) -> JudgeSettings:
    return JudgeSettings(**{"api_key": "test-key", "requests_per_minute": 0, "max_concurrency": 4, **changes})


def request(judge: LLMJudge, answer: str) -> JudgeRequest:
    built = judge.request(answer)
    assert isinstance(built, JudgeRequest)
    return built


def test_a_judgement_waiting_for_the_rate_limit_past_its_timeout_is_a_rate_limited_skip() -> None:
    stub, observer = StubClient(), RecordingObserver()
    engine = JudgeEngine(settings(requests_per_minute=1, judgement_timeout=0.3), stub, observer)
    judge = AnswerJudge()

    async def scenario() -> tuple[EvalResult, EvalResult, int]:
        first = await engine.judge(judge, request(judge, "a"))
        second = asyncio.create_task(engine.judge(judge, request(judge, "b")))  # its token is 60 s away
        await asyncio.sleep(0.1)
        waiting = engine.waiting
        return first, await second, waiting

    first, second, waiting = asyncio.run(scenario())
    assert first.score == 1.0 and len(stub.calls) == 1  # the second was never sent
    assert waiting == 1 and engine.waiting == 0
    assert second.skip_reason is SkipReason.RATE_LIMITED
    assert "waiting for judges.requests_per_minute" in (second.explanation or "")
    assert observer.capacity == [("answer_judge", "judges.requests_per_minute")]


def test_a_wait_for_a_judges_own_concurrency_is_rate_limited_and_a_slow_reply_is_not() -> None:
    # The call in flight holds its slot for 1 s after its timeout, so that the queued judgement's own timeout
    # (started a moment later) always comes while it waits, however loaded the host.
    stub, observer = StubClient(delay=5.0, abort_delay=1.0), RecordingObserver()
    engine = JudgeEngine(settings(judgement_timeout=0.3), stub, observer)
    judge = AnswerJudge(max_concurrency=1)

    async def scenario() -> list[EvalResult]:
        return list(await asyncio.gather(*(engine.judge(judge, request(judge, x)) for x in ("a", "b"))))

    in_flight, queued = asyncio.run(scenario())
    assert in_flight.skip_reason is SkipReason.JUDGE_UNAVAILABLE  # the model was slow: not a capacity problem
    assert queued.skip_reason is SkipReason.RATE_LIMITED and "params.max_concurrency" in (queued.explanation or "")
    assert observer.capacity == [("answer_judge", "params.max_concurrency")] and len(stub.calls) == 1


def test_capacity_skips_and_the_backlog_are_in_the_metrics() -> None:
    registry = CollectorRegistry()
    metrics = JudgeMetrics(registry)
    stub = StubClient(default=verdict(1.0, 15, 5))
    engine = JudgeEngine(settings(daily_token_budget=20, requests_per_minute=1, judgement_timeout=0.3), stub, metrics)
    metrics.observe_waiting(engine)
    judge = AnswerJudge()

    async def scenario() -> tuple[list[EvalResult], float | None]:
        first = await engine.judge(judge, request(judge, "a"))  # spends the budget
        spent = await engine.judge(judge, request(judge, "b"))
        return [first, spent], registry.get_sample_value("agent_monitor_judge_waiting")

    (first, spent), waiting = asyncio.run(scenario())
    assert first.score == 1.0 and spent.skip_reason is SkipReason.BUDGET_EXHAUSTED
    labels = {"judge": "answer_judge", "limit": "judges.daily_token_budget"}
    assert registry.get_sample_value("agent_monitor_judge_capacity_skips_total", labels) == 1.0
    assert waiting == 0.0

    engine = JudgeEngine(settings(requests_per_minute=1, judgement_timeout=0.3), StubClient(), metrics)
    metrics.observe_waiting(engine)

    async def backlog() -> tuple[float | None, EvalResult]:
        await engine.judge(judge, request(judge, "c"))
        late = asyncio.create_task(engine.judge(judge, request(judge, "d")))
        await asyncio.sleep(0.1)
        return registry.get_sample_value("agent_monitor_judge_waiting"), await late

    held, late = asyncio.run(backlog())
    assert held == 1.0 and late.skip_reason is SkipReason.RATE_LIMITED
    labels = {"judge": "answer_judge", "limit": "judges.requests_per_minute"}
    assert registry.get_sample_value("agent_monitor_judge_capacity_skips_total", labels) == 1.0
