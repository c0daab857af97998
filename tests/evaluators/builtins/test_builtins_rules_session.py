"""The session-level rule builtins on scripted conversations (Sessions built from Turns, and from traces) and on
the recorded support conversation of the corpus."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from evaluators import builtin, list_builtins, load_traces
from evaluators.sdk import default_builtins, dispatch_session
from evaluators.sessions import Session, Turn, TurnError, group_sessions
from evaluators.signatures import STEP_KINDS, failure_signature
from tests.conftest import CORPUS
from tests.support.builtins_spans import chat, tool
from tests.support.spanfactory import make_span, next_start, trace_of

SESSION_RULES = (
    "abandonment",
    "human_handoff_request",
    "session_token_budget",
    "session_turn_budget",
    "turn_errors",
    "user_rephrase",
)
SUPPORT = CORPUS / "oi_openai__session_support"


def turn(
    n: int,
    user: str | None,
    answer: str | None = "Sure.",
    *,
    tools: tuple[str, ...] = (),
    errors: tuple[TurnError, ...] = (),
    tokens: int = 100,
) -> Turn:
    start = 1_700_000_000 * 10**9 + n * 60 * 10**9
    return Turn(f"{n:032x}", start, start + 10**9, user, answer, tools, errors, ("bot",), tokens, 0)


def session(*turns: Turn, ended: Any = "idle") -> Session:
    return Session.of("conv-1", turns, "session.id", ended)


def verdicts(subject: Session) -> dict[str, tuple[float | None, bool | None]]:
    results = dispatch_session(subject, [builtin(name) for name in SESSION_RULES])
    return {d.evaluator.name: (d.result.score, d.result.passed) for d in results}


WEATHER_ERROR = TurnError("tool", "get_weather", "RuntimeError: weather service unavailable (HTTP 503)")

CLEAN = session(
    turn(1, "What's the weather in Paris today?", "It's 18°C and sunny in Paris."),
    turn(2, "And in Berlin?", "Berlin is 12°C with clouds."),
    turn(3, "Thanks, that's all!", "You're welcome, have a nice day."),
)
REPHRASE = session(
    turn(1, "Can you cancel my order 4412 and refund the card?", "Your order 4412 has shipped."),
    turn(2, "Please cancel order 4412 and refund my card.", "I have cancelled order 4412; the refund takes 3 days."),
)
HANDOFF = session(
    turn(1, "My booking shows the wrong date.", "Which booking do you mean?"),
    turn(2, "I'd like to speak to a real person, please.", "Connecting you now."),
)
ABANDONED = session(
    turn(1, "Is it raining in Oslo?", "Yes, light rain in Oslo."),
    turn(
        2,
        "What about tomorrow in Oslo?",
        "Sorry, something went wrong.",
        tools=("get_weather",),
        errors=(WEATHER_ERROR,),
    ),
)


def test_the_session_rules_are_registered_at_the_session_level_and_in_the_default_set() -> None:
    infos = {i.name: i for i in list_builtins()}
    for name in SESSION_RULES:
        assert infos[name].level == "session" and infos[name].kind == "rule", name
        assert all(p.description for p in infos[name].params), name
    assert set(SESSION_RULES) <= {i.name for i in default_builtins()}
    assert "session" in STEP_KINDS


def test_a_clean_conversation_passes_every_session_rule() -> None:
    assert verdicts(CLEAN) == {name: (1.0, True) for name in SESSION_RULES}


def test_a_rephrased_request_fails_user_rephrase_only() -> None:
    got = verdicts(REPHRASE)
    assert got.pop("user_rephrase") == (0.0, False)
    assert got == {name: (1.0, True) for name in SESSION_RULES if name != "user_rephrase"}
    result = builtin("user_rephrase").run(REPHRASE)
    assert "turn 2" in result.explanation and "alike turn 1" in result.explanation
    assert "Please cancel order 4412" in result.explanation
    [item] = result.details["rephrases"]
    assert item["turn"] == 2 and item["earlier_turn"] == 1 and item["trace_id"] == REPHRASE.turns[1].trace_id


def test_an_explicit_complaint_counts_as_a_rephrase_without_shared_words() -> None:
    subject = session(turn(1, "Book a table for two at eight."), turn(2, "No, I said tomorrow!"))
    result = builtin("user_rephrase").run(subject)
    assert result.passed is False and result.details["rephrases"][0]["phrase"] == "No, I said"
    assert result.details["rephrases"][0]["earlier_turn"] is None


def test_different_requests_on_one_template_are_not_rephrases() -> None:
    subject = session(
        turn(1, "Book a flight to Paris on Monday morning."),
        turn(2, "Book a hotel in Paris for Monday night."),
        turn(3, "ok"),
        turn(4, "ok"),  # too short to compare: not a repeat
    )
    assert builtin("user_rephrase").run(subject).passed is True
    assert builtin("user_rephrase", min_similarity=0.5).run(subject).passed is False


def test_user_rephrase_skips_a_single_turn() -> None:
    result = builtin("user_rephrase").run(session(turn(1, "That's not what I asked.")))
    assert result.is_skipped and result.skip_reason == "no_data"


def test_a_handoff_request_fails_human_handoff_request_only() -> None:
    got = verdicts(HANDOFF)
    assert got.pop("human_handoff_request") == (0.0, False)
    assert got == {name: (1.0, True) for name in SESSION_RULES if name != "human_handoff_request"}
    result = builtin("human_handoff_request").run(HANDOFF)
    assert result.explanation.startswith("turn 2 hands over to a human")
    assert "speak to a real person" in result.explanation and result.details["turns"] == [2]


def test_a_handoff_tool_alone_is_a_handoff_and_transfer_to_agent_is_not() -> None:
    by_tool = session(turn(1, "Help with my refund", tools=("escalate_to_human_support",)))
    result = builtin("human_handoff_request").run(by_tool)
    assert result.passed is False and result.failure is not None and result.failure.step_kind == "tool"
    agents = session(turn(1, "Help with my refund", tools=("transfer_to_agent", "transfer_to_billing")))
    assert builtin("human_handoff_request").run(agents).passed is True


def test_an_abandonment_after_a_tool_error() -> None:
    got = verdicts(ABANDONED)
    assert got["abandonment"] == (0.0, False)
    assert got["turn_errors"] == (0.5, False)  # 1 of 2 turns failed, under the 0.8 threshold
    assert got["user_rephrase"] == (1.0, True) and got["human_handoff_request"] == (1.0, True)
    result = builtin("abandonment").run(ABANDONED)
    assert "left after turn 2" in result.explanation and "get_weather failed" in result.explanation
    assert result.details["trace_id"] == ABANDONED.turns[1].trace_id and result.details["reason"] == "error"
    assert result.failure is not None and (result.failure.step_kind, result.failure.step_name) == (
        "tool",
        "get_weather",
    )
    assert result.failure.error_type == "http_503"  # as span_error types it: the HTTP status before the exception type


def test_abandonment_needs_an_idle_end_and_an_unanswered_last_turn_counts() -> None:
    assert builtin("abandonment").run(session(*ABANDONED.turns, ended="open")).skip_reason == "not_applicable"
    assert builtin("abandonment").run(session(*ABANDONED.turns, ended="cut")).skip_reason == "not_applicable"
    assert builtin("abandonment").run(session(*ABANDONED.turns, ended="explicit_end")).passed is True
    unanswered = session(turn(1, "Hi"), turn(2, "Where is my parcel?", ""))
    result = builtin("abandonment").run(unanswered)
    assert result.passed is False and result.details["reason"] == "unanswered"
    recovered = session(turn(1, "Weather?", "It's sunny.", errors=(WEATHER_ERROR,)), turn(2, "Thanks", "Bye!"))
    assert builtin("abandonment").run(recovered).passed is True  # the user came back after the failed turn
    answered = session(turn(1, "Weather?", "Sorry, the weather service is down.", errors=(WEATHER_ERROR,)))
    assert builtin("abandonment", count_answered_errors=False).run(answered).passed is True
    assert builtin("abandonment").run(session(turn(1, "Hi", None))).skip_reason == "no_data"


def test_turn_errors_scores_the_share_of_clean_turns() -> None:
    turns = [turn(i, f"question {i}", errors=(WEATHER_ERROR,) if i == 2 else ()) for i in range(1, 6)]
    result = builtin("turn_errors").run(session(*turns))
    assert (result.score, result.passed) == (pytest.approx(0.8), True)
    assert result.details["failing_turns"] == [2] and result.details["trace_ids"] == [turns[1].trace_id]
    assert "turn 2: tool get_weather" in result.explanation
    assert builtin("turn_errors").with_threshold(0.9).run(session(*turns)).passed is False


def test_the_session_budgets() -> None:
    long = session(*(turn(i, f"q{i}", tokens=1000) for i in range(1, 26)))
    turns = builtin("session_turn_budget").run(long)
    assert turns.passed is False and 0 < turns.score < 1 and "25 turns, over the 20 turn budget" in turns.explanation
    assert builtin("session_turn_budget", max_turns=25).run(long).score == 1.0
    tokens = builtin("session_token_budget", max_tokens=20000).run(long)
    assert tokens.passed is False and tokens.details["total_tokens"] == 25000
    assert builtin("session_token_budget").run(long).passed is True
    assert builtin("session_token_budget").run(session(turn(1, "hi", tokens=0))).skip_reason == "no_data"
    cut = Session("c", [turn(1, "q")], "session.id", "cut", turns_cut=30)
    assert builtin("session_turn_budget").run(cut).details["turns"] == 31


def test_failure_signatures_of_session_results_are_stable_across_sessions() -> None:
    other = session(
        turn(7, "Where is order 9931?", "It shipped."),
        turn(8, "That's not what I asked. Cancel order 9931.", "Done."),
    )
    signatures = set()
    for subject in (REPHRASE, other):
        result = builtin("user_rephrase").run(subject)
        signatures.add(failure_signature("user_rephrase", "session", None, result.failure, result.explanation).id)
    assert len(signatures) == 1


# --- sessions built from traces ------------------------------------------------------------------------------


def _turn_trace(trace_id: str, conversation: str, user: str, answer: str, *, failing_tool: str | None = None):
    """One turn as an OTel GenAI agent trace carrying `gen_ai.conversation.id`."""
    start = next_start()
    root = make_span(
        "invoke_agent bot",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "bot",
            "gen_ai.conversation.id": conversation,
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
            ),
        },
        trace_id=trace_id,
        start=start,
        end=start + 5 * 10**9,
    )
    spans = [root, chat(answer, parent=root)]
    if failing_tool:
        spans.append(tool(failing_tool, {"city": "Oslo"}, error="TimeoutError: upstream timed out", parent=root))
    return trace_of(*(replace(span, trace_id=trace_id) for span in spans))


def test_sessions_grouped_from_traces_get_the_expected_verdicts() -> None:
    traces = [
        _turn_trace("a1" * 16, "conv-a", "Is it raining in Oslo now?", "Yes, light rain."),
        _turn_trace("b1" * 16, "conv-b", "Reset my password please", "Done, check your e-mail."),
        _turn_trace("a2" * 16, "conv-a", "Will it rain in Oslo tomorrow?", "Sorry, error.", failing_tool="get_weather"),
        _turn_trace("b2" * 16, "conv-b", "Thanks!", "You're welcome."),
    ]
    by_id = {s.session_id: s for s in group_sessions(traces)}
    assert by_id["conv-a"].trace_ids == ["a1" * 16, "a2" * 16]
    assert by_id["conv-a"].turns[1].user_message == "Will it rain in Oslo tomorrow?"
    assert verdicts(by_id["conv-b"]) == {name: (1.0, True) for name in SESSION_RULES}
    got = verdicts(by_id["conv-a"])
    assert got["abandonment"] == (0.0, False) and got["turn_errors"] == (0.5, False)
    assert got["user_rephrase"] == (1.0, True) and got["human_handoff_request"] == (1.0, True)


def test_the_recorded_support_conversation() -> None:
    """oi_openai__session_support: turn 2 rephrases turn 1, turn 3 asks for a human (request_human_agent ran)."""
    [conversation] = group_sessions(load_traces([SUPPORT]))
    assert len(conversation.turns) == 3
    got = verdicts(conversation)
    assert got == {
        "user_rephrase": (0.0, False),
        "human_handoff_request": (0.0, False),
        "abandonment": (1.0, True),  # turn 3 was answered: the handoff happened
        "turn_errors": (1.0, True),
        "session_turn_budget": (1.0, True),
        "session_token_budget": (1.0, True),
    }
    rephrase = builtin("user_rephrase").run(conversation)
    assert rephrase.details["turns"] == [2] and rephrase.details["rephrases"][0]["earlier_turn"] == 1
    assert rephrase.details["rephrases"][0]["trace_id"] == "acd1caa5afc166897ad4b194ba5ac53b"
    assert "That's not what I asked" in rephrase.explanation
    handoff = builtin("human_handoff_request").run(conversation)
    [request] = handoff.details["requests"]
    assert (request["turn"], request["tool"]) == (3, "request_human_agent")
    assert request["trace_id"] == "fb8ba622bf9d9c8c0faef482497a1c98"
    assert "talk to a human agent" in handoff.explanation
    assert builtin("session_token_budget").run(conversation).details["total_tokens"] == 1322
