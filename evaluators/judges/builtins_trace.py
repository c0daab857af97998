"""Builtin trace-level judges of the final answer: hallucination, answer_relevance, completeness, helpfulness."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..traces.model import Trace
from .base import LLMJudge
from .evidence import answer_of, no_answer, retrievals_text, system_instructions, trace_tool_results
from .prompt import compose, data_block, instructions_block, question, tool_calls_block
from .verdicts import RatingReply, bounded_items, expect, graded, listing, rated, result, shorten


def evidence_blocks(trace: Trace, max_chars: int) -> list[str | None]:
    """The trace's evidence as data blocks: user request, system instructions, tool results, documents
    (blocks with nothing recorded are left out, except the request)."""
    instructions = system_instructions(trace.get_llm_calls())
    tools = trace_tool_results(trace)
    documents = retrievals_text(trace.get_retrievals(), max_chars)
    return [
        data_block("user_request", trace.input, max_chars),
        instructions_block(instructions, max_chars) if instructions else None,
        tool_calls_block(tools, max_chars, "tool_results") if tools else None,
        data_block("retrieved_documents", documents, max_chars) if documents else None,
    ]


def request_and_answer(trace: Trace, max_chars: int, asked: str) -> str | EvalResult:
    """The user request and the final answer as data blocks, then `asked`; a no_data skip without either."""
    answer = answer_of(trace.output)
    if answer is None:
        return no_answer()
    if not answer_of(trace.input):
        return no_request()
    return compose(
        data_block("user_request", trace.input, max_chars),
        data_block("final_answer", answer, max_chars),
        question(asked),
    )


def no_request() -> EvalResult:
    return EvalResult.skip(SkipReason.NO_DATA, "the trace has no recorded user request")


# --- hallucination ----------------------------------------------------------------------------------

SentenceLabelName = Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]
GROUNDED_LABELS = ("supported", "not_applicable")


class SentenceLabel(BaseModel):
    sentence: str = Field(description="one sentence of the final answer, exactly as written")
    label: SentenceLabelName
    reason: str = Field(description="the evidence that supports or contradicts it, or what is missing")


class HallucinationReply(BaseModel):
    sentences: list[SentenceLabel] = Field(min_length=1, description="every sentence of the final answer, in order")


@register
class Hallucination(LLMJudge):
    """Share of the final answer's sentences supported by the trace's evidence (tool results, documents, input)."""

    name = "hallucination"
    level = "trace"
    threshold = 0.8
    response_schema = HallucinationReply
    instructions = """\
Judge whether the final answer of an AI agent is grounded in the evidence of its run. Split the final
answer into sentences (copy each one exactly) and label each:
- supported: the evidence states it or directly implies it;
- unsupported: a factual claim the evidence neither states nor implies (even if it may be true);
- contradictory: the evidence says otherwise;
- disputed: some evidence supports it and other evidence contradicts it;
- not_applicable: makes no factual claim (greeting, offer of help, question, hedged suggestion).
The evidence is the user request, the system instructions, the tool results and the retrieved documents.
Your own knowledge is not evidence, except for common facts needed to read it (units, arithmetic, dates).
Give each label a short reason that names the evidence."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        answer = answer_of(subject.output)
        if answer is None:
            return no_answer()
        n = self.max_data_chars
        ask = "Label every sentence of the final answer against the evidence above."
        return compose(*evidence_blocks(subject, n), data_block("final_answer", answer, n), question(ask))

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = share of sentences labelled supported or not_applicable; the others are named."""
        sentences = expect(reply, HallucinationReply).sentences
        counts = Counter(str(s.label) for s in sentences)
        grounded = sum(counts[label] for label in GROUNDED_LABELS)
        flagged = [
            f"{s.label}: {shorten(s.sentence)!r} ({shorten(s.reason, 80)})"
            for s in sentences
            if s.label not in GROUNDED_LABELS
        ]
        explanation = f"{grounded} of {len(sentences)} sentences supported or not applicable"
        if flagged:
            explanation += "; " + listing(flagged)
        details = {"counts": dict(counts), "sentences": bounded_items(sentences)}
        return result(grounded / len(sentences), explanation, details)


# --- answer_relevance -------------------------------------------------------------------------------

RELEVANCE_SCORES = {"relevant": 1.0, "partially_relevant": 0.5, "irrelevant": 0.0}


class AnswerRelevanceReply(BaseModel):
    verdict: Literal["relevant", "partially_relevant", "irrelevant"]
    off_topic: list[str] = Field(description="parts of the answer that do not serve the request (may be empty)")
    explanation: str = Field(description="why, in at most three sentences")


@register
class AnswerRelevance(LLMJudge):
    """Whether the final answer addresses the user's request: relevant 1, partially relevant 0.5, irrelevant 0."""

    name = "answer_relevance"
    level = "trace"
    response_schema = AnswerRelevanceReply
    instructions = """\
Judge whether the final answer of an AI agent is relevant to the user's request. Do not judge whether it
is true; judge whether it responds to what was asked.
- relevant: it answers the request directly, with little or no off-topic content;
- partially_relevant: it answers part of the request, answers a related but different question, or buries
  the answer in off-topic content;
- irrelevant: it does not respond to the request at all.
A clear statement that the request cannot be fulfilled, with the reason, is relevant.
List the off-topic parts of the answer, if any."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        return request_and_answer(subject, self.max_data_chars, "How relevant is the final answer to the user request?")

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score relevant = 1, partially_relevant = 0.5, irrelevant = 0."""
        parsed = expect(reply, AnswerRelevanceReply)
        details = {"off_topic": [shorten(p) for p in parsed.off_topic[:10]]}
        return graded(parsed.verdict, RELEVANCE_SCORES, parsed.explanation, details)


# --- completeness -----------------------------------------------------------------------------------

COVERAGE_SCORES = {"addressed": 1.0, "partially_addressed": 0.5, "not_addressed": 0.0}


class RequestPart(BaseModel):
    part: str = Field(description="one thing the user asked for, in a few words")
    coverage: Literal["addressed", "partially_addressed", "not_addressed"]
    reason: str


class CompletenessReply(BaseModel):
    parts: list[RequestPart] = Field(min_length=1, description="every part of the user request")
    explanation: str = Field(description="a one-sentence summary")


@register
class Completeness(LLMJudge):
    """Mean coverage of the parts of the user's request by the final answer (addressed 1, partially 0.5, not 0)."""

    name = "completeness"
    level = "trace"
    response_schema = CompletenessReply
    instructions = """\
Judge whether the final answer of an AI agent covers everything the user asked for. Split the user
request into its parts (each question, task or requested detail) and mark each one:
- addressed: the answer fully deals with it;
- partially_addressed: the answer deals with it in part, vaguely, or says plainly it could not be done;
- not_addressed: the answer ignores it.
Judge coverage, not correctness."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        return request_and_answer(
            subject, self.max_data_chars, "Which parts of the user request does the final answer cover?"
        )

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = mean over the request's parts of addressed 1, partially_addressed 0.5, not_addressed 0."""
        parts = expect(reply, CompletenessReply).parts
        score = sum(COVERAGE_SCORES[p.coverage] for p in parts) / len(parts)
        missing = [f"{p.coverage}: {shorten(p.part, 80)}" for p in parts if p.coverage != "addressed"]
        explanation = f"{sum(p.coverage == 'addressed' for p in parts)} of {len(parts)} parts addressed"
        explanation += f"; {listing(missing)}" if missing else ""
        return result(score, explanation, {"parts": bounded_items(parts)})


# --- helpfulness ------------------------------------------------------------------------------------


@register
class Helpfulness(LLMJudge):
    """A 1–5 rating of the final answer's quality as an answer to the request, normalized (rating − 1) / 4."""

    name = "helpfulness"
    level = "trace"
    response_schema = RatingReply
    instructions = """\
Rate how helpful the final answer of an AI agent is to the user, as a question-answering response:
- 5: answers the request fully and correctly, grounded in the evidence (tool results, documents), clear,
  well organized and concise;
- 4: helpful, with a minor gap, imprecision or verbosity;
- 3: somewhat helpful: answers only part of the request, or has a notable error or lack of clarity;
- 2: barely helpful: mostly incomplete, wrong or hard to use;
- 1: not helpful: wrong, off-topic, an unjustified refusal, or empty.
When the request cannot be fulfilled, an answer that says so plainly and usefully can still rate high.
Give a whole-number rating."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        answer = answer_of(subject.output)
        if answer is None:
            return no_answer()
        n = self.max_data_chars
        ask = "Rate the helpfulness of the final answer from 1 to 5."
        return compose(*evidence_blocks(subject, n), data_block("final_answer", answer, n), question(ask))

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = (rating − 1) / 4."""
        return rated(expect(reply, RatingReply))
