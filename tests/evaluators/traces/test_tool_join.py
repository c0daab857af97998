"""The join of tool spans to the tool calls and results their trace's LLM calls recorded (evaluators/traces/tool_join):
a value on the span wins, a joined one fills what it lacks, by call id first and by position (ADK's stand-in ids)
second; placeholder ids never join; arbitrary log records and messages never make it raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators.traces import HandoffSpan, tool_join
from evaluators.traces.conventions.errors import NORMALIZER_ERRORS
from evaluators.traces.records import SpanEvent, SpanRecord
from evaluators.traces.tool_join import joinable_id, with_reported_error
from tests.support.spanfactory import make_span, trace_of

DETAILS = "gen_ai.client.inference.operation.details"


def _agent(name: str = "helper") -> SpanRecord:
    return make_span(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})


def _call(parent: SpanRecord, inputs: list[dict] | None = None, outputs: list[dict] | None = None) -> SpanRecord:
    """A chat span whose messages are only in a details log record (content in events)."""
    attributes: dict[str, Any] = {}
    if inputs is not None:
        attributes["gen_ai.input.messages"] = inputs
    if outputs is not None:
        attributes["gen_ai.output.messages"] = outputs
    span = make_span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}, parent=parent)
    span.logs.append(SpanEvent(DETAILS, span.start_time_unix_nano, attributes, from_log=True))
    return span


def _tool(parent: SpanRecord, name: str, call_id: str | None = None, **attributes: Any) -> SpanRecord:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **attributes}
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = call_id
    return make_span(f"execute_tool {name}", attrs, parent=parent)


def _asks(*calls: tuple[str, str, dict]) -> list[dict]:
    parts = [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return [{"role": "assistant", "parts": parts}]


def _answers(*results: tuple[str, Any]) -> list[dict]:
    return [{"role": "user", "parts": [{"type": "tool_call_response", "id": i, "response": r} for i, r in results]}]


def test_the_span_own_value_wins_and_a_joined_one_fills_only_what_it_lacks() -> None:
    agent = _agent()
    ask = _call(
        agent,
        [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}],
        _asks(("call_1", "get_weather", {"city": "Paris"})),
    )
    tool = _tool(agent, "get_weather", "call_1", **{"gen_ai.tool.call.arguments": '{"city": "Oslo"}'})
    after = _call(agent, _answers(("call_1", {"temperature_c": 18})))
    (step,) = trace_of(agent, ask, tool, after).get_tool_calls()
    assert step.arguments == {"city": "Oslo"}  # the span's own
    assert step.result == {"temperature_c": 18}  # joined: the span recorded none


def test_a_result_on_the_span_is_kept() -> None:
    agent = _agent()
    ask = _call(agent, [], _asks(("call_1", "get_weather", {"city": "Paris"})))
    tool = _tool(agent, "get_weather", "call_1", **{"gen_ai.tool.call.result": '{"temperature_c": 5}'})
    after = _call(agent, _answers(("call_1", {"temperature_c": 18})))
    (step,) = trace_of(agent, ask, tool, after).get_tool_calls()
    assert (step.arguments, step.result) == ({"city": "Paris"}, {"temperature_c": 5})


def test_join_by_id_reads_openai_style_tool_messages_in_log_events() -> None:
    """OTel 1.28-1.36 events: `gen_ai.assistant.message` tool_calls and `gen_ai.tool.message` {content, id}."""
    agent = _agent()
    first = make_span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}, parent=agent)
    tool = _tool(agent, "lookup", "call_9")
    later = make_span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}, parent=agent)
    call = {"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    later.logs += [
        SpanEvent("gen_ai.user.message", 0, {}, {"content": "find x"}, True),
        SpanEvent("gen_ai.assistant.message", 0, {}, {"tool_calls": [call]}, True),
        SpanEvent("gen_ai.tool.message", 0, {}, {"content": '{"found": true}', "id": "call_9"}, True),
    ]
    (step,) = trace_of(agent, first, tool, later).get_tool_calls()
    assert (step.arguments, step.result) == ({"q": "x"}, {"found": True})


def test_a_failed_vercel_tool_call_gets_its_error_from_the_next_steps_tool_result() -> None:
    """`ai.toolCall` records a result only on success; the next step's `ai.prompt.messages` holds the error output."""
    root = make_span("ai.generateText", {"ai.operationId": "ai.generateText"})
    first = make_span("ai.generateText.doGenerate", {"ai.operationId": "ai.generateText.doGenerate"}, parent=root)
    args = '{"from": "USD"}'
    tool = make_span(
        "ai.toolCall",
        {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "convert",
            "ai.toolCall.id": "call_v1",
            "ai.toolCall.args": args,
        },
        parent=root,
        status=2,
    )
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "convert"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "call_v1", "toolName": "convert", "input": {"from": "USD"}}
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call_v1",
                    "toolName": "convert",
                    "output": {"type": "error-text", "value": "HTTP 503 from upstream"},
                }
            ],
        },
    ]
    second = make_span(
        "ai.generateText.doGenerate",
        {"ai.operationId": "ai.generateText.doGenerate", "ai.prompt.messages": json.dumps(messages)},
        parent=root,
    )
    (step,) = trace_of(root, first, tool, second).get_tool_calls()
    assert step.arguments == {"from": "USD"}
    assert "HTTP 503 from upstream" in json.dumps(step.result)


def test_an_id_that_matches_nothing_joins_nothing() -> None:
    agent = _agent()
    ask = _call(agent, [], _asks(("call_1", "get_weather", {"city": "Paris"})))
    tool = _tool(agent, "get_time", "call_77")  # neither the id nor the tool's name was requested
    after = _call(agent, _answers(("call_1", {"temperature_c": 18})))
    (step,) = trace_of(agent, ask, tool, after).get_tool_calls()
    assert (step.arguments, step.result, step.recorded_result) == (None, None, None)


def test_a_placeholder_id_never_joins() -> None:
    assert joinable_id("<not specified>") is None and joinable_id("") is None and joinable_id(None) is None
    assert joinable_id(" call_1 ") == "call_1"
    other = _agent("other")  # the placeholder results live in another agent's calls: no caller by position
    listed = _call(
        other, _answers(("<not specified>", {"secret": 1})), _asks(("<not specified>", "get_time", {"a": 1}))
    )
    agent = _agent()
    tool = _tool(agent, "get_time", "<not specified>")
    (step,) = trace_of(other, listed, agent, tool).get_tool_calls()
    assert (step.arguments, step.result) == (None, None)


def test_adk_stand_in_ids_join_by_position() -> None:
    """ADK: the span has `adk-<uuid>`, the model and the logs `{name}_{index}`; two calls of one tool in one turn,
    and an older turn's same stand-in id in the resent history (the latest result wins)."""
    agent = _agent()
    old = _answers(("get_weather_0", {"city": "Rome", "temperature_c": 30}))
    ask = _call(
        agent,
        old,
        _asks(("get_weather_0", "get_weather", {"city": "Paris"}), ("get_weather_1", "get_weather", {"city": "Oslo"})),
    )
    paris = _tool(agent, "get_weather", "adk-1111")
    oslo = _tool(agent, "get_weather", "adk-2222")
    history = (
        old
        + _asks(("get_weather_0", "get_weather", {"city": "Paris"}))
        + _answers(
            ("get_weather_0", {"city": "Paris", "temperature_c": 18}),
            ("get_weather_1", {"city": "Oslo", "temperature_c": 2}),
        )
    )
    after = _call(agent, history)
    steps = trace_of(agent, ask, paris, oslo, after).get_tool_calls()
    assert [(s.arguments, s.result) for s in steps] == [
        ({"city": "Paris"}, {"city": "Paris", "temperature_c": 18}),
        ({"city": "Oslo"}, {"city": "Oslo", "temperature_c": 2}),
    ]


def test_a_handoff_target_comes_from_the_joined_arguments() -> None:
    agent = _agent("triage")
    ask = _call(agent, [], _asks(("transfer_to_agent_0", "transfer_to_agent", {"agent_name": "billing"})))
    handoff = _tool(agent, "transfer_to_agent", "adk-1", **{"gen_ai.tool.type": "TransferToAgentTool"})
    trace = trace_of(agent, ask, handoff)
    assert [(h.from_agent, h.to_agent) for h in trace.handoffs] == [("triage", "billing")]
    assert isinstance(next(s for s in trace.spans if s.span_id == handoff.span_id), HandoffSpan)


def test_each_llm_call_is_indexed_once_however_many_tool_spans_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded work: a long agent loop (a call, a tool, a call, ...) indexes each call's messages once."""
    indexed: list[str] = []
    real = tool_join._index_call

    def counting(call: Any) -> Any:
        indexed.append(call.span_id)
        return real(call)

    monkeypatch.setattr(tool_join, "_index_call", counting)
    agent = _agent()
    spans: list[SpanRecord] = [agent]
    for n in range(300):
        spans.append(_call(agent, _answers((f"c{n - 1}", {"n": n - 1})), _asks((f"c{n}", "step", {"n": n}))))
        spans.append(_tool(agent, "step", f"adk-{n}"))
    spans.append(_call(agent, _answers(("c299", {"n": 299}))))
    steps = trace_of(*spans).get_tool_calls()
    assert [(s.arguments, s.result) for s in steps] == [({"n": n}, {"n": n}) for n in range(300)]
    assert len(indexed) == len(set(indexed)) == 301


def test_a_bare_error_marker_is_followed_by_the_error_the_result_reports() -> None:
    record = make_span("execute_tool t", status=2, status_message="TOOL_ERROR")
    assert with_reported_error("TOOL_ERROR", record, {"error": "boom (HTTP 503)"}) == "TOOL_ERROR: boom (HTTP 503)"
    assert with_reported_error("TOOL_ERROR", record, {"error": {"message": "quota"}}) == "TOOL_ERROR: quota"
    assert with_reported_error("TOOL_ERROR", record, {"ok": True}) == "TOOL_ERROR"
    assert with_reported_error("boom (HTTP 503)", record, {"error": "boom (HTTP 503)"}) == "boom (HTTP 503)"
    assert with_reported_error(None, record, {"error": "x"}) is None
    record.events.append(SpanEvent("exception", 0, {"exception.type": "ValueError", "exception.message": "bad"}))
    assert with_reported_error("ValueError: bad", record, {"error": "other"}) == "ValueError: bad"


# --- never raises ---------------------------------------------------------------------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "parts",
                    "type",
                    "id",
                    "name",
                    "arguments",
                    "response",
                    "content",
                    "tool_calls",
                    "tool_call_id",
                    "function",
                    "result",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        ),
        st.text(max_size=30).map(lambda t: json.dumps(t)),
    ),
    max_leaves=20,
)
_event_names = st.sampled_from(
    [DETAILS, "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message", "gen_ai.choice", "other"]
)
_events = st.builds(
    lambda name, body, attrs: SpanEvent(name, 0, attrs, body, True),
    _event_names,
    _values,
    st.dictionaries(
        st.sampled_from(["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions", "content"]),
        _values,
        max_size=3,
    ),
)
_ids = st.one_of(st.none(), st.sampled_from(["call_1", "<not specified>", "", "get_weather_0"]), st.text(max_size=8))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(st.lists(_events, max_size=4), min_size=0, max_size=3),
    tools=st.lists(st.tuples(st.sampled_from(["get_weather", "transfer_to_agent", ""]), _ids, _values), max_size=3),
)
def test_the_join_never_raises(calls: list[list[SpanEvent]], tools: list[tuple[str, Any, Any]]) -> None:
    before = sum(NORMALIZER_ERRORS.counts().values())
    agent = _agent()
    spans = [agent]
    for events in calls:
        span = make_span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}, parent=agent)
        span.logs.extend(events)
        spans.append(span)
        for name, call_id, arguments in tools:
            attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
            if call_id is not None:
                attrs["gen_ai.tool.call.id"] = call_id
            if isinstance(arguments, str):
                attrs["gen_ai.tool.call.arguments"] = arguments
            spans.append(make_span(f"execute_tool {name}", attrs, parent=agent))
    trace = trace_of(*spans)
    for step in trace.get_tool_calls():
        _ = (step.arguments, step.arguments_error, step.result, step.recorded_arguments, step.recorded_result)
    for handoff in trace.handoffs:
        assert handoff.to_agent is None or isinstance(handoff.to_agent, str)
    assert sum(NORMALIZER_ERRORS.counts().values()) == before
