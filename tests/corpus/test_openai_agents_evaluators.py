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


CHATCMPL = CORPUS / "oi_openai_agents__chatcmpl_weather_handoff"
CHATCMPL_STREAM = CORPUS / "oi_openai_agents__chatcmpl_stream_weather_handoff"


def _by_evaluator(scenario, names: list[str]) -> dict[str, list]:
    (trace,) = load_traces(scenario)
    records = run_evaluators(trace, [builtin(name) for name in names])
    return {name: [r for r in records if r.evaluator == name] for name in names}


def test_chat_completions_spans_record_no_finish_reason_and_no_offered_tools() -> None:
    """With `OpenAIChatCompletionsModel` the `generation` spans carry neither: the evaluators that need them skip."""
    for scenario in (CHATCMPL, CHATCMPL_STREAM):
        got = _by_evaluator(scenario, ["finish_reason", "hallucinated_tool"])
        assert len(got["finish_reason"]) == 4
        assert all(r.skip_reason == "no_data" for rs in got.values() for r in rs), scenario.name
        assert {r.explanation for r in got["finish_reason"]} == {"no finish reason recorded"}


def test_chat_completions_tool_arguments_are_checked_against_the_tool_spans_schemas() -> None:
    """The function TOOL spans declare their JSON schema (`tool.parameters`): `tool_arguments_valid` scores with it."""
    for scenario in (CHATCMPL, CHATCMPL_STREAM):
        got = _by_evaluator(scenario, ["tool_arguments_valid"])["tool_arguments_valid"]
        [weather] = [r for r in got if r.agent_name == "weather_agent"]
        assert weather.scored and weather.passed, (scenario.name, weather.explanation)
        assert weather.details["checked"] == 2 and weather.details["invalid"] == 0


def test_streamed_chat_completions_output_is_scored() -> None:
    """Streamed, the output is only in `output.value` (a Responses object): answer evaluators still score it."""
    got = _by_evaluator(CHATCMPL_STREAM, ["non_empty_response", "response_length", "refusal", "pii_leak"])
    for name, records in got.items():
        scored = [r for r in records if r.scored]
        assert scored and all(r.passed for r in scored), (name, [r.explanation for r in records])
    assert len(got["non_empty_response"]) == 4 and all(r.scored for r in got["non_empty_response"])
    assert "100 chars" in got["refusal"][0].explanation  # the final answer, from the last call's output.value
