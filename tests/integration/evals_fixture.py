"""Evaluators the integration tests load by module path (independent of the builtin catalog)."""

from __future__ import annotations

from evaluators import EvalResult, Task, Trace, evaluator
from evaluators.judges import LLMJudge, data_block


@evaluator("no_tool_errors", threshold=1.0)
def no_tool_errors(trace: Trace) -> EvalResult:
    """Fails when a tool call failed."""
    failed = [t.name for t in trace.get_tool_calls() if t.has_error]
    if not trace.get_tool_calls():
        return EvalResult.skip("no_data", "no tool calls")
    return EvalResult(0.0 if failed else 1.0, explanation=f"failed tools: {failed}" if failed else "all tools ok")


@evaluator("matches_expected")
def matches_expected(trace: Trace, task: Task) -> EvalResult:
    """Needs ground truth: skipped by the daemon."""
    return EvalResult(1.0 if trace.output == task.expected_output else 0.0)


class AnswerQuality(LLMJudge):
    """A judge of the final answer (the default JudgeVerdict reply)."""

    name = "answer_quality"
    level = "trace"
    instructions = "Score how well the answer serves the user's request."

    def build_prompt(self, trace: Trace, task: Task | None = None) -> str | EvalResult:
        if trace.output is None:
            return EvalResult.skip("no_data", "no answer")
        return f"{data_block('request', trace.input, 2000)}\n{data_block('answer', trace.output, 2000)}\nScore it."


answer_quality = AnswerQuality()
