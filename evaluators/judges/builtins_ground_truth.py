"""Builtin ground-truth judges (experiment mode only): final_response_match and answer_correctness.

Both compare the final answer with the task's `expected_output`; `prepare` skips them with
`needs_ground_truth` in monitor mode or without a task.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..sdk.task import Task
from ..traces.model import Trace
from .base import LLMJudge
from .evidence import answer_of, no_answer
from .prompt import compose, data_block, question
from .verdicts import bounded_items, expect, graded, listing, result, shorten


def reference_prompt(judge: LLMJudge, trace: Trace, task: Task | None, ask: str) -> str | EvalResult:
    """The prompt comparing the final answer with `task.expected_output`, or the skip when one is missing."""
    if task is None:
        return EvalResult.skip(SkipReason.NEEDS_GROUND_TRUTH, f"{judge.name} needs a task (ground truth)")
    if not answer_of(task.expected_output):
        return EvalResult.skip(SkipReason.NO_DATA, f"task {task.task_id!r} has no expected_output")
    answer = answer_of(trace.output)
    if answer is None:
        return no_answer()
    n = judge.max_data_chars
    return compose(
        data_block("user_request", trace.input, n),
        data_block("reference_answer", task.expected_output, n),
        data_block("final_answer", answer, n),
        question(ask),
    )


# --- final_response_match ---------------------------------------------------------------------------


class ResponseMatchReply(BaseModel):
    verdict: Literal["match", "no_match"]
    explanation: str = Field(description="the key facts that agree or differ, in at most three sentences")


@register
class FinalResponseMatch(LLMJudge):
    """1 when the final answer matches the task's expected output in meaning, else 0 (needs ground truth)."""

    name = "final_response_match"
    level = "trace"
    needs_ground_truth = True
    response_schema = ResponseMatchReply
    instructions = """\
Decide whether an AI agent's final answer matches the reference answer. match: it gives the same key
facts, numbers and conclusion; wording, order, and extra detail that does not contradict the reference do
not matter. no_match: a key fact or number is missing or different, or the answer contradicts the
reference. The user request is context only."""

    def build_prompt(self, subject: Trace, task: Task | None = None) -> str | EvalResult:
        return reference_prompt(self, subject, task, "Does the final answer match the reference answer?")

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score match = 1, no_match = 0."""
        parsed = expect(reply, ResponseMatchReply)
        return graded(parsed.verdict, {"match": 1.0, "no_match": 0.0}, parsed.explanation, {})


# --- answer_correctness -----------------------------------------------------------------------------


class AnswerClaim(BaseModel):
    claim: str = Field(description="one factual claim of the final answer")
    verdict: Literal["supported", "not_in_reference", "contradicted"]


class ReferenceClaim(BaseModel):
    claim: str = Field(description="one factual claim of the reference answer")
    covered: bool = Field(description="true when the final answer states it too")


class AnswerCorrectnessReply(BaseModel):
    answer_claims: list[AnswerClaim] = Field(min_length=1, description="every factual claim of the final answer")
    reference_claims: list[ReferenceClaim] = Field(min_length=1, description="every factual claim of the reference")
    explanation: str = Field(description="a one-sentence summary")


@register
class AnswerCorrectness(LLMJudge):
    """F1 of the final answer's claims against the task's expected output (needs ground truth)."""

    name = "answer_correctness"
    level = "trace"
    needs_ground_truth = True
    response_schema = AnswerCorrectnessReply
    instructions = """\
Judge the factual correctness of an AI agent's final answer against a reference answer.
1. Break the final answer into its factual claims; mark each supported (the reference states or implies
   it), not_in_reference, or contradicted (the reference says otherwise).
2. Break the reference answer into its factual claims; mark each covered when the final answer states it.
Statements without factual content (greetings, offers of help) are not claims."""

    def build_prompt(self, subject: Trace, task: Task | None = None) -> str | EvalResult:
        return reference_prompt(self, subject, task, "How correct is the final answer against the reference answer?")

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = F1 of precision (supported answer claims / answer claims) and recall (covered reference
        claims / reference claims)."""
        parsed = expect(reply, AnswerCorrectnessReply)
        precision = sum(c.verdict == "supported" for c in parsed.answer_claims) / len(parsed.answer_claims)
        recall = sum(c.covered for c in parsed.reference_claims) / len(parsed.reference_claims)
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        wrong = [f"{c.verdict}: {shorten(c.claim, 80)!r}" for c in parsed.answer_claims if c.verdict != "supported"]
        missed = [shorten(c.claim, 80) for c in parsed.reference_claims if not c.covered]
        explanation = f"precision {precision:.2f}, recall {recall:.2f}"
        explanation += f"; {listing(wrong)}" if wrong else ""
        explanation += f"; missing: {listing(missed)}" if missed else ""
        details = {
            "summary": shorten(parsed.explanation, 300),
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "answer_claims": bounded_items(parsed.answer_claims),
            "reference_claims": bounded_items(parsed.reference_claims),
        }
        return result(f1, explanation, details)
