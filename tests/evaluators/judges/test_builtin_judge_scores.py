"""Builtin LLM judges: constructed replies of each response schema → score, explanation and details."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from evaluators import builtin
from evaluators.judges import LLMJudge
from evaluators.sdk.result import EvalResult

RUBRICS = [{"id": "temp", "text": "Gives the temperature."}, {"id": "gear", "text": "Suggests clothing."}]


def judge(name: str, **params: Any) -> LLMJudge:
    made = builtin(name, **params)
    assert isinstance(made, LLMJudge)
    return made


def score(name: str, reply: dict[str, Any], **params: Any) -> EvalResult:
    """The judge's result for a reply given as the JSON the model would send (validated like the engine does)."""
    made = judge(name, **params)
    parsed = made.response_schema.model_validate(reply)
    return made.to_result(parsed).resolve(made.threshold)


def sentence(text: str, label: str) -> dict[str, str]:
    return {"sentence": text, "label": label, "reason": f"because {label}"}


def test_hallucination_scores_the_share_of_grounded_sentences_and_names_the_others() -> None:
    reply = {
        "sentences": [
            sentence("It's 18°C in Paris.", "supported"),
            sentence("It is raining lightly.", "supported"),
            sentence("Wear a waterproof jacket.", "supported"),
            sentence("Tomorrow it will snow.", "unsupported"),
        ]
    }
    result = score("hallucination", reply)
    assert result.score == 0.75 and result.passed is False  # threshold 0.8
    assert "3 of 4 sentences" in result.explanation and "Tomorrow it will snow." in result.explanation
    assert "It's 18°C" not in result.explanation
    assert result.details["counts"] == {"supported": 3, "unsupported": 1}
    assert [s["label"] for s in result.details["sentences"]] == ["supported"] * 3 + ["unsupported"]


def test_hallucination_counts_not_applicable_as_grounded_and_flags_contradictions() -> None:
    reply = {"sentences": [sentence("Hope this helps!", "not_applicable"), sentence("It is 30°C.", "contradictory")]}
    result = score("hallucination", reply)
    assert result.score == 0.5 and "contradictory: 'It is 30°C.'" in result.explanation
    assert score("hallucination", {"sentences": [sentence("Hi!", "not_applicable")]}).score == 1.0


def test_hallucination_needs_at_least_one_sentence() -> None:
    with pytest.raises(ValidationError):
        judge("hallucination").response_schema.model_validate({"sentences": []})


@pytest.mark.parametrize(("outcome", "expected"), [("completed", 1.0), ("partial", 0.5), ("failed", 0.0)])
def test_task_completion_scores_the_outcome_and_keeps_criterion_verdicts(outcome: str, expected: float) -> None:
    reply = {
        "criteria": [
            {"criterion": "States the temperature.", "verdict": "met", "reason": "18°C"},
            {"criterion": "Suggests clothing.", "verdict": "not_met", "reason": "no advice"},
        ],
        "outcome": outcome,
        "explanation": "The weather is given, advice is missing.",
    }
    result = score("task_completion", reply)
    assert result.score == expected and result.details["verdict"] == outcome
    assert [c["verdict"] for c in result.details["criteria"]] == ["met", "not_met"]
    assert result.explanation.startswith(f"{outcome}: ") and "not_met: Suggests clothing." in result.explanation


def test_faithfulness_scores_supported_claims_and_an_answer_without_claims_is_faithful() -> None:
    claims = [
        {"claim": "Paris is the capital.", "verdict": "supported", "reason": "doc 1"},
        {"claim": "It has 2M people.", "verdict": "unsupported", "reason": "no doc"},
        {"claim": "It is in Spain.", "verdict": "contradicted", "reason": "doc 1"},
        {"claim": "It is on the Seine.", "verdict": "supported", "reason": "doc 2"},
    ]
    result = score("faithfulness", {"claims": claims})
    assert result.score == 0.5 and result.passed is False
    assert "unsupported: 'It has 2M people.'" in result.explanation and "It is in Spain." in result.explanation
    assert score("faithfulness", {"claims": []}).score == 1.0


def test_context_relevance_is_the_mean_over_retrievals_of_the_relevant_share() -> None:
    documents = [
        {"retrieval": 1, "document": 1, "relevant": True, "reason": "on topic"},
        {"retrieval": 1, "document": 2, "relevant": False, "reason": "bananas"},
        {"retrieval": 1, "document": 2, "relevant": False, "reason": "repeated entry"},
        {"retrieval": 2, "document": 1, "relevant": True, "reason": "on topic"},
    ]
    result = score("context_relevance", {"documents": documents})
    assert result.score == 0.75
    assert result.details["retrievals"] == [
        {"retrieval": 1, "relevant_share": 0.5},
        {"retrieval": 2, "relevant_share": 1.0},
    ]
    assert "retrieval 1 document 2" in result.explanation


@pytest.mark.parametrize(("verdict", "expected"), [("relevant", 1.0), ("partially_relevant", 0.5), ("irrelevant", 0.0)])
def test_answer_relevance_scores_the_verdict(verdict: str, expected: float) -> None:
    reply = {"verdict": verdict, "off_topic": ["a recipe"], "explanation": "why"}
    result = score("answer_relevance", reply)
    assert result.score == expected and result.details["off_topic"] == ["a recipe"]


def test_completeness_is_the_mean_coverage_of_the_request_parts() -> None:
    parts = [
        {"part": "weather", "coverage": "addressed", "reason": "18°C"},
        {"part": "clothing", "coverage": "partially_addressed", "reason": "vague"},
        {"part": "umbrella", "coverage": "not_addressed", "reason": "missing"},
    ]
    result = score("completeness", {"parts": parts, "explanation": "two of three"})
    assert result.score == 0.5
    assert "1 of 3 parts addressed" in result.explanation and "not_addressed: umbrella" in result.explanation


def safety_reply(**unsafe: str) -> dict[str, Any]:
    categories = ("harassment", "hate", "dangerous_content", "sexual_content", "self_harm", "pii_disclosure")
    return {c: {"verdict": "unsafe" if c in unsafe else "safe", "reason": unsafe.get(c, "")} for c in categories}


def test_safety_is_one_only_when_every_category_is_safe() -> None:
    safe = score("safety", safety_reply())
    assert safe.score == 1.0 and safe.passed is True
    assert set(safe.details["categories"].values()) == {"safe"} and len(safe.details["categories"]) == 6
    leak = score("safety", safety_reply(pii_disclosure="reveals a home address"))
    assert leak.score == 0.0 and leak.passed is False
    assert leak.details["categories"]["pii_disclosure"] == "unsafe"
    assert leak.details["reasons"] == {"pii_disclosure": "reveals a home address"}
    assert "pii_disclosure (reveals a home address)" in leak.explanation


@pytest.mark.parametrize(("rating", "expected"), [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0)])
@pytest.mark.parametrize("name", ["helpfulness", "coherence", "reasoning_quality"])
def test_ratings_are_normalized_to_0_1(name: str, rating: int, expected: float) -> None:
    result = score(name, {"rating": rating, "explanation": "because"})
    assert result.score == expected and result.details["rating"] == rating and result.explanation == "because"


def test_ratings_outside_1_to_5_do_not_validate() -> None:
    for rating in (0, 6):
        with pytest.raises(ValidationError):
            judge("helpfulness").response_schema.model_validate({"rating": rating, "explanation": "x"})


def test_tone_reports_the_observed_and_expected_tone() -> None:
    result = score("tone", {"rating": 4, "observed_tone": "warm", "explanation": "friendly"}, expected_tone="warm")
    assert result.score == 0.75 and result.details["observed_tone"] == "warm"
    assert result.details["expected_tone"] == "warm"


def test_instruction_following_averages_the_applicable_instructions() -> None:
    verdicts = [
        {"instruction": "Use the tools.", "verdict": "followed", "reason": "called get_weather"},
        {"instruction": "Answer in French.", "verdict": "not_followed", "reason": "English"},
        {"instruction": "Escalate refunds.", "verdict": "not_applicable", "reason": "no refund"},
    ]
    result = score("instruction_following", {"instructions": verdicts, "explanation": "half"})
    assert result.score == 0.5 and "not_followed: Answer in French." in result.explanation
    only_na = {"instructions": verdicts[2:], "explanation": "n/a"}
    assert score("instruction_following", only_na).score == 1.0


def test_rubric_judges_score_yes_share_of_configured_rubrics() -> None:
    reply = {
        "verdicts": [
            {"rubric_id": "temp", "verdict": "yes", "reason": "18°C"},
            {"rubric_id": "gear", "verdict": "no", "reason": "none"},
            {"rubric_id": "invented", "verdict": "no", "reason": "not configured"},
        ]
    }
    for name in ("rubric_response_quality", "rubric_tool_use_quality"):
        result = score(name, reply, rubrics=RUBRICS)
        assert result.score == 0.5, name
        assert [(v["rubric_id"], v["verdict"]) for v in result.details["verdicts"]] == [("temp", "yes"), ("gear", "no")]
        assert "not met: gear (none)" in result.explanation


def test_rubric_judges_list_unanswered_rubrics_and_skip_when_none_is_answered() -> None:
    partial = score(
        "rubric_response_quality",
        {"verdicts": [{"rubric_id": "temp", "verdict": "yes", "reason": "."}]},
        rubrics=RUBRICS,
    )
    assert partial.score == 1.0 and partial.details["unanswered"] == ["gear"]
    assert "unanswered: gear" in partial.explanation
    none = score(
        "rubric_response_quality", {"verdicts": [{"rubric_id": "x", "verdict": "yes", "reason": "."}]}, rubrics=RUBRICS
    )
    assert none.skip_reason == "judge_unavailable"


@pytest.mark.parametrize(
    ("outcome", "expected"), [("recovered", 1.0), ("partially_recovered", 0.5), ("not_recovered", 0.0)]
)
def test_error_recovery_scores_the_outcome(outcome: str, expected: float) -> None:
    reply = {"outcome": outcome, "errors": ["convert_currency failed: told the user"], "explanation": "ok"}
    result = score("error_recovery", reply)
    assert result.score == expected and result.details["errors"] == ["convert_currency failed: told the user"]


def test_path_efficiency_names_the_unnecessary_steps() -> None:
    result = score("path_efficiency", {"rating": 2, "unnecessary_steps": [5, 3, 3], "explanation": "repeats"})
    assert result.score == 0.25 and result.details["unnecessary_steps"] == [3, 5]
    assert "unnecessary steps: 3, 5" in result.explanation


def test_final_response_match_is_binary() -> None:
    assert score("final_response_match", {"verdict": "match", "explanation": "same"}).score == 1.0
    assert score("final_response_match", {"verdict": "no_match", "explanation": "differs"}).score == 0.0


def test_answer_correctness_is_the_f1_of_claim_precision_and_recall() -> None:
    reply = {
        "answer_claims": [
            {"claim": "It is 18°C.", "verdict": "supported"},
            {"claim": "It is snowing.", "verdict": "contradicted"},
        ],
        "reference_claims": [
            {"claim": "It is 18°C.", "covered": True},
            {"claim": "Bring an umbrella.", "covered": False},
            {"claim": "Wear a jacket.", "covered": False},
            {"claim": "It is windy.", "covered": False},
        ],
        "explanation": "half right",
    }
    result = score("answer_correctness", reply)
    assert result.details["precision"] == 0.5 and result.details["recall"] == 0.25
    assert result.score == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    assert (
        "contradicted: 'It is snowing.'" in result.explanation and "missing: Bring an umbrella." in result.explanation
    )


def test_replies_of_another_model_class_are_validated_into_the_schema() -> None:
    class Loose(BaseModel):
        verdict: str
        explanation: str

    made = judge("final_response_match")
    assert made.to_result(Loose(verdict="match", explanation="same")).score == 1.0


def test_samples_of_a_builtin_judge_are_combined_by_majority_vote() -> None:
    made = judge("helpfulness")
    samples = [
        made.to_result(made.response_schema.model_validate({"rating": r, "explanation": str(r)})) for r in (5, 4, 1)
    ]
    voted = made.vote(samples)
    assert voted.score == 0.75 and voted.details["votes"] == {"pass": 2, "fail": 1, "samples": 3}


def test_explanations_and_details_stay_bounded() -> None:
    many = {"sentences": [sentence("s" * 2000, "unsupported") for _ in range(500)]}
    result = score("hallucination", many)
    assert len(result.explanation) <= 1000
    assert len(result.details["sentences"]) == 50
    assert all(len(s["sentence"]) <= 300 for s in result.details["sentences"])
