"""Evaluators for the SDK tests, written like a user's module (postponed annotations on purpose).

Loaded as `tests.evaluators.sdk.sdk_fixture_evals`, by module path and through a test entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evaluators.sdk import BaseEvaluator, EvalResult, Param, Task, evaluator
from evaluators.traces.model import AgentTrace, Trace

if TYPE_CHECKING:  # only a name at runtime: the level must still be read from the annotation text
    from evaluators.traces.model import LLMSpan


@evaluator("fixture_span_count", threshold=0.5, aggregations=["mean", "p90"])
def span_count(trace: Trace, min_spans: int = 1) -> EvalResult:
    """Passes when the trace has at least `min_spans` spans."""
    enough = trace.span_count >= min_spans
    return EvalResult(1.0 if enough else 0.0, explanation=f"{trace.span_count} spans")


@evaluator("fixture_agent_steps")
def agent_steps(agent: AgentTrace, task: Task | None = None) -> float:
    """Scores 1 when the agent made an LLM call; records whether it was given a task."""
    return 1.0 if agent.llm_steps else 0.0


@evaluator("fixture_llm_model")
def llm_model(call: LLMSpan, prefix: str = "") -> bool:
    return bool(call.model and call.model.startswith(prefix))


@evaluator("fixture_exact_answer")
def exact_answer(trace: Trace, task: Task) -> bool:
    """Needs ground truth: the trace output must equal the task's expected output."""
    return (trace.output or "").strip() == (task.expected_output or "").strip()


class SpanBudget(BaseEvaluator):
    """Passes while the trace stays within a span budget."""

    name = "fixture_span_budget"
    max_spans = Param(1000, "most spans allowed", min=1)

    def evaluate(self, trace: Trace, task: Task | None = None) -> EvalResult:
        return EvalResult(1.0 if trace.span_count <= self.max_spans else 0.0)


def _helper(trace: Trace) -> int:
    """Not an evaluator: must not be picked up."""
    return trace.span_count


def plain_function(trace: Trace) -> float:
    """Not decorated: load_evaluator must refuse it by name."""
    return 1.0
