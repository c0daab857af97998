"""Builtin agent-level judges, run once per agent: reasoning_quality, error_recovery, path_efficiency."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..traces.model import AgentTrace
from .base import LLMJudge
from .evidence import agent_instructions, agent_label, trajectory_text
from .prompt import compose, data_block, instructions_block, question, tool_definitions_text
from .verdicts import RatingReply, expect, graded, listing, rated, shorten


def agent_blocks(agent: AgentTrace, max_chars: int, with_tools: bool = False) -> list[str | None]:
    """An agent's request, instructions, (offered tools,) steps and answer as data blocks."""
    instructions = agent_instructions(agent)
    offered = tool_definitions_text(agent.available_tools, max_chars) if with_tools else None
    return [
        data_block("agent_input", agent.input, max_chars),
        instructions_block(instructions, max_chars) if instructions else None,
        data_block("available_tools", offered, max_chars) if offered else None,
        data_block("steps", trajectory_text(agent.steps, max_chars), max_chars),
        data_block("agent_output", agent.output, max_chars),
    ]


def no_steps(agent: AgentTrace) -> EvalResult:
    return EvalResult.skip(SkipReason.NO_DATA, f"{agent_label(agent)} recorded no steps")


# --- reasoning_quality ------------------------------------------------------------------------------


@register
class ReasoningQuality(LLMJudge):
    """A 1–5 rating of the soundness of the agent's steps toward its answer, normalized (rating − 1) / 4."""

    name = "reasoning_quality"
    level = "agent"
    response_schema = RatingReply
    instructions = """\
Rate the reasoning of an AI agent from its steps: model turns (what it said, which tools it asked for)
and tool executions (arguments, results, errors).
- 5: every step follows from the request and from what earlier steps returned; tool results are read
  correctly; the output follows from them;
- 4: sound, with a minor slip that does not affect the outcome;
- 3: mostly sound, but with an unjustified step, a misread result or a gap in the argument;
- 2: several unjustified steps or misread results; the output is weakly supported;
- 1: the steps do not support the output, or contradict it.
Judge the reasoning, not the writing style."""

    def build_prompt(self, subject: AgentTrace, task: Any = None) -> str | EvalResult:
        if not subject.llm_steps:
            return no_steps(subject)
        n = self.max_data_chars
        return compose(*agent_blocks(subject, n), question("Rate the agent's reasoning from 1 to 5."))

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = (rating − 1) / 4."""
        return rated(expect(reply, RatingReply))


# --- error_recovery ---------------------------------------------------------------------------------

RECOVERY_SCORES = {"recovered": 1.0, "partially_recovered": 0.5, "not_recovered": 0.0}


class ErrorRecoveryReply(BaseModel):
    outcome: Literal["recovered", "partially_recovered", "not_recovered"]
    errors: list[str] = Field(description="each error the agent met and what it did next, in one line each")
    explanation: str = Field(description="why this outcome, in at most three sentences")


@register
class ErrorRecovery(LLMJudge):
    """How the agent handled its failed steps: recovered 1, partially 0.5, not 0; not_applicable without errors."""

    name = "error_recovery"
    level = "agent"
    response_schema = ErrorRecoveryReply
    instructions = """\
Judge how an AI agent handled the errors in its steps (failed tool calls or model calls).
- recovered: after each error the agent got the task done another way (retry, corrected arguments,
  another tool), or, when nothing could work around it, told the user plainly what failed;
- partially_recovered: it handled the error with a flaw: a needless repeat of the same failing call, a
  vague or misleading report, or part of the task dropped without saying so;
- not_recovered: it ignored the error, presented results it never got, looped, or ended without telling
  the user.
List each error and what the agent did next."""

    def build_prompt(self, subject: AgentTrace, task: Any = None) -> str | EvalResult:
        if not subject.steps:
            return no_steps(subject)
        if not subject.has_errors:
            return EvalResult.skip(SkipReason.NOT_APPLICABLE, f"{agent_label(subject)} had no errors to recover from")
        n = self.max_data_chars
        return compose(*agent_blocks(subject, n), question("How well did the agent recover from its errors?"))

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score recovered = 1, partially_recovered = 0.5, not_recovered = 0."""
        parsed = expect(reply, ErrorRecoveryReply)
        details = {"errors": [shorten(e, 300) for e in parsed.errors[:20]]}
        return graded(parsed.outcome, RECOVERY_SCORES, f"{parsed.outcome}: {parsed.explanation}", details)


# --- path_efficiency --------------------------------------------------------------------------------


class PathEfficiencyReply(BaseModel):
    rating: int = Field(ge=1, le=5, description="1 = mostly wasted steps, 5 = no wasted step")
    unnecessary_steps: list[int] = Field(description="numbers of the steps that were not needed (may be empty)")
    explanation: str = Field(description="why, naming the wasted steps")


@register
class PathEfficiency(LLMJudge):
    """A 1–5 rating of how directly the agent reached its output (no wasted steps), normalized (rating − 1) / 4."""

    name = "path_efficiency"
    level = "agent"
    response_schema = PathEfficiencyReply
    instructions = """\
Rate how efficiently an AI agent reached its output, from its numbered steps.
- 5: every step was needed; no repeated or pointless calls;
- 4: one step could have been skipped or merged;
- 3: some waste: a repeated call, a call whose result was not used, or a detour;
- 2: much waste: several redundant or irrelevant calls;
- 1: mostly wasted steps: loops, or calls unrelated to the task.
A retry after an error, with changed arguments, is not waste. Consider the tools that were available.
List the numbers of the unnecessary steps."""

    def build_prompt(self, subject: AgentTrace, task: Any = None) -> str | EvalResult:
        if not subject.steps:
            return no_steps(subject)
        n = self.max_data_chars
        blocks = agent_blocks(subject, n, with_tools=True)
        return compose(*blocks, question("Rate the efficiency of the agent's path from 1 to 5."))

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = (rating − 1) / 4; the unnecessary step numbers in details."""
        parsed = expect(reply, PathEfficiencyReply)
        steps = sorted(set(parsed.unnecessary_steps))[:50]
        explanation = parsed.explanation
        if steps:
            explanation += f" (unnecessary steps: {listing([str(s) for s in steps], limit=10, sep=', ')})"
        return rated(RatingReply(rating=parsed.rating, explanation=explanation), {"unnecessary_steps": steps})
