"""CrewAI (OpenInference) and AutoGen (native tracing + OpenLLMetry) crews and teams, read as their READMEs state:
per-call tokens, tool arguments, the agent of every step, the crew's answer (the facts the generic corpus test leaves
out)."""

from __future__ import annotations

import pytest

from evaluators.traces import load_traces
from evaluators.traces.envelope import envelope_text
from evaluators.traces.model import Trace
from tests.conftest import CORPUS

CREW = "be4438cb35ad27b00e44d0c9e8a806f4"
AGENT_RUN, TEAM_RUN = "9a7518f4fcc8181d82d347aba3c30ffa", "02e0cf863af8cd3adef0ddba2857a719"
CREW_ANSWER = (
    "Lisbon tip: with 21°C and sunshine, walk the Alfama in the afternoon and end at the Miradouro de Santa Luzia "
    "for the view; bring sunglasses and a light jacket for the breeze."
)
CREW_REPORT = "Lisbon this afternoon: 21°C and sunny with a light westerly breeze, good weather for walking."
PORTO = "Porto: 17°C, cloudy, light rain expected later."

# per trace, per LLM call in start order: (input tokens, output tokens, tools asked for, the step's agent)
CALLS = {
    CREW: [
        (312, 18, ["get_weather"], "Travel Researcher"),
        (371, 27, [], "Travel Researcher"),
        (298, 46, [], "Travel Writer"),
    ],
    AGENT_RUN: [(88, 16, ["get_weather"], "weather_agent"), (131, 21, [], "weather_agent")],
    TEAM_RUN: [
        (97, 16, ["get_weather"], "researcher"),
        (140, 14, [], "researcher"),
        (163, 31, [], "writer"),
    ],
}


def _traces(scenario: str) -> dict[str, Trace]:
    return {t.trace_id: t for t in load_traces(CORPUS / scenario)}


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {**_traces("oi_crewai__crew"), **_traces("autogen_native__team")}


@pytest.mark.parametrize("trace_id", sorted(CALLS))
def test_each_llm_call_has_its_tokens_tools_and_agent(traces: dict[str, Trace], trace_id: str) -> None:
    calls = traces[trace_id].get_llm_calls()
    got = [
        (c.metrics.input_tokens, c.metrics.output_tokens, [t.name for t in c.tool_calls], c.agent_name) for c in calls
    ]
    assert got == CALLS[trace_id]
    assert all(c.metrics.cache_read_tokens == 0 and c.metrics.reasoning_tokens == 0 for c in calls)
    assert all(c.provider == "openai" for c in calls)  # never AutoGen's gen_ai.system=autogen
    assert [c.tool_calls[0].arguments for c in calls if c.tool_calls] == [
        {"city": "Lisbon" if trace_id == CREW else "Porto"}
    ]


def test_the_crews_answer_is_the_last_tasks_raw_output(traces: dict[str, Trace]) -> None:
    trace = traces[CREW]
    assert trace.input == "Plan a short afternoon in Lisbon for a visitor."  # the crew's inputs, {"request": ...}
    assert trace.output == CREW_ANSWER  # CrewOutput.raw, not a task's message history


def test_each_crew_agent_is_named_by_its_role_with_its_task_output(traces: dict[str, Trace]) -> None:
    agents = {a.agent_name: a for a in traces[CREW].agent_traces()}
    assert list(agents) == ["Travel Researcher", "Travel Writer"]
    researcher, writer = agents["Travel Researcher"], agents["Travel Writer"]
    # one task span each (`<role>._execute_core`), the task's prompt as the agent's input
    assert [a.span_name for a in researcher.agent_spans] == ["Travel Researcher._execute_core"]
    assert [a.span_name for a in writer.agent_spans] == ["Travel Writer._execute_core"]
    assert researcher.input is not None and "Current Task: Find the current weather in Lisbon" in researcher.input
    # the writer answered at once: its TaskOutput's messages end with the task prompt, its `raw` is the answer
    assert (researcher.output, writer.output) == (CREW_REPORT, CREW_ANSWER)
    assert [type(s).__name__ for s in researcher.steps] == ["LLMSpan", "ToolSpan", "LLMSpan"]
    assert researcher.tool_names_used == ["get_weather"] and writer.tool_names_used == []


def test_crew_tool_span_has_its_arguments_and_result(traces: dict[str, Trace]) -> None:
    [tool] = traces[CREW].get_tool_calls()
    assert (tool.name, tool.arguments, tool.arguments_error) == ("get_weather", {"city": "Lisbon"}, None)
    assert tool.result == "Lisbon: 21°C, sunny, light breeze from the west."
    assert tool.agent_name == "Travel Researcher"


def test_autogen_agents_are_their_runs_not_their_creation(traces: dict[str, Trace]) -> None:
    """`create_agent` spans (one per agent constructed) are not agent runs: each agent's span is its invoke_agent."""
    for trace_id, names in ((AGENT_RUN, ["weather_agent"]), (TEAM_RUN, ["researcher", "writer"])):
        trace = traces[trace_id]
        assert trace.agent_names == names
        for agent in trace.agent_traces():
            assert [s.span_name for s in agent.agent_spans] == [f"invoke_agent {agent.agent_name}"]
        created = [s for s in trace.spans if s.span_name.startswith("create_agent ")]
        assert len(created) == len(names) and all(s.kind == "other" for s in created)


def test_autogen_team_answer_and_steps(traces: dict[str, Trace]) -> None:
    team = traces[TEAM_RUN]
    assert team.input == "Write a one-line tip for a visitor to Porto today."
    assert team.output is not None and team.output.startswith("Porto tip: 17°C and cloudy")
    agents = {a.agent_name: a for a in team.agent_traces()}
    assert agents["researcher"].output == "Porto today: 17°C and cloudy, light rain later."
    assert agents["writer"].output == team.output
    assert agents["researcher"].tool_names_used == ["get_weather"] and agents["writer"].tool_names_used == []
    assert team.handoffs == []  # a round-robin team passes turns, it does not hand off
    # the runtime's messaging spans are neither LLM calls nor tools
    assert team.metrics.llm_call_count == 3 and team.metrics.tool_call_count == 1


@pytest.mark.parametrize(("trace_id", "call_id"), [(AGENT_RUN, "call_agen001abc"), (TEAM_RUN, "call_agen002abc")])
def test_autogen_tool_span_names_the_call_it_ran(traces: dict[str, Trace], trace_id: str, call_id: str) -> None:
    """AutoGen's execute_tool span carries the call id of the model's request (its arguments are on the LLM span)."""
    [tool] = traces[trace_id].get_tool_calls()
    [asked] = [c for call in traces[trace_id].get_llm_calls() for c in call.tool_calls]
    assert (tool.name, tool.call_id, asked.id) == ("get_weather", call_id, call_id)
    assert tool.description == "Get the current weather for a city."


@pytest.mark.parametrize("trace_id", [AGENT_RUN, TEAM_RUN])
def test_autogen_tool_span_gets_arguments_and_result_from_the_llm_calls(
    traces: dict[str, Trace], trace_id: str
) -> None:
    """AutoGen's native tool spans record no arguments or result: they are joined from the LLM calls' tool calls and
    the next request's tool results, by call id (evaluators.traces.tool_join)."""
    [tool] = traces[trace_id].get_tool_calls()
    assert (tool.arguments, tool.arguments_error, tool.result) == ({"city": "Porto"}, None, PORTO)


def test_envelope_prefers_a_run_results_raw_answer_to_its_messages() -> None:
    task_output = {"raw": "the answer", "messages": [{"role": "user", "content": "the task prompt"}]}
    assert envelope_text(task_output, output=True) == "the answer"
    assert envelope_text(task_output) == "the task prompt"  # a request is not read from `raw`


def test_envelope_reads_a_dict_of_one_text_value() -> None:
    assert envelope_text('{"topic": "AI agents in production"}') == "AI agents in production"
    assert envelope_text({"topic": "AI", "year": "2026"}) is None  # several inputs: no one request
    assert envelope_text({"count": 3}) is None


OI_AGENT_RUN, OI_TEAM_RUN = "22d289710debe455363bed1677e990ac", "5c2bac9f6de9e2b458d8dfa6820c4525"


@pytest.mark.parametrize(("trace_id", "agent"), [(OI_AGENT_RUN, "weather_agent"), (OI_TEAM_RUN, "researcher")])
def test_a_tool_call_in_two_nested_tool_spans_counts_once(trace_id: str, agent: str) -> None:
    """OpenInference's autogen-agentchat TOOL span wraps AutoGen's native execute_tool of the same tool: one call,
    counted as the outer span (which has the arguments and result)."""
    trace = _traces("oi_autogen__team")[trace_id]
    spans = [s for s in trace.spans if s.kind == "tool"]
    assert [s.span_name for s in spans] == [f"{agent}.get_weather", "execute_tool get_weather"]
    [tool] = trace.get_tool_calls()
    assert (tool.span_name, tool.arguments, tool.result) == (f"{agent}.get_weather", {"city": "Porto"}, PORTO)
    assert trace.metrics.tool_call_count == 1
    [agent_trace] = [a for a in trace.agent_traces() if a.agent_name == agent]
    assert agent_trace.tool_names_used == ["get_weather"] and agent_trace.metrics.tool_call_count == 1
    # the per-call facts are those of the native recording: same script, same fake server answers
    native = CALLS[AGENT_RUN if trace_id == OI_AGENT_RUN else TEAM_RUN]
    got = [
        (c.metrics.input_tokens, c.metrics.output_tokens, [t.name for t in c.tool_calls], c.agent_name)
        for c in trace.get_llm_calls()
    ]
    assert got == native
