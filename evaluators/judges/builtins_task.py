"""Builtin `task_completion` judge: did the agent do what the user asked, criterion by criterion.

The criteria come from, in order: the first `task_types` entry whose `match` fits the trace, the
`criteria` param, or GENERIC_CRITERIA. A `match` is a mapping with any of `service` (the trace's
service name), `agent` (any agent name in the trace) — both glob patterns — and `attribute` (a mapping
of attribute names to values that the root span's attributes, or else its resource attributes, must
hold, compared as text); every key given must fit, and an empty `match` fits every trace.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..sdk.params import EvaluatorConfigError, Param
from ..sdk.registry import register
from ..sdk.result import EvalResult, SkipReason
from ..traces.model import Trace
from .base import LLMJudge
from .evidence import trace_tool_results
from .prompt import compose, data_block, question, tool_calls_block
from .verdicts import bounded_items, expect, graded, listing, shorten

GENERIC_CRITERIA = (
    "The agent did what the user asked for, or gave the information the user asked for.",
    "No part of the request was left undone without telling the user.",
    "What the final answer reports agrees with what the tools returned; failures are reported, not hidden.",
)
OUTCOME_SCORES = {"completed": 1.0, "partial": 0.5, "failed": 0.0}
MATCH_KEYS = frozenset({"service", "agent", "attribute"})


class CriterionVerdict(BaseModel):
    criterion: str = Field(description="the criterion, as given")
    verdict: Literal["met", "partially_met", "not_met"]
    reason: str = Field(description="the evidence for the verdict")


class TaskCompletionReply(BaseModel):
    criteria: list[CriterionVerdict] = Field(min_length=1, description="one verdict per criterion, in order")
    outcome: Literal["completed", "partial", "failed"]
    explanation: str = Field(description="why this outcome, in at most three sentences")


def _fail(param: str, problem: str) -> EvaluatorConfigError:
    return EvaluatorConfigError(f"task_completion: param {param!r} {problem}", param=param)


def _check_criteria(value: Any, param: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(c, str) and c.strip() for c in value):
        raise _fail(param, f"must be a list of non-empty strings, got {value!r}")
    return value


def _check_task_types(task_types: list[Any]) -> None:
    for index, entry in enumerate(task_types):
        where = f"task_types[{index}]"
        if not isinstance(entry, dict) or set(entry) - {"match", "criteria"} or "criteria" not in entry:
            raise _fail("task_types", f"entries must be {{match: {{...}}, criteria: [...]}}; {where} is {entry!r}")
        _check_criteria(entry["criteria"], "task_types")
        if not entry["criteria"]:
            raise _fail("task_types", f"{where} has no criteria")
        match = entry.get("match", {})
        if not isinstance(match, dict) or set(match) - MATCH_KEYS:
            raise _fail("task_types", f"{where}.match may only have keys {sorted(MATCH_KEYS)}, got {match!r}")
        if "attribute" in match and not isinstance(match["attribute"], dict):
            raise _fail("task_types", f"{where}.match.attribute must map attribute names to values")


def matches(trace: Trace, match: dict[str, Any]) -> bool:
    """Whether `trace` fits a task_types `match` (see the module docstring)."""
    if "service" in match and not fnmatch.fnmatchcase(trace.service_name, str(match["service"])):
        return False
    if "agent" in match and not any(fnmatch.fnmatchcase(a, str(match["agent"])) for a in trace.agent_names):
        return False
    root = trace.root
    attributes = root.attributes if root is not None else {}
    for key, wanted in dict(match.get("attribute", {})).items():
        value = attributes.get(key, trace.resource_attributes.get(key))
        if value is None or str(value) != str(wanted):
            return False
    return True


@register
class TaskCompletion(LLMJudge):
    """Whether the agent completed the user's task, per criterion: completed 1, partial 0.5, failed 0."""

    name = "task_completion"
    level = "trace"
    response_schema = TaskCompletionReply
    criteria = Param([], "criteria a completed task meets (strings); empty = generic criteria")
    task_types = Param(
        [],
        "per-task criteria: [{match: {service|agent: glob, attribute: {name: value}}, criteria: [...]}]; "
        "the first match wins over `criteria`",
    )
    instructions = """\
Judge whether an AI agent completed the task the user gave it. For each criterion, in order, give a
verdict with the evidence: met, partially_met, or not_met. Then the outcome:
- completed: every criterion is met;
- partial: some criteria are met or partly met, or the agent did what was possible and said plainly what
  it could not do;
- failed: no criterion is met, or the agent gave up, refused without cause, or reported results it did
  not get.
Use the tool calls to see what the agent actually did."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        _check_criteria(self.criteria, "criteria")
        _check_task_types(self.task_types)

    def criteria_for(self, trace: Trace) -> tuple[list[str], str]:
        """The criteria for `trace` and where they came from (`task_types[i]`, `criteria` or `generic`)."""
        for index, entry in enumerate(self.task_types):
            if matches(trace, entry.get("match", {})):
                return list(entry["criteria"]), f"task_types[{index}]"
        if self.criteria:
            return list(self.criteria), "criteria"
        return list(GENERIC_CRITERIA), "generic"

    def build_prompt(self, subject: Trace, task: Any = None) -> str | EvalResult:
        tools = trace_tool_results(subject)
        if subject.output is None and not tools:
            return EvalResult.skip(SkipReason.NO_DATA, "the trace recorded neither an answer nor tool calls")
        criteria, _ = self.criteria_for(subject)
        n = self.max_data_chars
        listed = "\n".join(f"{i}. {c}" for i, c in enumerate(criteria, start=1))
        return compose(
            data_block("user_request", subject.input, n),
            tool_calls_block(tools, n) if tools else None,
            data_block("final_answer", subject.output, n),
            question(f"Did the agent complete the task? Judge each criterion:\n{listed}", n),
        )

    def to_result(self, reply: BaseModel) -> EvalResult:
        """Score completed = 1, partial = 0.5, failed = 0; per-criterion verdicts in details."""
        parsed = expect(reply, TaskCompletionReply)
        unmet = [f"{c.verdict}: {shorten(c.criterion, 80)}" for c in parsed.criteria if c.verdict != "met"]
        explanation = f"{parsed.outcome}: {parsed.explanation}"
        explanation += f" ({listing(unmet)})" if unmet else ""
        return graded(parsed.outcome, OUTCOME_SCORES, explanation, {"criteria": bounded_items(parsed.criteria)})
