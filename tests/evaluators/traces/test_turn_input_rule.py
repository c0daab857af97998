"""The rule that picks a turn's input (evaluators/traces/turn_input.py), on the shapes the corpus does not cover:
carrier envelopes holding the whole conversation, tool results sent as role "user", one input per agent, and the
rule's name for each."""

from __future__ import annotations

import json

from evaluators.traces import load_traces
from evaluators.traces.turn_input import InputSource
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of


def _parts(*messages: tuple[str, dict]) -> str:
    return json.dumps([{"role": role, "parts": [part]} for role, part in messages])


def _text(content: str) -> dict:
    return {"type": "text", "content": content}


def test_a_root_holding_the_responses_input_list_gives_its_latest_user_message() -> None:
    """Turn 3 of the recorded OpenAI Agents SDK conversation, its root given the model request's `input.value` (the
    Responses input items: user and assistant messages, function_call and function_call_output items)."""
    traces = {t.trace_id: t for t in load_traces([CORPUS / "oi_openai_agents__multi_turn"])}
    records = [s.record for s in traces["2e889b202103a60b7a8b1e618ba39fd9"].spans]
    [response] = [r for r in records if r.attributes.get("openinference.span.kind") == "LLM"]
    [root] = [r for r in records if not r.parent_span_id]
    items = json.loads(response.attributes["input.value"])
    assert items[0]["content"] == "What's the weather in Oslo right now?"  # turn 1 first
    assert any(item.get("type") == "function_call" for item in items)
    root.attributes["input.value"] = response.attributes["input.value"]
    trace = trace_of(*records)
    assert trace.input == "Thanks! Can you say all that again in one short sentence?"
    assert trace.input_source is InputSource.ROOT


def test_tool_results_sent_as_user_messages_are_not_the_question() -> None:
    """ADK/Gemini send tool results as role "user": the turn's question is the latest user *text*."""
    chat = make_span(
        "generate_content gemini-2.5-flash",
        {
            "gen_ai.operation.name": "generate_content",
            "gen_ai.input.messages": _parts(
                ("user", _text("Book a table for two.")),
                ("model", _text("Done: 8 pm.")),
                ("user", _text("Who is the contact person on my booking?")),
                ("model", {"type": "tool_call", "id": "c1", "name": "get_booking", "arguments": {}}),
                ("user", {"type": "tool_call_response", "id": "c1", "response": {"contact": "Ana"}}),
            ),
        },
    )
    trace = trace_of(chat)
    assert trace.input == "Who is the contact person on my booking?"
    assert trace.input_source is InputSource.LATEST_USER_MESSAGE


def test_an_invoke_agent_span_holding_the_history_gives_its_latest_user_message() -> None:
    """OTel GenAI `invoke_agent` with `gen_ai.input.messages` (the whole conversation) and no LLM span."""
    root = make_span(
        "invoke_agent concierge",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "concierge",
            "gen_ai.input.messages": _parts(
                ("user", _text("Book me a table for two tonight.")),
                ("assistant", _text("Done: 8 pm at Luigi's.")),
                ("user", _text("Make it three people, please.")),
            ),
        },
    )
    trace = trace_of(root)
    assert trace.input == "Make it three people, please."
    assert trace.input_source is InputSource.ROOT
    [agent] = trace.agent_traces()
    assert (agent.input, agent.input_source) == ("Make it three people, please.", InputSource.AGENT)


def test_each_agent_reads_its_own_first_request() -> None:
    """Two agents without agent-span input: each one's input is the latest user message of its own first call."""
    root = make_span("workflow", {"gen_ai.operation.name": "invoke_workflow"})
    history = (("user", _text("Hi, I need a refund.")), ("assistant", _text("Which order?")))
    calls = []
    for agent, question in (("triage", "Order 42, please."), ("refunds", "Refund order 42 to my card.")):
        span = make_span(f"invoke_agent {agent}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
                         parent=root)  # fmt: skip
        chat = make_span(
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.agent.name": agent,
                "gen_ai.input.messages": _parts(*history, ("user", _text(question))),
            },
            parent=span,
        )
        calls += [span, chat]
    trace = trace_of(root, *calls)
    got = {a.agent_name: (a.input, a.input_source) for a in trace.agent_traces()}
    assert got == {
        "triage": ("Order 42, please.", InputSource.LATEST_USER_MESSAGE),
        "refunds": ("Refund order 42 to my card.", InputSource.LATEST_USER_MESSAGE),
    }
    assert (trace.input, trace.input_source) == ("Order 42, please.", InputSource.LATEST_USER_MESSAGE)


def test_a_single_request_and_nothing_recorded() -> None:
    chat = make_span(
        "chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": _parts(("user", _text("hi")))}
    )
    assert (trace_of(chat).input, trace_of(chat).input_source) == ("hi", InputSource.LLM_REQUEST)
    bare = make_span("chat m", {"gen_ai.operation.name": "chat"})
    assert (trace_of(bare).input, trace_of(bare).input_source) == (None, None)
