"""A turn's input is the user's message of that turn: the latest user message when the model's request carries the
whole conversation, not the first one."""

from __future__ import annotations

import json

import pytest

from evaluators.traces import load_traces
from tests.conftest import CORPUS
from tests.support.spanfactory import make_span, trace_of

SESSION_SCENARIOS = ["oi_openai__session_support", "otel_genai__session_interleaved", "pydantic_ai__session_chat"]


@pytest.mark.parametrize("scenario", SESSION_SCENARIOS)
def test_each_turns_message_in_the_recorded_conversations(scenario: str) -> None:
    """The READMEs' input of every turn (turns 2+ carry the earlier turns in their LLM requests)."""
    expected = json.loads((CORPUS / scenario / "expected.json").read_text())
    want = {t["trace_id"]: t["input_contains"] for t in expected["traces"]}
    got = {t.trace_id: t.input or "" for t in load_traces([str(CORPUS / scenario)])}
    assert sorted(got) == sorted(want)
    for trace_id, text in got.items():
        assert want[trace_id] in text, (trace_id, text)


@pytest.mark.parametrize(
    "scenario", ["adk_native__tool_agent", "adk1_native__tool_agent", "strands__tool_agent", "vercel_ai__tool_agent"]
)
def test_single_turn_traces_of_other_libraries(scenario: str) -> None:
    expected = json.loads((CORPUS / scenario / "expected.json").read_text())
    for trace in load_traces([str(CORPUS / scenario)]):
        [want] = [t["input_contains"] for t in expected["traces"] if t["trace_id"] == trace.trace_id]
        assert want in (trace.input or "")


def test_pydantic_ai_run_span_without_new_message_index() -> None:
    """Turn 3 of the recorded Pydantic AI conversation with `pydantic_ai.new_message_index` taken off the run span:
    its `pydantic_ai.all_messages` then holds the whole history, read from its first user message; the turn's
    message is still the latest one."""
    traces = {t.trace_id: t for t in load_traces([str(CORPUS / "pydantic_ai__session_chat")])}
    records = [s.record for s in traces["f8a083bbacc2be29bb82766e3aec2359"].spans]
    for record in records:
        record.attributes.pop("pydantic_ai.new_message_index", None)
    assert trace_of(*records).input == "Thanks! Will it still be like that this evening?"


def _messages(*pairs: tuple[str, str]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in pairs])


HISTORY = (
    ("user", "Book me a table for two tonight."),
    ("assistant", "Done: 8 pm at Luigi's."),
    ("user", "Make it three people, please."),
)


def test_otel_genai_agent_span_carrying_the_whole_history() -> None:
    """OTel GenAI `invoke_agent` whose `gen_ai.input.messages` (opt-in, semconv 1.37+) hold the conversation so far,
    as an app using the GenAI util may fill them; the chat call sends the same history."""
    root = make_span(
        "invoke_agent concierge",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "concierge",
            "gen_ai.input.messages": _messages(*HISTORY),
        },
    )
    chat = make_span(
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": _messages(*HISTORY),
            "gen_ai.output.messages": _messages(("assistant", "Changed to three.")),
        },
        parent=root,
    )
    assert trace_of(root, chat).input == "Make it three people, please."


def test_llm_root_without_an_agent_span() -> None:
    """A chat span alone (OTel GenAI instrumentation of a chat that keeps its history): its last user message."""
    chat = make_span(
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": _messages(*HISTORY),
        },
    )
    assert trace_of(chat).input == "Make it three people, please."


def test_the_user_repeating_an_earlier_message() -> None:
    """A turn that repeats an earlier message word for word is still that turn's message."""
    history = (("user", "yes"), ("assistant", "Shall I book it?"), ("user", "yes"))
    root = make_span(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": _messages(("user", "yes"))}
    )
    chat = make_span(
        "chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": _messages(*history)}, parent=root
    )
    assert trace_of(root, chat).input == "yes"
