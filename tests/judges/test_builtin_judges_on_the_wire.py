"""Every builtin judge through the real google-genai client and the engine, against the fake Gemini server.

The fake answers each request from the response schema the client actually sent, so this fails when a
judge's schema cannot be sent, when the sent schema and the judge's pydantic model disagree, or when a
valid reply does not become a score.
"""

from __future__ import annotations

import asyncio

import pytest

from evaluators.judges import JudgeSettings, LLMJudge, prepare
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.sdk import builtin, list_builtins
from tests.judges.fake_gemini import FakeGemini, FakeRequest, ok
from tests.judges.schema_reply import reply_for
from tests.judges.synthetic import agent_trace

RUBRICS = [{"id": "concise", "text": "The answer is concise."}, {"id": "cites", "text": "The answer cites a source."}]
JUDGES = sorted(i.name for i in list_builtins() if i.kind == "llm_judge" and not i.needs_ground_truth)


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
    assert all(r.details.get("judge_model") == "gemini-2.5-flash" for r in results)
