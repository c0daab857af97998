"""JudgeEngine with a stub client: skips, retries, votes, limits, budget, cache and redaction (no network)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from evaluators.judges.base import JudgeRequest, LLMJudge
from evaluators.judges.engine import JudgeEngine, redact_text
from evaluators.judges.replies import JudgeUnavailable
from evaluators.judges.settings import JudgeSettings
from evaluators.sdk.result import EvalResult, SkipReason
from tests.support.judge_stub import AnswerJudge, OtherJudge, RecordingObserver, StubClient, garbage, verdict

T = TypeVar("T")
DAY = 86_400.0


def settings(**changes: Any) -> JudgeSettings:
    base: dict[str, Any] = {"api_key": "test-key", "requests_per_minute": 0, "max_concurrency": 4}
    return JudgeSettings(**{**base, **changes})


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def request(judge: LLMJudge, answer: str = "Paris") -> JudgeRequest:
    built = judge.request(answer)
    assert isinstance(built, JudgeRequest)
    return built


def judge_once(engine: JudgeEngine, judge: LLMJudge, answer: str = "Paris") -> EvalResult:
    return run(engine.judge(judge, request(judge, answer)))


# --- no judge model --------------------------------------------------------------------------------
def test_no_client_is_a_skip_without_a_call() -> None:
    judge = AnswerJudge()
    result = judge_once(JudgeEngine(settings(), None), judge)
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and "GEMINI_API_KEY" in result.explanation
    stub = StubClient()
    result = judge_once(JudgeEngine(settings(api_key=None), stub), judge)
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and "vertex_project" in result.explanation
    assert stub.calls == []


# --- one reply -------------------------------------------------------------------------------------
def test_a_valid_reply_is_scored_with_its_cost() -> None:
    stub, observer = StubClient([verdict(0.8, 120, 30)]), RecordingObserver()
    engine = JudgeEngine(settings(model="gemini-test"), stub, observer)
    result = run(engine.judge(AnswerJudge(), request(AnswerJudge()), name="answer_quality"))
    assert (result.score, result.passed, result.explanation) == (0.8, True, "scored 0.8")
    assert result.details == {"verdict": "pass", "judge_model": "gemini-test", "input_tokens": 120, "output_tokens": 30}
    assert len(stub.calls) == 1 and stub.calls[0].model == "gemini-test"
    assert "Score the answer." in stub.calls[0].system and "Paris" in stub.calls[0].prompt
    assert observer.requests[0][:3] == ("answer_quality", "gemini-test", "ok")
    assert observer.requests[0][4:] == (120, 30)
    assert engine.in_flight == 0 and engine.active == 0


def test_the_judge_model_param_wins_and_the_threshold_decides() -> None:
    stub = StubClient([verdict(0.6)])
    judge = AnswerJudge(model="gemini-pro-test").with_threshold(0.7)
    assert isinstance(judge, LLMJudge)
    result = judge_once(JudgeEngine(settings(), stub), judge)
    assert (result.score, result.passed, result.details["judge_model"]) == (0.6, False, "gemini-pro-test")
    assert stub.calls[0].model == "gemini-pro-test"


def test_a_malformed_reply_is_asked_again_once_with_the_error() -> None:
    stub, observer = StubClient([garbage('{"score": 7}'), verdict(0.9)]), RecordingObserver()
    result = judge_once(JudgeEngine(settings(), stub, observer), AnswerJudge())
    assert (result.score, result.passed) == (0.9, True)
    assert len(stub.calls) == 2
    retry = stub.calls[1].prompt
    assert retry.startswith(stub.calls[0].prompt)
    assert "did not validate" in retry and "score" in retry and "answer again with JSON only" in retry
    assert observer.statuses == ["invalid_output", "ok"]
    assert (result.details["input_tokens"], result.details["output_tokens"]) == (20, 10)  # both replies


def test_a_reply_malformed_twice_is_a_skip_and_no_score() -> None:
    stub = StubClient([garbage(), garbage("```json\n{}\n```")])
    result = judge_once(JudgeEngine(settings(), stub), AnswerJudge())
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and result.score is None
    assert "invalid" in result.explanation and len(stub.calls) == 2


def test_judge_unavailable_is_a_skip_naming_the_status() -> None:
    stub, observer = StubClient([JudgeUnavailable("http_503", "overloaded")]), RecordingObserver()
    result = judge_once(JudgeEngine(settings(), stub, observer), AnswerJudge())
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and "http_503" in result.explanation
    assert observer.statuses == ["http_503"]


def test_an_unexpected_client_error_is_a_skip() -> None:
    stub, observer = StubClient([RuntimeError("boom")]), RecordingObserver()
    result = judge_once(JudgeEngine(settings(), stub, observer), AnswerJudge())
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and "boom" in result.explanation
    assert observer.statuses == ["error"]


def test_the_judgement_timeout_is_a_skip() -> None:
    stub, observer = StubClient(delay=5.0), RecordingObserver()
    result = judge_once(JudgeEngine(settings(judgement_timeout=0.05), stub, observer), AnswerJudge())
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and "timed out after 0.05 s" in result.explanation
    assert observer.statuses == ["timeout"]


def test_a_judge_whose_to_result_fails_gets_an_error_skip() -> None:
    class Label(BaseModel):
        label: str

    class LabelJudge(AnswerJudge):
        name = "label_judge"
        response_schema = Label

    result = judge_once(JudgeEngine(settings(), StubClient([garbage('{"label": "x"}')])), LabelJudge())
    assert result.skip_reason is SkipReason.ERROR and "no score" in result.explanation


# --- samples ---------------------------------------------------------------------------------------
def test_three_samples_are_combined_by_majority_vote() -> None:
    stub = StubClient([verdict(0.9), verdict(0.2), verdict(0.8)])
    result = judge_once(JudgeEngine(settings(), stub), AnswerJudge(num_samples=3))
    assert len(stub.calls) == 3
    assert (result.score, result.passed) == (0.8, True)
    assert result.details["votes"] == {"pass": 2, "fail": 1, "samples": 3}
    assert result.details["input_tokens"] == 30


def test_an_unavailable_sample_does_not_vote() -> None:
    stub = StubClient([verdict(0.1), JudgeUnavailable("http_500", ""), verdict(0.3)])
    result = judge_once(JudgeEngine(settings(), stub), AnswerJudge(num_samples=3))
    assert (result.score, result.passed, result.details["votes"]["fail"]) == (0.1, False, 2)


# --- concurrency and rate --------------------------------------------------------------------------
def test_the_global_concurrency_limit_holds() -> None:
    stub = StubClient(delay=0.01)
    engine = JudgeEngine(settings(max_concurrency=2), stub)
    judge = AnswerJudge()

    async def scenario() -> list[EvalResult]:
        return await asyncio.gather(*(engine.judge(judge, request(judge, f"answer {i}")) for i in range(10)))

    results = run(scenario())
    assert all(r.score == 1.0 for r in results) and len(stub.calls) == 10
    assert stub.max_in_flight == 2 and engine.in_flight == 0


def test_a_judge_concurrency_limit_holds_beside_the_global_one() -> None:
    stub = StubClient(delay=0.01)
    engine = JudgeEngine(settings(max_concurrency=4), stub)
    slow, other = AnswerJudge(max_concurrency=1), OtherJudge()

    async def scenario() -> None:
        jobs = [engine.judge(slow, request(slow, f"a{i}")) for i in range(6)]
        jobs += [engine.judge(other, request(other, f"b{i}")) for i in range(12)]
        await asyncio.gather(*jobs)

    run(scenario())
    assert stub.max_by_system[request(slow).system] == 1
    assert stub.max_in_flight == 4 and len(stub.calls) == 18


def test_a_judge_rate_limit_spaces_its_requests() -> None:
    clock = [0.0]

    async def fake_sleep(seconds: float) -> None:
        clock[0] += seconds
        await asyncio.sleep(0)

    stub = StubClient(clock=lambda: clock[0])
    engine = JudgeEngine(settings(), stub, monotonic=lambda: clock[0], sleep=fake_sleep)
    judge = AnswerJudge(requests_per_minute=30)

    async def scenario() -> None:
        await asyncio.gather(*(engine.judge(judge, request(judge, f"x{i}")) for i in range(4)))

    run(scenario())
    assert [c.at for c in stub.calls] == pytest.approx([0.0, 2.0, 4.0, 6.0])


# --- budget ----------------------------------------------------------------------------------------
def test_the_budget_stops_calls_logs_once_and_resets_next_utc_day(caplog: pytest.LogCaptureFixture) -> None:
    now = [20_000 * DAY + 3600.0]
    stub, observer = StubClient(default=verdict(1.0, 15, 5)), RecordingObserver()
    engine = JudgeEngine(settings(daily_token_budget=30), stub, observer, clock=lambda: now[0])
    judge = AnswerJudge()
    with caplog.at_level(logging.WARNING, logger="evaluators.judges.engine"):
        first = [judge_once(engine, judge, f"q{i}") for i in range(4)]
    assert [r.skip_reason for r in first] == [None, None, SkipReason.BUDGET_EXHAUSTED, SkipReason.BUDGET_EXHAUSTED]
    assert len(stub.calls) == 2 and "daily token budget" in first[2].explanation
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == len(caplog.records) == 1
    assert observer.budgets == [("answer_judge", 10.0), ("answer_judge", 0.0)]
    now[0] += DAY  # the next UTC day
    assert judge_once(engine, judge, "q-next-day").score == 1.0 and len(stub.calls) == 3


def test_a_judge_budget_stops_only_that_judge() -> None:
    stub, observer = StubClient(default=verdict(1.0, 15, 5)), RecordingObserver()
    engine = JudgeEngine(settings(), stub, observer)
    thrifty, other = AnswerJudge(daily_token_budget=20), OtherJudge()
    assert judge_once(engine, thrifty, "a").score == 1.0
    assert judge_once(engine, thrifty, "b").skip_reason is SkipReason.BUDGET_EXHAUSTED
    assert judge_once(engine, other, "c").score == 1.0
    assert observer.budgets == [("answer_judge", 0.0), ("other_judge", float("inf"))]
    assert engine.remaining_tokens("answer_judge") == 0.0 and engine.remaining_tokens() == float("inf")


# --- cache -----------------------------------------------------------------------------------------
def test_the_cache_answers_identical_content_and_not_other_content() -> None:
    stub, observer = StubClient(default=verdict(0.7)), RecordingObserver()
    engine = JudgeEngine(settings(), stub, observer)
    judge = AnswerJudge()
    first, second = judge_once(engine, judge, "same"), judge_once(engine, judge, "same")
    assert len(stub.calls) == 1
    assert (second.score, second.passed, second.details["input_tokens"]) == (0.7, True, 0)
    assert second.details["cached"] is True
    assert "cached" not in first.details and observer.statuses == ["ok", "cached"]
    judge_once(engine, judge, "different")
    assert len(stub.calls) == 2


def test_the_cache_does_not_keep_skips_and_can_be_off() -> None:
    stub = StubClient([JudgeUnavailable("timeout", "")], default=verdict(0.7))
    engine = JudgeEngine(settings(), stub)
    assert judge_once(engine, AnswerJudge(), "x").is_skipped
    assert judge_once(engine, AnswerJudge(), "x").score == 0.7
    off = StubClient(default=verdict(0.7))
    engine = JudgeEngine(settings(cache_size=0), off)
    judge_once(engine, AnswerJudge(), "x")
    judge_once(engine, AnswerJudge(), "x")
    assert len(off.calls) == 2


# --- redaction -------------------------------------------------------------------------------------
SECRET_ANSWER = "mail jane.doe@example.com, key sk-proj-abcdefghijklmnopqrstuvwxyz0123"


def test_redaction_masks_pii_and_secrets_before_the_prompt_leaves() -> None:
    stub = StubClient()
    judge_once(JudgeEngine(settings(), stub), AnswerJudge(), SECRET_ANSWER)
    sent = stub.calls[0].prompt
    assert "jane.doe@example.com" not in sent and "abcdefghijklmnopqrstuvwxyz" not in sent
    assert "[redacted email: j***@example.com]" in sent and "[redacted openai_key: sk-proj-****" in sent
    plain = StubClient()
    judge_once(JudgeEngine(settings(redact=False), plain), AnswerJudge(), SECRET_ANSWER)
    assert "jane.doe@example.com" in plain.calls[0].prompt


def test_redaction_hides_a_private_key_body() -> None:
    body = "MIIEowIBAAKCAQEAx1y2z3" * 3
    for newline in ("\n", "\\n"):
        lines = ["-----BEGIN RSA PRIVATE KEY-----", body, body, "-----END RSA PRIVATE KEY-----"]
        text = f"key: {newline.join(lines)} ok"
        redacted = redact_text(text)
        assert body not in redacted and "END RSA" not in redacted
        assert redacted.startswith("key: [redacted private_key:") and redacted.endswith("] ok")
    assert redact_text("nothing here") == "nothing here"


# --- lifecycle -------------------------------------------------------------------------------------
def test_aclose_closes_the_client_and_later_judgements_skip() -> None:
    stub = StubClient()
    engine = JudgeEngine(settings(), stub)
    run(engine.aclose())
    assert stub.closed
    result = judge_once(engine, AnswerJudge())
    assert result.skip_reason is SkipReason.JUDGE_UNAVAILABLE and stub.calls == []
