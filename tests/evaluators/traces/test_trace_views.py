"""Trace views: tree building (cycles, orphans, duplicates), input/output rules, agent grouping, laziness."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from evaluators.traces import AgentSpan, LLMSpan, SpanEvent, SpanRecord, ToolSpan, Trace, build_trace, jsonutil
from tests.support.spanfactory import make_span, trace_of

MS = 1_000_000


def build_within(records: list[SpanRecord], seconds: float = 5.0) -> Trace:
    """build_trace in a thread, failing (instead of hanging the suite) if it does not finish."""
    result: list[Trace] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            trace = build_trace(records)
            touch(trace)
            result.append(trace)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "build_trace did not finish: a parent cycle hangs it"
    if errors:
        raise errors[0]
    return result[0]


def touch(trace: Trace) -> None:
    trace.get_llm_calls()
    trace.get_tool_calls()
    trace.agent_traces()
    _ = (trace.input, trace.output, trace.metrics, trace.handoffs, trace.root)


def llm(text_in: str | None = None, text_out: str | None = None, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", **extra}
    if text_in is not None:
        attrs["gen_ai.input.messages"] = json.dumps(
            [
                {"role": "system", "parts": [{"type": "text", "content": "sys"}]},
                {"role": "user", "parts": [{"type": "text", "content": text_in}]},
            ]
        )
    if text_out is not None:
        attrs["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": text_out}]}]
        )
    return attrs


def tool(name: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}


def agent(name: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


# --- tree building ------------------------------------------------------------------------------


def test_two_span_cycle_does_not_hang_and_keeps_every_span_once() -> None:
    a = make_span("a", span_id="00000000000000aa", parent="00000000000000bb")
    b = make_span("b", span_id="00000000000000bb", parent="00000000000000aa")
    trace = build_within([a, b])
    assert sorted(s.span_id for s in trace.spans) == ["00000000000000aa", "00000000000000bb"]
    assert trace.span_count == 2
    assert trace.roots  # the cycle was cut somewhere
    assert trace.roots[0].span_id == "00000000000000aa"  # at its earliest member


def test_self_parent_is_a_root() -> None:
    a = make_span("self", span_id="00000000000000a1", parent="00000000000000a1")
    child = make_span("child", parent=a)
    trace = build_within([a, child])
    assert [s.span_name for s in trace.spans] == ["self", "child"]
    assert [r.span_id for r in trace.roots] == [a.span_id]


def test_longer_cycle_with_hanging_children() -> None:
    ids = [f"00000000000000c{i}" for i in range(4)]
    ring = [make_span(f"r{i}", span_id=ids[i], parent=ids[(i + 1) % 4]) for i in range(4)]
    leaf = make_span("leaf", llm("q", "a"), parent=ids[2])
    trace = build_within([*ring, leaf])
    assert sorted(s.span_name for s in trace.spans) == ["leaf", "r0", "r1", "r2", "r3"]
    assert len({s.span_id for s in trace.spans}) == 5
    assert len(trace.get_llm_calls()) == 1


def test_missing_parents_make_roots_in_start_order() -> None:
    late = make_span("late orphan", parent="00000000000000ff", start=3_000 * MS)
    early = make_span("early orphan", parent="00000000000000fe", start=1_000 * MS)
    real_root = make_span("root", start=2_000 * MS)
    trace = build_within([late, early, real_root])
    assert [r.span_name for r in trace.roots] == ["early orphan", "root", "late orphan"]
    assert trace.root is not None and trace.root.span_name == "early orphan"


def test_duplicate_span_ids_are_counted_once() -> None:
    first = make_span("first", llm("q", "a"), span_id="00000000000000d1")
    dup = make_span("dup", llm("q2", "a2"), span_id="00000000000000d1")
    other = make_span("other", parent=first)
    trace = build_within([first, dup, other, other])
    assert trace.span_count == 2
    assert [s.span_name for s in trace.spans] == ["first", "other"]  # the first copy wins
    assert trace.metrics.llm_call_count == 1


def test_out_of_order_spans_are_ordered_depth_first_by_start_time() -> None:
    root = make_span("root", start=0 + 1 * MS, end=100 * MS)
    step2 = make_span("step2", llm("q2", "second"), parent=root, start=50 * MS, end=60 * MS)
    step1 = make_span("step1", llm("q1", "first"), parent=root, start=10 * MS, end=20 * MS)
    grandchild = make_span("gc", tool("t"), parent=step1, start=12 * MS, end=13 * MS)
    trace = build_within([grandchild, step2, step1, root])
    assert [s.span_name for s in trace.spans] == ["root", "step1", "gc", "step2"]
    assert [c.span_name for c in trace.get_llm_calls()] == ["step1", "step2"]
    assert trace.input == "q1" and trace.output == "second"
    assert trace.start_time == 1 * MS and trace.end_time == 100 * MS
    assert trace.metrics.total_duration_ms == pytest.approx(99.0)


def test_trace_identity_properties() -> None:
    root = make_span("root", resource={"service.name": "checkout"}, trace_id="ab" * 16)
    trace = trace_of(root)
    assert trace.trace_id == "ab" * 16
    assert trace.service_name == "checkout"
    assert trace.resource_attributes == {"service.name": "checkout"}
    empty = build_trace([])
    assert (empty.span_count, empty.root, empty.input, empty.output, empty.agent_traces()) == (0, None, None, None, [])
    assert empty.service_name == "" and empty.start_time == 0


# --- input / output -----------------------------------------------------------------------------


def test_plain_text_on_root() -> None:
    root = make_span("root", {"openinference.span.kind": "CHAIN", "input.value": "Hi!", "output.value": "Hello."})
    child = make_span("llm", llm("inner question", "inner answer"), parent=root)
    trace = trace_of(root, child)
    assert (trace.input, trace.output) == ("Hi!", "Hello.")


@pytest.mark.parametrize(
    ("raw_in", "raw_out", "expected_in", "expected_out"),
    [
        (
            json.dumps({"args": ["What is 2+2?"], "kwargs": {}}),
            json.dumps("4"),
            "What is 2+2?",
            "4",
        ),
        (
            json.dumps({"args": [], "kwargs": {"question": "Capital of France?"}}),
            json.dumps({"answer": "Paris"}),
            "Capital of France?",
            "Paris",
        ),
        (
            json.dumps({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Book it"}]}),
            json.dumps({"messages": [{"role": "user", "content": "Book it"}, {"role": "ai", "content": "Booked"}]}),
            "Book it",
            "Booked",
        ),
        (
            json.dumps({"new_message": {"role": "user", "parts": [{"text": "ADK question"}]}}),
            json.dumps({"content": {"role": "model", "parts": [{"text": "ADK answer"}]}}),
            "ADK question",
            "ADK answer",
        ),
        (
            json.dumps({"inputs": {"input": "LangChain in"}, "tags": [], "metadata": {}, "kwargs": {}}),
            json.dumps({"outputs": {"output": "LangChain out"}}),
            "LangChain in",
            "LangChain out",
        ),
    ],
    ids=["tl-args", "tl-kwargs", "messages", "adk-parts", "langchain"],
)
def test_json_envelopes_are_unwrapped(raw_in: str, raw_out: str, expected_in: str, expected_out: str) -> None:
    root = make_span(
        "root",
        {"traceloop.span.kind": "workflow", "traceloop.entity.input": raw_in, "traceloop.entity.output": raw_out},
    )
    trace = trace_of(root, make_span("llm", llm("inner", "inner out"), parent=root))
    assert trace.input == expected_in
    assert trace.output == expected_out


def test_truncated_envelope_degrades_to_raw_text() -> None:
    raw_in = json.dumps({"args": ["A long question"], "kwargs": {}})[:20]
    root = make_span(
        "root",
        {"traceloop.span.kind": "workflow", "traceloop.entity.input": raw_in, "traceloop.entity.output": '{"ans'},
    )
    trace = trace_of(root)
    assert trace.input == raw_in
    assert trace.output == '{"ans'


def test_agent_span_is_a_carrier_when_root_has_nothing() -> None:
    root = make_span("http POST /chat", {"http.method": "POST"})
    top_agent = make_span(
        "agent",
        {
            "openinference.span.kind": "AGENT",
            "input.value": json.dumps({"args": ["From agent"], "kwargs": {}}),
            "output.value": "Agent answer",
        },
        parent=root,
    )
    trace = trace_of(root, top_agent, make_span("llm", llm("inner", "inner out"), parent=top_agent))
    assert (trace.input, trace.output) == ("From agent", "Agent answer")


def test_fallback_to_llm_calls_first_user_and_last_answer() -> None:
    root = make_span("root", {}, start=0 + MS, end=100 * MS)
    # the later-ending call has the final answer even though it started first
    long_call = make_span("c1", llm("first question", "final answer"), parent=root, start=10 * MS, end=90 * MS)
    short_call = make_span("c2", llm("second question", "intermediate"), parent=root, start=20 * MS, end=30 * MS)
    no_user = make_span("c0", llm(None, "no user msg"), parent=root, start=5 * MS, end=6 * MS)
    trace = trace_of(root, short_call, long_call, no_user)
    assert trace.input == "first question"
    assert trace.output == "final answer"


def test_last_call_without_text_gives_no_output() -> None:
    root = make_span("root", {})
    first = make_span("c1", llm("q", "a"), parent=root, start=10 * MS, end=20 * MS)
    last = make_span("c2", llm("q", None), parent=root, start=30 * MS, end=40 * MS)
    assert trace_of(root, first, last).output is None


def test_elided_placeholder_on_the_root_does_not_hide_the_calls_content() -> None:
    elided = {"openinference.span.kind": "CHAIN", "input.value": "<elided>", "output.value": "<elided>"}
    root = make_span("root", elided)
    trace = trace_of(root, make_span("llm", llm("real question", "real answer"), parent=root))
    assert (trace.input, trace.output) == ("real question", "real answer")


def test_only_a_direct_llm_child_makes_an_llm_span_a_wrapper() -> None:
    """A model call whose tool calls a model is two calls; a direct LLM -> LLM pair is one."""
    outer = make_span("chat", llm("q", None, **{"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 1}))
    run_tool = make_span("execute_tool summarize", tool("summarize"), parent=outer)
    usage = {"gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2}
    inner = make_span("chat", llm("summarize", "s", **usage), parent=run_tool)
    trace = trace_of(outer, run_tool, inner)
    assert [c.span_id for c in trace.get_llm_calls()] == [outer.span_id, inner.span_id]
    assert trace.metrics.token_usage.input_tokens == 15
    pair = make_span("chat", llm("q", "a", **{"gen_ai.usage.input_tokens": 10}))
    child = make_span("generate_content", llm(None, None, **{"gen_ai.usage.input_tokens": 10}), parent=pair)
    paired = trace_of(pair, child)
    assert [c.span_id for c in paired.get_llm_calls()] == [child.span_id]
    assert (paired.input, paired.output) == ("q", "a")  # the counted span reads what it lacks from its wrapper


def test_input_output_none_when_nothing_says() -> None:
    trace = trace_of(make_span("root", {}), make_span("tool", tool("t")))
    assert trace.input is None and trace.output is None
    bare = trace_of(make_span("chat", {"gen_ai.operation.name": "chat"}))
    assert bare.input is None and bare.output is None


def test_llm_root_uses_its_messages() -> None:
    trace = trace_of(make_span("chat", llm("Only call", "Only answer")))
    assert (trace.input, trace.output) == ("Only call", "Only answer")


# --- agents -------------------------------------------------------------------------------------


def test_two_agents_two_agent_traces_with_their_own_steps() -> None:
    root = make_span("invoke_workflow", {"gen_ai.operation.name": "invoke_workflow"})
    triage = make_span("invoke_agent triage", agent("triage"), parent=root)
    t_llm = make_span("chat", llm("route me", "routing"), parent=triage)
    t_tool = make_span("execute_tool classify", tool("classify"), parent=triage)
    billing = make_span("invoke_agent billing", agent("billing"), parent=triage)
    b_llm1 = make_span("chat", llm("refund?", None), parent=billing)
    b_tool = make_span("execute_tool refund", tool("refund"), parent=b_llm1)
    b_tool2 = make_span("execute_tool email", tool("email"), parent=billing, status=2)
    b_llm2 = make_span("chat", llm("refund?", "Refunded."), parent=billing)
    trace = trace_of(root, triage, t_llm, t_tool, billing, b_llm1, b_tool, b_tool2, b_llm2)
    agent_traces = trace.agent_traces()
    assert [a.agent_name for a in agent_traces] == ["triage", "billing"]
    triage_trace, billing_trace = agent_traces
    assert [s.span_id for s in triage_trace.llm_steps] == [t_llm.span_id]
    assert triage_trace.tool_names_used == ["classify"]
    assert [s.span_id for s in billing_trace.llm_steps] == [b_llm1.span_id, b_llm2.span_id]
    assert billing_trace.tool_names_used == ["refund", "email"]
    assert [type(s) for s in billing_trace.steps] == [LLMSpan, ToolSpan, ToolSpan, LLMSpan]
    assert billing_trace.agent_span is not None and billing_trace.agent_span.span_id == billing.span_id
    assert billing_trace.has_errors and not triage_trace.has_errors
    assert billing_trace.metrics.llm_call_count == 2 and billing_trace.metrics.tool_call_count == 2
    assert billing_trace.metrics.error_count == 1 and billing_trace.metrics.agent_count == 1
    assert billing_trace.output == "Refunded."
    assert billing_trace.trace_id == trace.trace_id
    assert trace.metrics.agent_count == 2
    assert trace.metrics.llm_call_count == 3 and trace.metrics.tool_call_count == 3
    assert trace.metrics.error_count == 1 and trace.has_errors


def test_same_agent_twice_is_one_agent_trace() -> None:
    a1 = make_span("invoke_agent a", agent("a"))
    a2 = make_span("invoke_agent a", agent("a"))
    c1 = make_span("chat", llm("x", "y"), parent=a1)
    c2 = make_span("chat", llm("x", "z"), parent=a2)
    (agent_trace,) = trace_of(a1, c1, a2, c2).agent_traces()
    assert len(agent_trace.agent_spans) == 2
    assert [s.span_id for s in agent_trace.llm_steps] == [c1.span_id, c2.span_id]


def test_no_agent_span_gives_one_unnamed_agent_trace() -> None:
    root = make_span("root", {})
    call = make_span("chat", llm("q", "a"), parent=root)
    run = make_span("execute_tool t", tool("t"), parent=root)
    trace = trace_of(root, call, run)
    (agent_trace,) = trace.agent_traces()
    assert agent_trace.agent_name is None and agent_trace.agent_span is None
    assert agent_trace.agent_span_id is None and agent_trace.description is None
    assert len(agent_trace.steps) == 2
    assert agent_trace.tool_names_used == ["t"]
    assert agent_trace.metrics.agent_count == 0
    assert trace.agent_names == []
    assert trace_of(make_span("nothing", {})).agent_traces() == []


def test_gen_ai_agent_name_attribute_attributes_spans_without_agent_parent() -> None:
    run = make_span("execute_tool t", {**tool("t"), "gen_ai.agent.name": "solo"})
    (view,) = trace_of(run).get_tool_calls()
    assert view.agent_name == "solo"


def test_agent_available_tools_merge_agent_and_llm_definitions() -> None:
    defs = json.dumps([{"type": "function", "name": "a"}, {"type": "function", "name": "b"}])
    ag = make_span("invoke_agent x", {**agent("x"), "gen_ai.tool.definitions": json.dumps([{"name": "a"}])})
    call = make_span("chat", {**llm("q", "r"), "gen_ai.tool.definitions": defs}, parent=ag)
    (agent_trace,) = trace_of(ag, call).agent_traces()
    assert [t.name for t in agent_trace.available_tools] == ["a", "b"]


# --- laziness -----------------------------------------------------------------------------------


def _count_json_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real: Callable[..., Any] = jsonutil.json.loads

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(jsonutil.json, "loads", counting)
    return calls


def _content_heavy_spans() -> list[SpanRecord]:
    root = make_span("invoke_agent a", {**agent("a"), "gen_ai.input.messages": llm("root q")["gen_ai.input.messages"]})
    spans = [root]
    for i in range(5):
        spans.append(make_span("chat", llm(f"q{i}", f"a{i}", **{"gen_ai.tool.definitions": "[]"}), parent=root))
        spans.append(
            make_span(
                "execute_tool t",
                {**tool("t"), "gen_ai.tool.call.arguments": '{"x": 1}', "gen_ai.tool.call.result": "[1]"},
                parent=root,
            )
        )
    spans.append(
        make_span(
            "oi",
            {
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.contents": "[]",
                "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"a": 1}',
            },
            parent=root,
        )
    )
    spans.append(
        make_span(
            "call_llm",
            {
                "gcp.vertex.agent.llm_request": json.dumps({"contents": [{"role": "user", "parts": [{"text": "x"}]}]}),
                "gcp.vertex.agent.llm_response": json.dumps({"content": {"parts": [{"text": "y"}]}}),
            },
            parent=root,
        )
    )
    logged = make_span("chat", {"gen_ai.operation.name": "chat"}, parent=root)
    logged.logs = [SpanEvent("gen_ai.user.message", 1, {}, body='{"content": "from log"}', from_log=True)]
    spans.append(logged)
    return spans


def test_building_a_trace_parses_no_message_json(monkeypatch: pytest.MonkeyPatch) -> None:
    spans = _content_heavy_spans()
    calls = _count_json_loads(monkeypatch)
    trace = build_trace(spans)
    assert calls[0] == 0, "build_trace parsed message JSON"
    # cheap facts do not parse either
    _ = [(c.span_id, c.agent_name, c.span_name) for c in trace.get_llm_calls()]
    assert len(trace.get_llm_calls()) == 8
    assert calls[0] == 0
    first = trace.get_llm_calls()[0]
    assert first.messages[1].content == "q0"
    assert calls[0] > 0, "accessing .messages must parse the JSON"
    seen = calls[0]
    _ = first.messages
    assert calls[0] == seen, "messages are parsed once and cached"


def test_tool_arguments_parsed_only_on_access(monkeypatch: pytest.MonkeyPatch) -> None:
    spans = _content_heavy_spans()
    calls = _count_json_loads(monkeypatch)
    trace = build_trace(spans)
    tools = trace.get_tool_calls()
    assert calls[0] == 0 and len(tools) == 5
    assert tools[0].arguments == {"x": 1}
    assert calls[0] > 0


def test_every_view_reads_its_content_when_asked() -> None:
    trace = build_trace(_content_heavy_spans())
    calls = trace.get_llm_calls()
    assert trace.input == "root q"
    assert [c.user_input for c in calls] == ["q0", "q1", "q2", "q3", "q4", None, "x", "from log"]
    assert [c.response for c in calls][:5] == ["a0", "a1", "a2", "a3", "a4"]
    assert isinstance(trace.get_agents()[0], AgentSpan)
