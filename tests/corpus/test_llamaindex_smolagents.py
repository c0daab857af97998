"""LlamaIndex and smolagents through OpenInference, read from their recorded traces: the facts the generic corpus
test does not check (retrieved documents, per-call tokens against the fake server's log, tool arguments and
results, LLM-kind spans that make no request, the answer instead of a Python repr, final_answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators import builtin, run_evaluators
from evaluators.judges.evidence import retrievals_text
from evaluators.traces import Trace, load_traces
from evaluators.traces.envelope import envelope_text
from evaluators.traces.messages import AssistantMessage, ToolMessage, UserMessage
from evaluators.traces.spans import LLMSpan, ToolSpan
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of

QUERY_ENGINE = CORPUS / "oi_llamaindex__query_engine"
AGENT = CORPUS / "oi_llamaindex__agent"
SMOL = CORPUS / "oi_smolagents__tool_agent"

INDEXING, QUERY = "945ed45e6c9d1b862d3be64aa206d4e3", "cd56f7a2d522c11be631e136588c77b9"
LISBON, ATLANTIS = "1a5216ed68ba93d794b60d13ff0eac83", "314c3acbc85c19e11587ef76b8bca745"
CALLER, CODER = "e34f529a436dc79f9bb151b17e6b5943", "371dfb380010c47065a6fc1025aa75cd"


def _traces(scenario: Path) -> dict[str, Trace]:
    return {t.trace_id: t for t in load_traces(scenario)}


def _chat_requests(scenario: Path, trace: Trace) -> list[dict]:
    """The fake server's Chat Completions exchanges made while the trace ran, in order."""
    start, end = trace.start_time / 1e9, trace.end_time / 1e9
    log = [json.loads(line) for line in (scenario / "fake_llm_log.jsonl").read_text().splitlines()]
    return [e for e in log if e["path"] == "/v1/chat/completions" and start <= e["t"] <= end]


@pytest.mark.parametrize(
    ("scenario", "trace_id"),
    [
        (QUERY_ENGINE, INDEXING),
        (QUERY_ENGINE, QUERY),
        (AGENT, LISBON),
        (AGENT, ATLANTIS),
        (SMOL, CALLER),
        (SMOL, CODER),
    ],
    ids=["index-build", "query", "agent-lisbon", "agent-tool-error", "tool-calling-agent", "code-agent"],
)
def test_llm_calls_are_the_requests_the_server_saw_with_their_tokens(scenario: Path, trace_id: str) -> None:
    trace = _traces(scenario)[trace_id]
    requests = _chat_requests(scenario, trace)
    calls = trace.get_llm_calls()
    want = [(e["response"]["usage"]["prompt_tokens"], e["response"]["usage"]["completion_tokens"]) for e in requests]
    assert [(c.metrics.input_tokens, c.metrics.output_tokens) for c in calls] == want
    assert trace.metrics.llm_call_count == len(requests)
    for call, exchange in zip(calls, requests, strict=True):
        message = exchange["response"]["choices"][0]["message"]
        asked = [t["function"]["name"] for t in message.get("tool_calls") or []]
        assert [t.name for t in call.tool_calls] == asked
        assert call.response == (message["content"] or None)


def test_llm_kind_spans_that_make_no_request_are_not_calls() -> None:
    """LlamaIndex `OpenAI.predict` (around the chat span) and `OpenAI._prepare_chat_with_tools` (beside it)."""
    no_call = {"OpenAI.predict", "OpenAI._prepare_chat_with_tools"}
    for scenario in (QUERY_ENGINE, AGENT):
        for trace in load_traces(scenario):
            helpers = [s for s in trace.spans if s.span_name in no_call]
            assert helpers or trace.trace_id == INDEXING
            assert not any(isinstance(s, LLMSpan) for s in helpers)
    lisbon = _traces(AGENT)[LISBON]
    assert [s.span_name for s in lisbon.get_llm_calls()] == ["OpenAI.astream_chat"] * 3


def test_retrieval_documents_with_ids_scores_and_content() -> None:
    trace = _traces(QUERY_ENGINE)[QUERY]
    (retrieval,) = trace.get_retrievals()  # `retrieve` around `_retrieve`: one retrieval
    assert retrieval.query == "How long do I have to submit my travel expenses?"
    assert [(d.id, round(d.score or 0, 4)) for d in retrieval.documents] == [
        ("handbook-travel", 0.8165),
        ("handbook-travel-limits", 0.3333),
    ]
    assert retrieval.documents[0].content == (
        "Travel expenses must be submitted within 30 days of returning from the trip, through the Expenses portal, "
        "with every receipt attached."
    )
    assert "[document 1]" in (retrievals_text(trace.get_retrievals(), 4000) or "")
    # the documents reached the model: the one call's user message holds them
    (call,) = trace.get_llm_calls()
    assert retrieval.documents[1].content in (call.messages[1].content or "")


def test_the_index_build_is_embeddings_only() -> None:
    trace = _traces(QUERY_ENGINE)[INDEXING]
    assert [s.span_name for s in trace.spans] == ["OpenAIEmbedding.get_text_embedding_batch"]
    assert trace.get_llm_calls() == [] and trace.input is None and trace.output is None


@pytest.mark.parametrize(
    ("trace_id", "answer"),
    [
        (LISBON, "It's 21°C and sunny in Lisbon: wear a T-shirt, light trousers and sunglasses."),
        (ATLANTIS, "Sorry, I couldn't get the weather for Atlantis: the weather service is unavailable right now."),
    ],
)
def test_the_agent_answer_is_text_not_the_repr_in_output_value(trace_id: str, answer: str) -> None:
    trace = _traces(AGENT)[trace_id]
    root = trace.root
    assert root is not None and str(root.attributes["output.value"]).startswith("StopEvent(result=AgentOutput(")
    assert trace.output == answer
    assert [a.output for a in trace.agent_traces()] == [answer]


def test_object_reprs_are_no_envelope_text() -> None:
    assert envelope_text("StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT...") is None
    assert envelope_text("<workflows.context.context.Context object at 0x7f5b04f1f090>") is None
    assert envelope_text("Paris (France) is the capital.") == "Paris (France) is the capital."
    assert envelope_text("Call f(x) = 2x") == "Call f(x) = 2x"


def test_llamaindex_tool_arguments_results_and_the_failing_tool() -> None:
    traces = _traces(AGENT)
    tools = traces[LISBON].get_tool_calls()
    assert [(t.name, t.arguments, t.arguments_error) for t in tools] == [
        ("get_weather", {"city": "Lisbon"}, None),
        ("suggest_outfit", {"temperature_c": 21, "conditions": "sunny"}, None),
    ]
    # the ToolOutput envelope's raw_output, not its blocks
    assert [t.result for t in tools] == [
        {"city": "Lisbon", "temperature_c": 21, "conditions": "sunny"},
        "T-shirt, light trousers and sunglasses.",
    ]
    (failed,) = traces[ATLANTIS].get_tool_calls()
    assert failed.name == "get_weather" and failed.arguments == {"city": "Atlantis"}
    assert failed.error == "RuntimeError: weather service unavailable: HTTP 503 from weather.internal"
    (rate,) = [r for r in run_evaluators(traces[ATLANTIS], [builtin("tool_success_rate")]) if r.scored]
    assert rate.score == 0.0 and "get_weather" in rate.explanation
    # the error went back to the model as the tool message
    last = traces[ATLANTIS].get_llm_calls()[-1]
    assert isinstance(last.messages[-1], ToolMessage) and "HTTP 503" in last.messages[-1].content


def test_smolagents_agents_tools_and_final_answer() -> None:
    traces = _traces(SMOL)
    caller, coder = traces[CALLER], traces[CODER]
    assert (caller.agent_names, coder.agent_names) == (["weather_agent"], ["weather_coder"])
    for trace in (caller, coder):
        tools = trace.get_tool_calls()
        # tool spans are named after the class (GetWeatherTool, SimpleTool for @tool): the tool is tool.name
        assert [(t.span_name, t.name) for t in tools] == [
            ("GetWeatherTool", "get_weather"),
            ("SimpleTool", "suggest_outfit"),
        ]
        final = [s for s in trace.spans if s.span_name == "FinalAnswerTool"]
        assert len(final) == 1 and not isinstance(final[0], ToolSpan)
        assert trace.metrics.tool_call_count == 2
    # the model asked for final_answer (a requested call, offered as a tool); its argument is the trace's answer
    last = caller.get_llm_calls()[-1]
    assert [(c.name, c.arguments) for c in last.tool_calls] == [("final_answer", {"answer": caller.output})]
    assert caller.output == "It's 21°C and sunny in Lisbon: wear a T-shirt, light trousers and sunglasses."
    assert coder.output == "It's 3°C with snow showers in Oslo: wear a warm coat, gloves and waterproof boots."
    assert [t.arguments for t in coder.get_tool_calls()] == [
        {"city": "Oslo"},
        {"temperature_c": 3, "conditions": "snow showers"},
    ]
    # the AGENT span repeats the run's total in llm.token_count.*: counted once, from the calls
    root = caller.root
    assert root is not None and root.attributes["llm.token_count.prompt"] == caller.metrics.token_usage.input_tokens
    assert caller.metrics.token_usage.input_tokens == 1204 + 1263 + 1318


def test_smolagents_messages_and_input() -> None:
    caller = _traces(SMOL)[CALLER]
    assert caller.input == "What's the weather in Lisbon, and what should I wear?"  # the run's task
    messages = caller.get_llm_calls()[-1].messages
    assert [type(m) for m in messages[1:]] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
        ToolMessage,
    ]
    assert messages[2].content.startswith("Calling tools:") and messages[3].content.startswith("Observation:")


def test_positional_call_arguments_take_the_declared_names() -> None:
    """A CodeAgent calls a tool positionally: `{"args": [...], "kwargs": {}}` plus smolagents' own flag."""
    span = make_span(
        "LookupTool",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup",
            "tool.parameters": json.dumps({"city": {"type": "string"}, "units": {"type": "string"}}),
            "input.value": json.dumps({"args": ["Oslo"], "sanitize_inputs_outputs": False, "kwargs": {"units": "C"}}),
        },
    )
    (tool,) = trace_of(span).get_tool_calls()
    assert tool.arguments == {"city": "Oslo", "units": "C"}
    unnamed = make_span(
        "t",
        {"openinference.span.kind": "TOOL", "tool.name": "t", "input.value": json.dumps({"args": [1], "kwargs": {}})},
    )
    (tool,) = trace_of(unnamed).get_tool_calls()
    assert tool.arguments == {"args": [1], "kwargs": {}}  # no names to give: as recorded


def test_a_structured_predict_around_a_program_is_not_a_second_call() -> None:
    """LlamaIndex `structured_predict` (LLM kind, no request) → a program (CHAIN) → the chat call: one call."""
    outer = make_span("OpenAI.structured_predict", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"})
    program = make_span("FunctionCallingProgram.__call__", {"openinference.span.kind": "CHAIN"}, parent=outer)
    chat = make_span(
        "OpenAI.chat",
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Extract the city: I live in Oslo.",
            "llm.token_count.prompt": 40,
            "llm.token_count.completion": 9,
        },
        parent=program,
    )
    trace = trace_of(outer, program, chat)
    assert [c.span_name for c in trace.get_llm_calls()] == ["OpenAI.chat"]
    assert trace.metrics.token_usage.input_tokens == 40
    # a failed request that recorded nothing else is still a call
    failed = make_span("OpenAI.chat", {"openinference.span.kind": "LLM"}, status=2, status_message="APIConnectionError")
    assert len(trace_of(failed).get_llm_calls()) == 1
