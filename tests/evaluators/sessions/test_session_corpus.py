"""Done when: real traces from three libraries with their own session ids become sessions with the right turns in
the right order (ids, inputs, answers, tokens from the READMEs); two interleaved conversations are told apart."""

from __future__ import annotations

import json

import pytest

from evaluators.sessions import group_sessions
from evaluators.traces import load_traces
from tests.conftest import CORPUS

# scenario → library: OpenInference (openai), OTel GenAI (google-genai + util-genai), Pydantic AI
SCENARIOS = ["oi_openai__session_support", "otel_genai__session_interleaved", "pydantic_ai__session_chat"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sessions_and_their_turns(scenario: str) -> None:
    expected = json.loads((CORPUS / scenario / "expected.json").read_text())
    facts = {t["trace_id"]: t for t in expected["traces"]}
    sessions = group_sessions(load_traces([str(CORPUS / scenario)]))
    want = {s["session_id"]: s for s in expected["sessions"]}
    assert sorted(s.session_id for s in sessions) == sorted(want)
    for session in sessions:
        w = want[session.session_id]
        assert session.source == w["attribute"]
        assert session.trace_ids == w["trace_ids"]  # turn order
        assert len(session.turns) == w["turns"] and session.ended == "idle"
        for number, turn in enumerate(session.turns, start=1):
            fact = facts[turn.trace_id]
            assert fact["session_id"] == session.session_id and fact["turn"] == number
            assert fact["input_contains"] in (turn.user_message or "")
            assert fact["output_contains"] in (turn.answer or "")
            assert list(turn.tool_calls) == fact["tool_calls"]
            assert sorted(turn.agents) == fact["agents"]
            assert (turn.input_tokens, turn.output_tokens) == (fact["input_tokens"], fact["output_tokens"])
            assert turn.has_error is fact["has_error"]
        assert session.total_tokens == sum(facts[i]["input_tokens"] + facts[i]["output_tokens"] for i in w["trace_ids"])


def test_totals_stated_in_the_readmes() -> None:
    """oi_openai__session_support: 1138 in / 184 out; otel_genai: trip 550/67, HR 479/95; Pydantic AI 676/91."""
    totals = {}
    for scenario in SCENARIOS:
        for s in group_sessions(load_traces([str(CORPUS / scenario)])):
            totals[s.session_id] = (sum(t.input_tokens for t in s.turns), sum(t.output_tokens for t in s.turns))
    assert totals == {
        "c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95": (1138, 184),
        "conv_trip_7Hq2Lx9d": (550, 67),
        "conv_hr_3Fz8Rk1p": (479, 95),
        "01a2198c-2593-765b-ad51-0353bc5937bf": (676, 91),
    }


def test_interleaved_conversations_are_told_apart() -> None:
    traces = load_traces([str(CORPUS / "otel_genai__session_interleaved")])
    starts = [t.trace_id for t in sorted(traces, key=lambda t: t.start_time)]
    assert starts == [  # the turns alternate in time
        "e0321351a2947eb578d9c1d7f36944ef",
        "5c192897c965467218d14d29d19c6440",
        "c5723ccf5269af6b6ace9b66427c1c00",
        "fde37c741e68b8e0f80dcda1d98e3137",
    ]
    sessions = {s.session_id: s for s in group_sessions(traces)}
    assert sessions["conv_trip_7Hq2Lx9d"].user_messages == [
        "I'm spending the weekend in Tokyo. What's the weather there right now?",
        "Great, and what should I pack for that?",
    ]
    assert sessions["conv_hr_3Fz8Rk1p"].user_messages == [
        "How many vacation days do new employees get?",
        "And can I carry unused vacation days over to next year?",
    ]


def test_all_session_scenarios_together() -> None:
    """Files of several libraries at once: each conversation stays whole, single-turn ADK and Pydantic AI runs
    are sessions of one turn, and traces without an id belong to none."""
    paths = [
        str(CORPUS / name)
        for name in (*SCENARIOS, "adk_native__tool_agent", "pydantic_ai__tool_agent", "oi_openai__tool_agent")
    ]
    traces = load_traces(paths)
    sessions = group_sessions(traces)
    turns = {s.session_id: len(s.turns) for s in sessions}
    assert turns == {
        "c0a8f1d2-5b7e-4e21-9a43-7d1f0e6b2c95": 3,
        "conv_trip_7Hq2Lx9d": 2,
        "conv_hr_3Fz8Rk1p": 2,
        "01a2198c-2593-765b-ad51-0353bc5937bf": 3,
        "5eb91150-71fc-4774-ade8-cbb370f344a0": 1,
        "01a20795-384c-72f4-bcd3-44b44d226c2a": 1,
    }
    assert sum(turns.values()) == len(traces) - 1  # oi_openai__tool_agent has no session id
