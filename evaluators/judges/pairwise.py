"""Pairwise judges: which of two answers to the same question is better, judged in both orders.

A pairwise judge compares a baseline's and a candidate's answers (two versions of an agent, two traces that
answered the same input). It is a judge of pairs, not of traces: `request(trace)` skips (`not_applicable`),
and the daemon runs it from `variants.pairwise`, never as a per-trace evaluator.

Judge models prefer one position more often than chance, so every pair is judged twice through the same
engine: once with A = baseline and B = candidate, once with A = candidate and B = baseline (`judge_pair`).
`combine` maps the two replies to the candidate's outcome: better in both orders → win, worse in both → loss,
SAME in both → tie, and orders that disagree (position bias) → tie. A skip of either call is the pair's result.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..sdk.result import EvalResult, SkipReason
from .base import JudgeCall, JudgeRequest, LLMJudge
from .prompt import compose, data_block, question
from .verdicts import MAX_DETAIL_CHARS, shorten

Choice = Literal["A", "SAME", "B"]
Outcome = Literal["win", "tie", "loss"]
OUTCOMES: tuple[Outcome, ...] = ("win", "tie", "loss")
OUTCOME_SCORES: dict[str, float] = {"win": 1.0, "tie": 0.5, "loss": 0.0}
CHOICE_SCORES: dict[str, float] = {"A": 0.0, "SAME": 0.5, "B": 1.0}  # one order's result: how much B was preferred
MAX_PAIR_EXPLANATION_CHARS = 600
SUMMARIES = {
    "win": "win: the candidate's answer is better",
    "loss": "loss: the baseline's answer is better",
    "tie": "tie: the answers are as good as each other",
}


class PairwiseReply(BaseModel):
    """A pairwise judge's structured reply."""

    choice: Choice = Field(description='"A" when answer A is better, "B" when answer B is better, "SAME" otherwise')
    explanation: str = Field(description="why, in at most three sentences, quoting the answers")


class PairwiseJudge(LLMJudge):
    """Base of the judges of pairs: implement the rubric (`instructions`); `pair_request` builds the prompt."""

    kind = "pairwise_judge"
    level = "trace"  # its result is recorded on the candidate's trace
    response_schema = PairwiseReply

    def build_prompt(self, subject: Any, task: Any = None) -> str | EvalResult:
        """A single trace has nothing to compare with: a `not_applicable` skip (see the module docstring)."""
        return EvalResult.skip(
            SkipReason.NOT_APPLICABLE,
            f"{self.name} judges pairs of traces of two variants; configure it under variants.pairwise",
        )

    def pair_request(
        self, user_question: str | None, answer_a: str | None, answer_b: str | None
    ) -> JudgeRequest | EvalResult:
        """The request comparing `answer_a` and `answer_b` as answers to `user_question`; a `no_data` skip
        when one of them was not recorded."""
        texts = (("question", user_question), ("answer A", answer_a), ("answer B", answer_b))
        missing = [what for what, text in texts if text is None]
        if missing:
            return EvalResult.skip(SkipReason.NO_DATA, f"{self.name}: no {' and no '.join(missing)} recorded")
        n = self.max_data_chars
        prompt = compose(
            data_block("user_question", user_question, n),
            data_block("answer_a", answer_a, n),
            data_block("answer_b", answer_b, n),
            question("Which answer answers the user's question better: A, B, or SAME?", n),
        )
        return JudgeRequest(
            system=self.system_instruction(),
            prompt=prompt,
            model=self.model,
            num_samples=self.num_samples,
            schema=self.response_schema.__name__,
        )

    def to_result(self, reply: BaseModel) -> EvalResult:
        """One order's result: score 0 (A better), 0.5 (SAME) or 1 (B better), the choice in details."""
        parsed = reply if isinstance(reply, PairwiseReply) else PairwiseReply.model_validate(reply.model_dump())
        explanation = shorten(parsed.explanation, MAX_DETAIL_CHARS)
        return EvalResult(CHOICE_SCORES[parsed.choice], explanation=explanation, details={"choice": parsed.choice})

    def vote(self, results: list[EvalResult]) -> EvalResult:
        """The most frequent choice among the samples (a tie between choices is SAME); skips do not vote."""
        scored = [r for r in results if not r.is_skipped]
        if not scored:
            return results[0]
        counts = Counter(str(r.details.get("choice", "SAME")) for r in scored)
        ranked = counts.most_common()
        choice = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else "SAME"
        chosen = next((r for r in scored if r.details.get("choice") == choice), None)
        explanation = chosen.explanation if chosen is not None else "the samples disagree"
        details = {"choice": choice, "votes": dict(counts), "samples": len(results)}
        return EvalResult(CHOICE_SCORES.get(choice, 0.5), explanation=explanation, details=details)


def _candidate_view(choice: str, candidate_is_b: bool) -> str:
    """One order's choice from the candidate's side: better, same or worse."""
    if choice == "SAME":
        return "same"
    return "better" if (choice == "B") == candidate_is_b else "worse"


def combine(baseline_first: EvalResult, candidate_first: EvalResult) -> EvalResult:
    """The candidate's result from the two orders (A = baseline, then A = candidate): win 1, tie 0.5, loss 0.

    A skip of either order is the pair's result (the first one's when both skipped). Details: `outcome`, each
    order's choice (`baseline_first`, `candidate_first`), `consistent` (the orders agree), the tokens spent."""
    for which, result in (("baseline first", baseline_first), ("candidate first", candidate_first)):
        if result.is_skipped:
            assert result.skip_reason is not None
            message = shorten(f"{which}: {result.explanation}", MAX_PAIR_EXPLANATION_CHARS)
            return EvalResult.skip(result.skip_reason, message, details=_costs(baseline_first, candidate_first))
    first = str(baseline_first.details.get("choice", "SAME"))
    second = str(candidate_first.details.get("choice", "SAME"))
    views = (_candidate_view(first, candidate_is_b=True), _candidate_view(second, candidate_is_b=False))
    consistent = views[0] == views[1]
    outcome: Outcome = "tie"
    if consistent and views[0] != "same":
        outcome = "win" if views[0] == "better" else "loss"
    orders = f"baseline first: {first}, candidate first: {second}"
    if not consistent:
        summary = f"tie: the two orders disagree ({orders}), a position bias"
    else:
        summary = f"{SUMMARIES[outcome]} in both orders ({orders})"
    explanation = shorten(f"{summary}. {baseline_first.explanation}", MAX_PAIR_EXPLANATION_CHARS)
    details: dict[str, Any] = {
        "outcome": outcome,
        "baseline_first": first,
        "candidate_first": second,
        "consistent": consistent,
        "explanations": [shorten(baseline_first.explanation), shorten(candidate_first.explanation)],
        **_costs(baseline_first, candidate_first),
    }
    return EvalResult(OUTCOME_SCORES[outcome], explanation=explanation, details=details)


def _costs(*results: EvalResult) -> dict[str, Any]:
    """The judge model and the tokens of both orders (as the engine puts them in each result's details)."""
    costs: dict[str, Any] = {
        "input_tokens": sum(int(r.details.get("input_tokens", 0) or 0) for r in results),
        "output_tokens": sum(int(r.details.get("output_tokens", 0) or 0) for r in results),
    }
    model = next((r.details["judge_model"] for r in results if r.details.get("judge_model")), None)
    if model is not None:
        costs["judge_model"] = model
    return costs


async def judge_pair(
    judge_call: JudgeCall,
    judge: PairwiseJudge,
    user_question: str | None,
    baseline_answer: str | None,
    candidate_answer: str | None,
    *,
    name: str | None = None,
) -> EvalResult:
    """Both orders judged at once through `judge_call` (the engine's limits and budget apply to each), combined
    into the candidate's result (`combine`), resolved at the judge's threshold."""
    first = judge.pair_request(user_question, baseline_answer, candidate_answer)
    if isinstance(first, EvalResult):
        return first
    second = judge.pair_request(user_question, candidate_answer, baseline_answer)
    assert isinstance(second, JudgeRequest)  # the same texts, swapped
    label = name or judge.name
    replies = await asyncio.gather(judge_call(judge, first, name=label), judge_call(judge, second, name=label))
    return judge.stated(combine(*replies).resolve(judge.threshold))


__all__ = [
    "CHOICE_SCORES",
    "OUTCOMES",
    "OUTCOME_SCORES",
    "PairwiseJudge",
    "PairwiseReply",
    "combine",
    "judge_pair",
]
