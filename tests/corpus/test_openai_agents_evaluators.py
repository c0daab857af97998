"""The OpenAI Agents SDK traced by OpenInference (openinference-instrumentation-openai-agents 2.6.0, Responses API):
its `response` spans carry `llm.finish_reason` and the offered tools (`llm.tools.{i}.tool.json_schema`), so the
default evaluators that need them score its traces instead of skipping them."""

from __future__ import annotations

from evaluators import builtin
from evaluators.sdk.runner import run_evaluators
from evaluators.traces import load_traces
from tests.conftest import CORPUS

SCENARIO = CORPUS / "oi_openai_agents__weather_handoff"


def test_finish_reason_offered_tools_and_tool_arguments_are_read() -> None:
    (trace,) = load_traces(SCENARIO)
    names = ["finish_reason", "hallucinated_tool", "tool_arguments_valid"]
    records = run_evaluators(trace, [builtin(name) for name in names])
    scored = {(r.evaluator, r.agent_name) for r in records if not r.skipped}
    by_evaluator = {name: [r for r in records if r.evaluator == name] for name in names}
    # every LLM call has its finish reason (`stop`, also on tool-call responses)
    assert len(by_evaluator["finish_reason"]) == 4 and all(r.passed for r in by_evaluator["finish_reason"])
    # the weather agent's calls name offered tools with arguments matching their schemas
    assert {("hallucinated_tool", "weather_agent"), ("tool_arguments_valid", "weather_agent")} <= scored
    # the triage agent only hands off (handoffs are not tool calls): nothing for hallucinated_tool to judge
    [triage] = [r for r in by_evaluator["hallucinated_tool"] if r.agent_name == "triage_agent"]
    assert triage.skip_reason == "no_data"
