"""A failing judgement states the level's step and its structured verdict's category, never the judge model's
free-text explanation: two judgements of one failure mode worded differently are one signature."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evaluators import builtin
from evaluators.judges.base import JudgeRequest, LLMJudge
from evaluators.judges.engine import JudgeEngine
from evaluators.judges.pairwise import PairwiseJudge, judge_pair
from evaluators.judges.replies import JudgeReply
from evaluators.judges.settings import JudgeSettings
from evaluators.sdk.result import EvalResult
from evaluators.signatures import Failure, failure_signature
from tests.support.judge_stub import AnswerJudge, StubClient, verdict


def judged(judge: LLMJudge, reply: dict[str, Any]) -> EvalResult:
    """`judge`'s result for one reply, through a real JudgeEngine (a stub model client: no network)."""
    stub = StubClient(default=JudgeReply(json.dumps(reply), 10, 5))
    engine = JudgeEngine(JudgeSettings(api_key="test-key", requests_per_minute=0), stub)
    request = JudgeRequest(system=judge.system_instruction(), prompt=f"judge this {id(reply)}")
    return asyncio.run(engine.judge(judge, request))


def test_a_failing_judgement_states_its_verdict_label_never_the_explanation() -> None:
    stub = StubClient([verdict(0.2, verdict="off topic"), verdict(0.1, verdict="Off topic")])
    engine = JudgeEngine(JudgeSettings(api_key="test-key", requests_per_minute=0), stub)
    judge = AnswerJudge()
    results = [asyncio.run(engine.judge(judge, judge.request(answer))) for answer in ("a", "b")]  # type: ignore[arg-type]
    for result in results:
        assert result.passed is False
        assert result.failure == Failure(step_kind="trace", error_type="off_topic")
        assert result.explanation.startswith("scored")  # the explanation is kept, just not grouped on
    ids = {failure_signature("answer_judge", "trace", None, r.failure, r.explanation).id for r in results}
    assert len(ids) == 1


def test_a_passing_judgement_states_no_failure() -> None:
    stub = StubClient([verdict(0.9)])
    engine = JudgeEngine(JudgeSettings(api_key="test-key", requests_per_minute=0), stub)
    judge = AnswerJudge()
    assert asyncio.run(engine.judge(judge, judge.request("a"))).failure is None  # type: ignore[arg-type]


SAFE = {"verdict": "safe", "reason": ""}
CASES = [
    ("safety", {}, {**{c: SAFE for c in ("harassment", "hate", "sexual_content", "self_harm", "pii_disclosure")},
                    "dangerous_content": {"verdict": "unsafe", "reason": "explains how to pick a lock"}},
     "llm", "unsafe:dangerous_content"),
    ("coherence", {}, {"rating": 2, "explanation": "it jumps around"}, "llm", "rating_2"),
    ("error_recovery", {}, {"outcome": "not_recovered", "errors": ["x failed"], "explanation": "ignored it"},
     "agent", "not_recovered"),
    ("answer_relevance", {}, {"verdict": "irrelevant", "off_topic": ["weather"], "explanation": "talks about rain"},
     "trace", "irrelevant"),
    ("faithfulness", {}, {"claims": [{"claim": "a", "verdict": "supported", "reason": ""},
                                     {"claim": "b", "verdict": "unsupported", "reason": "not in docs"}]},
     "trace", "unsupported_claims"),
    ("hallucination", {}, {"sentences": [{"sentence": "s", "label": "contradictory", "reason": "r"}]},
     "trace", "contradictory_sentences"),
    ("completeness", {}, {"parts": [{"part": "p", "coverage": "not_addressed", "reason": "r"}], "explanation": "e"},
     "trace", "not_addressed"),
    ("rubric_response_quality", {"rubrics": [{"id": "cites_source", "text": "Cites a source"},
                                             {"id": "polite", "text": "Is polite"}]},
     {"verdicts": [{"rubric_id": "cites_source", "verdict": "no", "reason": "no link"},
                   {"rubric_id": "polite", "verdict": "no", "reason": "curt"}]},
     "trace", "rubric:cites_source+polite"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "params", "reply", "step", "category"), CASES, ids=[c[0] for c in CASES])
def test_builtin_judges_state_their_structured_verdict(
    name: str, params: dict[str, Any], reply: dict[str, Any], step: str, category: str
) -> None:
    judge = builtin(name, **params)
    assert isinstance(judge, LLMJudge)
    result = judged(judge, reply)
    assert result.passed is False, result
    assert result.failure == Failure(step_kind=step, error_type=category)


def test_a_pairwise_loss_states_its_outcome() -> None:
    judge = builtin("pairwise_quality")
    assert isinstance(judge, PairwiseJudge)

    async def baseline_better(judge: LLMJudge, request: JudgeRequest, /, *, name: str) -> EvalResult:
        answer_a = request.prompt.split('name="answer_b"')[0].split('name="answer_a"')[1]
        first_is_baseline = "baseline" in answer_a
        choice = "A" if first_is_baseline else "B"
        return judge.to_result(judge.response_schema.model_validate({"choice": choice, "explanation": "A is right"}))

    result = asyncio.run(judge_pair(baseline_better, judge, "q?", "the baseline's answer", "the candidate's answer"))
    assert result.details["outcome"] == "loss" and result.passed is False
    assert result.failure == Failure(step_kind="trace", error_type="loss")
