"""Builtin rubric judges: yes/no verdicts on configured rubrics for the response or for the tool use.

`rubrics` is a list of `{id, text}`: each text a yes/no question or statement ("The answer gives the
temperature in °C."). Without rubrics a judge skips with `not_configured` (`needs_config = True`).
Score = share of rubrics answered yes among those the judge answered.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..sdk.params import EvaluatorConfigError, Param
from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..traces.model import Trace
from .base import LLMJudge
from .evidence import answer_of, no_answer, trace_tool_results
from .prompt import compose, data_block, question, tool_calls_block, tool_definitions_text
from .verdicts import bounded_items, expect, listing, result, shorten, unusable


class RubricVerdict(BaseModel):
    rubric_id: str = Field(description="the rubric's id, as given")
    verdict: Literal["yes", "no"]
    reason: str = Field(description="the evidence for the verdict")


class RubricReply(BaseModel):
    verdicts: list[RubricVerdict] = Field(min_length=1, description="one verdict per rubric, in order")


def check_rubrics(owner: str, rubrics: Any) -> list[dict[str, str]]:
    """`rubrics` checked: a list of {id, text} with unique, non-empty ids and texts."""
    seen: set[str] = set()
    for index, rubric in enumerate(rubrics if isinstance(rubrics, list) else [None]):
        ok = isinstance(rubric, dict) and set(rubric) == {"id", "text"}
        ok = ok and all(isinstance(rubric[k], str) and rubric[k].strip() for k in ("id", "text"))
        if not ok:
            raise EvaluatorConfigError(
                f"{owner}: param 'rubrics' must be a list of {{id, text}} strings; item {index} is {rubric!r}",
                param="rubrics",
            )
        if rubric["id"] in seen:
            raise EvaluatorConfigError(f"{owner}: param 'rubrics' repeats the id {rubric['id']!r}", param="rubrics")
        seen.add(rubric["id"])
    return list(rubrics)


class RubricJudge(LLMJudge):
    """Base of the rubric judges: the `rubrics` param, its check, the question and the scoring."""

    needs_config = True
    response_schema = RubricReply
    rubrics = Param([], "rubrics to judge, each {id, text}: a yes/no question or statement")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        check_rubrics(self.name, self.rubrics)

    def not_configured(self) -> EvalResult | None:
        if self.rubrics:
            return None
        return EvalResult.skip(SkipReason.NOT_CONFIGURED, f"{self.name} has no rubrics; set the 'rubrics' param")

    def rubric_question(self, about: str) -> str:
        listed = "\n".join(f"- [{r['id']}] {r['text']}" for r in self.rubrics)
        return question(f"For each rubric, answer yes or no about {about}:\n{listed}", self.max_data_chars)

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score = rubrics answered yes / rubrics answered (verdicts for unknown ids are ignored)."""
        configured = {r["id"] for r in self.rubrics}
        verdicts: dict[str, RubricVerdict] = {}
        for verdict in expect(reply, RubricReply).verdicts:
            if verdict.rubric_id in configured:
                verdicts.setdefault(verdict.rubric_id, verdict)
        if not verdicts:
            return unusable(self.name, "the reply answered none of the configured rubrics")
        ordered = [verdicts[r["id"]] for r in self.rubrics if r["id"] in verdicts]
        failed = [f"{v.rubric_id} ({shorten(v.reason, 80)})" for v in ordered if v.verdict == "no"]
        unanswered = [r["id"] for r in self.rubrics if r["id"] not in verdicts]
        explanation = f"{len(ordered) - len(failed)} of {len(ordered)} rubrics met"
        explanation += f"; not met: {listing(failed)}" if failed else ""
        explanation += f"; unanswered: {listing(unanswered)}" if unanswered else ""
        details: dict[str, Any] = {"verdicts": bounded_items(ordered)}
        if unanswered:
            details["unanswered"] = unanswered[:50]
        return result((len(ordered) - len(failed)) / len(ordered), explanation, details)


@register
class RubricResponseQuality(RubricJudge):
    """Share of the configured rubrics the final answer meets (yes/no per rubric)."""

    name = "rubric_response_quality"
    level = "trace"
    instructions = """\
Judge the final answer of an AI agent against rubrics. For each rubric, answer yes when the final answer
meets it and no otherwise, with a short reason citing the answer. Use the user request and the tool
results only to understand what the answer should contain. Answer every rubric, using its id."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        skip = self.not_configured()
        if skip is not None:
            return skip
        answer = answer_of(subject.output)
        if answer is None:
            return no_answer()
        n = self.max_data_chars
        tools = trace_tool_results(subject)
        return compose(
            data_block("user_request", subject.input, n),
            tool_calls_block(tools, n, "tool_results") if tools else None,
            data_block("final_answer", answer, n),
            self.rubric_question("the final answer"),
        )


@register
class RubricToolUseQuality(RubricJudge):
    """Share of the configured rubrics the agent's tool use meets (yes/no per rubric)."""

    name = "rubric_tool_use_quality"
    level = "trace"
    instructions = """\
Judge how an AI agent used its tools against rubrics: which tools it called, in what order, with what
arguments, and what it did with the results and errors. For each rubric, answer yes when the tool use
meets it and no otherwise, with a short reason citing the calls. Answer every rubric, using its id."""

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        skip = self.not_configured()
        if skip is not None:
            return skip
        tools = list({t.name: t for agent in subject.agent_traces() for t in agent.available_tools}.values())
        calls = trace_tool_results(subject)
        if not calls and not tools:
            return EvalResult.skip(SkipReason.NOT_APPLICABLE, "the trace has no tool calls and no tools offered")
        n = self.max_data_chars
        offered = tool_definitions_text(tools, n)
        return compose(
            data_block("user_request", subject.input, n),
            data_block("available_tools", offered, n) if offered else None,
            tool_calls_block(calls, n),
            data_block("final_answer", subject.output, n),
            self.rubric_question("the agent's tool use"),
        )
