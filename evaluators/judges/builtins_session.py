"""Builtin session-level judges over a whole conversation: conversation_completion, user_frustration,
knowledge_retention, conversation_coherence.

Their subject is a `Session`; the prompt is its transcript (`transcript.transcript_block`: the turns in order, each
with the user's message, tools and errors in brief and the answer, the middle elided when long). Each reply names
the turns it is about (1-based, the transcript's numbers); a result's `details["turn"]` is the turn its failure is
about (the first unmet goal, the first sign of frustration, the first lapse, the first incoherent turn), which
`failures.judge_failure` puts in the failure and `session_judging.place_turn` ties to the turn's trace id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from ..sdk.params import Param
from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..sessions.model import Session
from .base import LLMJudge
from .prompt import compose, data_block, question
from .transcript import session_summary, transcript_block
from .verdicts import bounded_items, expect, listing, rating_score, result, shorten

SESSION_RULE = """\
The material is one conversation between a user and an AI agent, turn by turn: each turn is numbered
[turn N of M] and shows what the user said, the tools the agent called and the steps that failed (in brief),
then the agent's answer. A marker may stand for turns left out of a long conversation. Name turns by
their numbers."""


class SessionJudge(LLMJudge):
    """Base of the session-level judges: the transcript as the prompt, the turn a failure is about in details."""

    level = "session"
    min_turns: ClassVar[int] = 1  # fewer turns: not_applicable
    ask: ClassVar[str] = ""

    max_transcript_chars = Param(
        24000, "characters of the transcript in the prompt; a longer one keeps its first and latest turns", min=2000
    )
    max_turn_chars = Param(1500, "characters of one turn's user message and of its answer in the transcript", min=100)

    def system_instruction(self) -> str:
        return f"{super().system_instruction()}\n\n{SESSION_RULE}"

    def build_prompt(self, subject: Session, task: Any = None) -> str | EvalResult:
        turns = subject.turns
        if not turns or not any(t.user_message or t.answered for t in turns):
            return EvalResult.skip(SkipReason.NO_DATA, "the session has no recorded user message or answer")
        if len(turns) < self.min_turns:
            why = f"{self.name} judges conversations of at least {self.min_turns} turns; this one has {len(turns)}"
            return EvalResult.skip(SkipReason.NOT_APPLICABLE, why)
        return compose(
            data_block("session", session_summary(subject), 200),
            transcript_block(subject, self.max_transcript_chars, self.max_turn_chars),
            question(self.ask),
        )


def first_turn(turns: Iterable[int]) -> dict[str, int]:
    """`{"turn": N}` for the earliest valid turn number among `turns`, else nothing."""
    valid = [t for t in turns if t >= 1]
    return {"turn": min(valid)} if valid else {}


# --- conversation_completion ------------------------------------------------------------------------

GOAL_SCORES = {"met": 1.0, "partially_met": 0.5, "not_met": 0.0}


class UserGoal(BaseModel):
    goal: str = Field(description="one thing the user wanted from the conversation, in a few words")
    turn: int = Field(ge=1, description="the turn where the user asked for it")
    status: Literal["met", "partially_met", "not_met"]
    reason: str = Field(description="where and how the conversation met it, or what is missing")


class ConversationCompletionReply(BaseModel):
    goals: list[UserGoal] = Field(min_length=1, description="every goal the user expressed, in order")
    explanation: str = Field(description="a one-sentence summary")


@register
class ConversationCompletion(SessionJudge):
    """Whether the user's goals were met by the end of the conversation (met 1, partially 0.5, not 0, averaged).

    Each goal is named with the turn where the user first asked for it.
    """

    name = "conversation_completion"
    response_schema = ConversationCompletionReply
    instructions = """\
Judge whether a conversation between a user and an AI agent met the user's goals by its end. List every
goal the user expressed (a question, a task, a requested detail; a goal restated in later turns is one
goal, at the turn where it was first asked) and mark each:
- met: by the end, the agent answered or did it, correctly as far as the conversation shows;
- partially_met: the agent dealt with part of it, vaguely, or only said plainly that it could not be done;
- not_met: the conversation ended without it, including when the agent handed the user over to a human
  without answering.
Judge the outcome at the end, not each turn: a miss corrected in a later turn is met."""
    ask: ClassVar[str] = "Which of the user's goals did the conversation meet by its end?"

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = mean over the goals of met 1, partially_met 0.5, not_met 0; the first unmet goal's turn named."""
        goals = expect(reply, ConversationCompletionReply).goals
        score = sum(GOAL_SCORES[g.status] for g in goals) / len(goals)
        unmet = [g for g in goals if g.status != "met"]
        worst = "not_met" if any(g.status == "not_met" for g in goals) else "partially_met" if unmet else "met"
        explanation = f"{len(goals) - len(unmet)} of {len(goals)} goals met"
        if unmet:
            explanation += "; " + listing([f"{g.status} (turn {g.turn}): {shorten(g.goal, 80)}" for g in unmet])
        named = first_turn(g.turn for g in goals if g.status == worst) if unmet else {}
        details = {"verdict": f"goals_{worst}", "goals": bounded_items(goals), **named}
        return result(score, explanation, details)


# --- user_frustration -------------------------------------------------------------------------------

FRUSTRATION_SCORES = {"not_frustrated": 1.0, "mildly_frustrated": 0.67, "frustrated": 0.33, "very_frustrated": 0.0}


class FrustrationSign(BaseModel):
    turn: int = Field(ge=1, description="the turn where the user showed it")
    sign: Literal["repeats_request", "complains", "asks_for_human", "gives_up", "hostile", "other"]
    quote: str = Field(description="the user's words that show it, quoted exactly")


class UserFrustrationReply(BaseModel):
    verdict: Literal["not_frustrated", "mildly_frustrated", "frustrated", "very_frustrated"]
    signs: list[FrustrationSign] = Field(description="every sign of frustration, in turn order (may be empty)")
    explanation: str = Field(description="why, in at most three sentences")


@register
class UserFrustration(SessionJudge):
    """How frustrated the user became: not frustrated 1, mildly 0.67, frustrated 0.33, very frustrated 0.

    A score, so higher is better; each sign is named with its turn and the user's words.
    """

    name = "user_frustration"
    response_schema = UserFrustrationReply
    instructions = """\
Judge how frustrated the user of an AI agent became over a conversation, from the user's own messages
and from how the agent answered them. Signs of frustration: repeating or rephrasing a request because
the answer missed it (repeats_request), complaining about the answers (complains), asking for a human
(asks_for_human), giving up or abandoning the request (gives_up), rude or hostile words (hostile).
- not_frustrated: no such sign; the user moves on from satisfied answers;
- mildly_frustrated: one mild sign, resolved by the next answer;
- frustrated: clear signs, or a sign the agent never resolved;
- very_frustrated: repeated or escalating signs: the user complains again, asks for a human, gives up or
  turns hostile.
List each sign with its turn and the user's exact words. A polite clarification of the user's own
request is not a sign."""
    ask: ClassVar[str] = "How frustrated did the user become over this conversation?"

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score not_frustrated 1, mildly 0.67, frustrated 0.33, very 0; the first sign's turn named."""
        parsed = expect(reply, UserFrustrationReply)
        signs = parsed.signs
        details: dict[str, Any] = {"verdict": parsed.verdict, "signs": bounded_items(signs)}
        if parsed.verdict != "not_frustrated":
            details.update(first_turn(s.turn for s in signs))
        explanation = parsed.explanation
        if signs:
            shown = [f"{s.sign} (turn {s.turn}): {shorten(s.quote, 80)!r}" for s in signs]
            explanation = f"{explanation} Signs: {listing(shown)}"
        return result(FRUSTRATION_SCORES[parsed.verdict], explanation, details)


# --- knowledge_retention ----------------------------------------------------------------------------

RETENTION_SCORES = {"retained": 1.0, "minor_lapse": 0.5, "major_lapse": 0.0}


class RetentionLapse(BaseModel):
    turn: int = Field(ge=1, description="the turn where the agent forgot or contradicted it")
    established_in_turn: int = Field(ge=1, description="the earlier turn where it was established")
    kind: Literal["forgot", "contradicted", "asked_again"]
    fact: str = Field(description="what had been established, in a few words")


class KnowledgeRetentionReply(BaseModel):
    verdict: Literal["retained", "minor_lapse", "major_lapse"]
    lapses: list[RetentionLapse] = Field(description="every lapse, in turn order (may be empty)")
    explanation: str = Field(description="why, in at most three sentences")


@register
class KnowledgeRetention(SessionJudge):
    """Whether the agent keeps what earlier turns established: retained 1, minor lapse 0.5, major lapse 0.

    A lapse forgets, contradicts or asks again for what the user said or what the agent found before.
    """

    name = "knowledge_retention"
    min_turns = 2
    response_schema = KnowledgeRetentionReply
    instructions = """\
Judge whether an AI agent keeps, across the turns of a conversation, what was established in earlier
turns: facts, preferences and constraints the user stated, and what the agent itself found or promised.
A lapse is an answer that forgets it (ignores a stated constraint, gives advice that no longer fits),
contradicts it without saying why, or asks the user again for something already given (asked_again).
- retained: no lapse;
- minor_lapse: a lapse that does not change the outcome, or that the agent corrects itself;
- major_lapse: a lapse that makes an answer wrong or makes the user repeat themselves.
List each lapse with the turn where it happens and the turn where the fact was established. New
information from the user that replaces an earlier fact is not a lapse."""
    ask: ClassVar[str] = "Does the agent keep what was established in earlier turns of this conversation?"

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score retained 1, minor_lapse 0.5, major_lapse 0; the first lapse's turn named."""
        parsed = expect(reply, KnowledgeRetentionReply)
        lapses = parsed.lapses
        details: dict[str, Any] = {"verdict": parsed.verdict, "lapses": bounded_items(lapses)}
        if parsed.verdict != "retained":
            details.update(first_turn(lapse.turn for lapse in lapses))
        explanation = parsed.explanation
        if lapses:
            shown = [
                f"{x.kind} in turn {x.turn} (from turn {x.established_in_turn}): {shorten(x.fact, 80)}" for x in lapses
            ]
            explanation = f"{explanation} Lapses: {listing(shown)}"
        return result(RETENTION_SCORES[parsed.verdict], explanation, details)


# --- conversation_coherence -------------------------------------------------------------------------


class CoherenceIssue(BaseModel):
    turn: int = Field(ge=1, description="the turn whose answer has the issue")
    issue: Literal["ignores_context", "off_topic", "inconsistent", "repetitive", "non_sequitur"]
    description: str = Field(description="what is wrong, in one sentence")


class ConversationCoherenceReply(BaseModel):
    rating: int = Field(ge=1, le=5, description="1 = incoherent, 5 = fully coherent, per the rubric")
    issues: list[CoherenceIssue] = Field(description="every issue, in turn order (may be empty)")
    explanation: str = Field(description="why this rating, in at most three sentences")


@register
class ConversationCoherence(SessionJudge):
    """A 1–5 rating of how the agent's answers hang together across the turns, normalized (rating − 1) / 4."""

    name = "conversation_coherence"
    min_turns = 2
    response_schema = ConversationCoherenceReply
    instructions = """\
Rate the coherence of an AI agent's side of a conversation: whether each answer follows from what the
user just said and from the turns before, stays on the conversation's topic, is consistent with the
agent's earlier answers, and moves the conversation forward.
Issues: ignores_context (answers as if earlier turns had not happened), off_topic, inconsistent (with
an earlier answer), repetitive (repeats an earlier answer without progress), non_sequitur (does not
follow from the user's message).
- 5: every answer follows and builds on the conversation;
- 4: coherent, with one minor issue;
- 3: notable issues in some turns, but the conversation holds together;
- 2: several answers ignore the context or contradict earlier ones;
- 1: the answers do not form a conversation.
Judge coherence, not correctness. Give a whole-number rating and list each issue with its turn."""
    ask: ClassVar[str] = "Rate from 1 to 5 how coherent the agent's side of this conversation is."

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = (rating − 1) / 4; the first issue's turn named."""
        parsed = expect(reply, ConversationCoherenceReply)
        issues = parsed.issues
        details: dict[str, Any] = {"rating": parsed.rating, "issues": bounded_items(issues)}
        if parsed.rating < 5:
            details.update(first_turn(i.turn for i in issues))
        explanation = parsed.explanation
        if issues:
            shown = [f"{i.issue} (turn {i.turn}): {shorten(i.description, 80)}" for i in issues]
            explanation = f"{explanation} Issues: {listing(shown)}"
        return result(rating_score(parsed.rating), explanation, details)


__all__ = [
    "ConversationCoherence",
    "ConversationCompletion",
    "KnowledgeRetention",
    "SessionJudge",
    "UserFrustration",
]
