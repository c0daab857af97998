"""Every builtin judge through the real google-genai client and the engine, against the fake Gemini server.

The fake answers each request from the response schema the client actually sent, so this fails when a
judge's schema cannot be sent, when the sent schema and the judge's pydantic model disagree, or when a
valid reply does not become a score.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from evaluators.judges import DEFAULT_MODEL, JudgeSettings, LLMJudge, prepare
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.sdk import builtin, list_builtins
from tests.evaluators.judges.synthetic import agent_trace
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok, slow
from tests.support.schema_reply import reply_for

RUBRICS = [{"id": "concise", "text": "The answer is concise."}, {"id": "cites", "text": "The answer cites a source."}]
# session-level judges judge a Session, not a trace: tests/evaluators/judges/test_session_judges_on_the_wire.py
JUDGES = sorted(
    i.name for i in list_builtins() if i.kind == "llm_judge" and not i.needs_ground_truth and i.level != "session"
)


def answer_from_schema(request: FakeRequest):
    schema = request.generation_config.get("responseSchema")
    assert schema, "the client sent no response schema"
    return ok(reply_for(schema, text="concise", number=1.0))


def make(name: str) -> LLMJudge:
    judge = builtin(name, **({"rubrics": RUBRICS} if name.startswith("rubric") else {}))
    assert isinstance(judge, LLMJudge)
    return judge


def test_the_catalog_has_the_judges_the_issue_names() -> None:
    assert {
        "hallucination",
        "task_completion",
        "safety",
        "faithfulness",
        "answer_relevance",
        "context_relevance",
    } <= set(JUDGES)
    assert {"helpfulness", "coherence", "instruction_following", "tone", "completeness"} <= set(JUDGES)
    assert {"rubric_response_quality", "rubric_tool_use_quality", "reasoning_quality", "error_recovery"} <= set(JUDGES)
    assert "path_efficiency" in JUDGES


@pytest.mark.integration
@pytest.mark.parametrize("name", JUDGES)
def test_a_builtin_judge_scores_through_the_real_client(name: str) -> None:
    trace = agent_trace(documents=["Paris is the capital of France."], tool_error=None)
    if name == "error_recovery":
        trace = agent_trace(tool_error="lookup timed out")
    judge = make(name)
    prepared = [p for p in prepare(trace, [judge]) if p.request is not None]
    assert prepared, f"{name} found nothing to judge in the synthetic trace"

    async def run(url: str):
        settings = JudgeSettings(api_key="k", base_url=url, requests_per_minute=0)
        engine = JudgeEngine(settings, JudgeClient(settings))
        try:
            return [await engine.judge(judge, p.request, name=name) for p in prepared]
        finally:
            await engine.aclose()

    with FakeGemini(answer_from_schema) as fake:
        results = asyncio.run(run(fake.url))
        sent = fake.requests
    assert len(sent) == len(prepared)
    assert all(not r.is_skipped and r.score is not None and 0.0 <= r.score <= 1.0 for r in results), results
    assert all(r.details.get("judge_model") == DEFAULT_MODEL for r in results)


def judge_all(judge: LLMJudge, name: str, requests: list, settings: JudgeSettings):
    async def run():
        engine = JudgeEngine(settings, JudgeClient(settings))
        try:
            return await asyncio.gather(*(engine.judge(judge, r, name=name) for r in requests))
        finally:
            await engine.aclose()

    return asyncio.run(run())


@pytest.mark.integration
@pytest.mark.parametrize("name", JUDGES)
def test_malformed_output_is_asked_again_once_then_scored_or_skipped(name: str) -> None:
    trace = agent_trace(documents=["Paris is the capital of France."], tool_error="lookup timed out")
    judge = make(name)
    request = next(p.request for p in prepare(trace, [judge]) if p.request is not None)
    with FakeGemini(answer_from_schema) as fake:
        settings = JudgeSettings(api_key="k", base_url=fake.url, requests_per_minute=0, cache_size=0)
        fake.script(ok("the answer is fine"))  # not JSON: the engine asks again with the validation error
        [retried] = judge_all(judge, name, [request], settings)
        assert len(fake.requests) == 2 and "did not validate" in fake.requests[1].prompt
        fake.script(ok({"unexpected": True}), ok("[]"))  # wrong twice: a skip, never a score
        [skipped] = judge_all(judge, name, [request], settings)
    assert not retried.is_skipped and retried.score is not None
    assert skipped.skip_reason == "judge_unavailable" and skipped.score is None and "invalid" in skipped.explanation


@pytest.mark.integration
def test_concurrency_and_rate_limits_hold_at_the_server() -> None:
    judge = make("answer_relevance")
    requests = [
        next(p.request for p in prepare(agent_trace(question=f"Question {n}?"), [judge]) if p.request is not None)
        for n in range(9)
    ]
    with FakeGemini(lambda r: slow(0.6, answer_from_schema(r))) as fake:  # long enough for three to overlap
        settings = JudgeSettings(api_key="k", base_url=fake.url, max_concurrency=3, requests_per_minute=0)
        results = judge_all(judge, "answer_relevance", requests, settings)
        assert fake.max_in_flight == 3  # nine judgements, never more than three at the API at once
        fake.reset()
        settings = JudgeSettings(api_key="k", base_url=fake.url, requests_per_minute=240, cache_size=0)
        judge_all(judge, "answer_relevance", requests[:4], settings)
        arrivals = [r.time for r in fake.requests]
    assert all(not r.is_skipped for r in results)
    # 240 a minute: one request every 0.25 s at most. The tokens are 0.25 s apart; a loaded host may delay one
    # request's sending (not advance it), so arrivals are held to 0.15 s apart and 0.65 s from first to last.
    assert len(arrivals) == 4 and all(b - a >= 0.15 for a, b in itertools.pairwise(arrivals))
    assert arrivals[-1] - arrivals[0] >= 0.65
