"""Builtin RAG judges at trace level: faithfulness (answer vs retrieved documents) and context_relevance.

Retriever spans are not a dispatch level, so both judge the trace's retrievals (`trace.get_retrievals()`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..traces.model import Trace
from .base import LLMJudge
from .evidence import answer_of, has_document_content, no_answer, retrievals_text
from .prompt import compose, data_block, question
from .verdicts import bounded_items, expect, listing, result, shorten, unusable


def no_documents() -> EvalResult:
    return EvalResult.skip(SkipReason.NO_DATA, "the trace has no retrieved documents with content")


# --- faithfulness -----------------------------------------------------------------------------------


class Claim(BaseModel):
    claim: str = Field(description="one factual claim of the answer, in its own words")
    verdict: Literal["supported", "unsupported", "contradicted"]
    reason: str = Field(description="the document that supports or contradicts it, or what is missing")


class FaithfulnessReply(BaseModel):
    claims: list[Claim] = Field(description="every factual claim of the answer; empty when it makes none")


@register
class Faithfulness(LLMJudge):
    """Share of the final answer's factual claims supported by the retrieved documents alone (RAG)."""

    name = "faithfulness"
    level = "trace"
    threshold = 0.8
    response_schema = FaithfulnessReply
    instructions = """\
Judge whether the final answer of a retrieval-augmented AI agent is faithful to the documents it
retrieved. Break the answer into its factual claims and mark each:
- supported: the retrieved documents state it or directly imply it;
- unsupported: the documents do not say it (even if it is true or came from elsewhere);
- contradicted: the documents say otherwise.
Only the retrieved documents count: ignore your own knowledge and anything else the agent may have seen.
Statements without factual content (greetings, offers of help) are not claims."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        answer = answer_of(subject.output)
        if answer is None:
            return no_answer()
        retrievals = subject.get_retrievals()
        if not has_document_content(retrievals):
            return no_documents()
        n = self.max_data_chars
        return compose(
            data_block("retrieved_documents", retrievals_text(retrievals, n), n),
            data_block("final_answer", answer, n),
            question("Which claims of the final answer do the retrieved documents support?"),
        )

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = supported claims / claims (1 when the answer makes no factual claim)."""
        claims = expect(reply, FaithfulnessReply).claims
        if not claims:
            return result(1.0, "the answer makes no factual claim", {"claims": []})
        supported = sum(c.verdict == "supported" for c in claims)
        flagged = [f"{c.verdict}: {shorten(c.claim)!r}" for c in claims if c.verdict != "supported"]
        explanation = f"{supported} of {len(claims)} claims supported by the documents"
        explanation += f"; {listing(flagged)}" if flagged else ""
        return result(supported / len(claims), explanation, {"claims": bounded_items(claims)})


# --- context_relevance ------------------------------------------------------------------------------


class DocumentRelevance(BaseModel):
    retrieval: int = Field(ge=1, description="the retrieval's number, as shown")
    document: int = Field(ge=1, description="the document's number within that retrieval, as shown")
    relevant: bool = Field(description="true when the document helps answer the retrieval's query")
    reason: str


class ContextRelevanceReply(BaseModel):
    documents: list[DocumentRelevance] = Field(min_length=1, description="one entry per document shown")


@register
class ContextRelevance(LLMJudge):
    """Mean over the trace's retrievals of the share of retrieved documents relevant to the query."""

    name = "context_relevance"
    level = "trace"
    response_schema = ContextRelevanceReply
    instructions = """\
Judge the retrieval step of an AI agent. For each retrieval (numbered), judge each retrieved document
(numbered within its retrieval): relevant when it contains information that helps answer that
retrieval's query, not relevant otherwise (off-topic, or only shares keywords). When a query is not
recorded, judge against the user request. Judge every document shown."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        retrievals = subject.get_retrievals()
        if not has_document_content(retrievals):
            return no_documents()
        n = self.max_data_chars
        return compose(
            data_block("user_request", subject.input, n),
            data_block("retrievals", retrievals_text(retrievals, n), n),
            question("Which retrieved documents are relevant to their retrieval's query?"),
        )

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = mean over retrievals of (relevant documents / documents judged)."""
        documents = expect(reply, ContextRelevanceReply).documents
        by_retrieval: dict[int, dict[int, bool]] = defaultdict(dict)
        for doc in documents:
            by_retrieval[doc.retrieval][doc.document] = doc.relevant  # a repeated entry counts once
        if not by_retrieval:
            return unusable(self.name, "the reply judged no document")
        shares = {r: sum(docs.values()) / len(docs) for r, docs in sorted(by_retrieval.items())}
        irrelevant = [
            f"retrieval {r} document {d}"
            for r, docs in sorted(by_retrieval.items())
            for d, ok in docs.items()
            if not ok
        ]
        judged = sum(len(docs) for docs in by_retrieval.values())
        explanation = f"{judged - len(irrelevant)} of {judged} documents relevant over {len(shares)} retrieval(s)"
        explanation += f"; not relevant: {listing(irrelevant)}" if irrelevant else ""
        details = {
            "retrievals": [{"retrieval": r, "relevant_share": round(s, 4)} for r, s in shares.items()][:50],
            "documents": bounded_items(documents),
        }
        return result(sum(shares.values()) / len(shares), explanation, details)
