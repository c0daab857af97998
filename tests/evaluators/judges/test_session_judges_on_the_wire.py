"""The session judges through the real google-genai client and the judge engine, against the fake Gemini server.

Recorded conversations (tests/fixtures/corpus): the frustrated support session (a miss, a rephrase, a request for a
human) and the clean trip conversation of the interleaved scenario. The fake answers per judge, from the response
schema the client sent; the tests check what reached the server (the transcript, in order, bounded, redacted) and
the results (the fake's verdicts, the turn a failure names, skips when the judge is down).
"""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

import pytest

from evaluators import builtin, load_traces
from evaluators.judges import DEFAULT_MODEL, JudgeSettings, LLMJudge, RetrySettings, judge_session, prepare
from evaluators.judges.client import JudgeClient
from evaluators.judges.engine import JudgeEngine
from evaluators.sdk import EvalResult
from evaluators.sessions import Session, Turn, group_sessions
from tests.conftest import CORPUS
from tests.support.fake_gemini import FakeGemini, FakeRequest, ok, status
from tests.support.promptcheck import blocks, question_of

SUPPORT = "oi_openai__session_support"
INTERLEAVED = "otel_genai__session_interleaved"
NAMES = ("conversation_completion", "user_frustration", "knowledge_retention", "conversation_coherence")

pytestmark = pytest.mark.skipif(not (CORPUS / SUPPORT).is_dir(), reason="corpus not available")


@cache
def recorded(scenario: str, session_id: str | None = None) -> Session:
    sessions = group_sessions(load_traces(CORPUS / scenario))
    return next(s for s in sessions if session_id is None or s.session_id == session_id)


def judges(**params: Any) -> list[tuple[LLMJudge, str]]:
    made = [(builtin(name, **params), name) for name in NAMES]
    assert all(isinstance(j, LLMJudge) for j, _ in made)
    return made  # type: ignore[return-value]


def schema_of(request: FakeRequest) -> dict[str, Any]:
    schema = request.generation_config.get("responseSchema")
    assert schema, "the client sent no response schema"
    return schema


# The fake's verdicts, by the property that tells the judges' schemas apart.
FRUSTRATED = {
    "goals": {
        "goals": [
            {"goal": "umbrella tomorrow morning", "turn": 1, "status": "not_met", "reason": "only current weather"}
        ],
        "explanation": "never answered; handed over",
    },
    "signs": {
        "verdict": "very_frustrated",
        "signs": [
            {"turn": 2, "sign": "repeats_request", "quote": "That's not what I asked."},
            {"turn": 3, "sign": "asks_for_human", "quote": "Let me talk to a human agent"},
        ],
        "explanation": "the user repeats the question, then asks for a human",
    },
    "lapses": {"verdict": "retained", "lapses": [], "explanation": "nothing forgotten"},
    "issues": {
        "rating": 2,
        "issues": [{"turn": 1, "issue": "non_sequitur", "description": "answers today, not tomorrow"}],
        "explanation": "turn 1 misses the question",
    },
}
CLEAN = {
    "goals": {
        "goals": [
            {"goal": "weather in Tokyo", "turn": 1, "status": "met", "reason": "24°C and sunny"},
            {"goal": "what to pack", "turn": 2, "status": "met", "reason": "T-shirts and light trousers"},
        ],
        "explanation": "both answered",
    },
    "signs": {"verdict": "not_frustrated", "signs": [], "explanation": "the user moves on"},
    "lapses": {"verdict": "retained", "lapses": [], "explanation": "turn 2 uses turn 1's weather"},
    "issues": {"rating": 5, "issues": [], "explanation": "each answer follows"},
}


def answering(verdicts: dict[str, Any]):
    def answer(request: FakeRequest):
        properties = schema_of(request).get("properties") or {}
        key = next(k for k in verdicts if k in properties)
        return ok(verdicts[key])

    return answer


def settings_for(url: str, **extra: Any) -> JudgeSettings:
    return JudgeSettings(api_key="k", base_url=url, requests_per_minute=0, **extra)


def run(session: Session, settings: JudgeSettings, chosen: list[tuple[LLMJudge, str]] | None = None):
    async def go() -> dict[str, EvalResult]:
        engine = JudgeEngine(settings, JudgeClient(settings) if settings.enabled else None)
        try:
            return dict(await judge_session(session, chosen or judges(), engine.judge))
        finally:
            await engine.aclose()

    return asyncio.run(go())


@pytest.mark.integration
def test_a_frustrated_conversation_gets_the_fakes_verdicts_with_the_turns_they_name() -> None:
    session = recorded(SUPPORT)
    assert len(session.turns) == 3
    with FakeGemini(answering(FRUSTRATED)) as fake:
        results = run(session, settings_for(fake.url))
        sent = fake.requests
    assert len(sent) == 4 and not fake.errors
    completion, frustration = results["conversation_completion"], results["user_frustration"]
    retention, coherence = results["knowledge_retention"], results["conversation_coherence"]
    assert (completion.score, completion.passed) == (0.0, False)
    assert (frustration.score, frustration.passed) == (0.0, False)
    assert (retention.score, retention.passed) == (1.0, True) and retention.failure is None
    assert (coherence.score, coherence.passed) == (0.25, False)
    turn = {n: t.trace_id for n, t in enumerate(session.turns, start=1)}
    # each failure is the session step, the verdict's category, and the turn it is about
    assert completion.failure is not None and frustration.failure is not None and coherence.failure is not None
    assert (completion.failure.step_kind, completion.failure.error_type) == ("session", "goals_not_met")
    assert (completion.failure.message, completion.details["turn_trace_id"]) == ("turn 1", turn[1])
    assert (frustration.failure.step_kind, frustration.failure.error_type) == ("session", "very_frustrated")
    assert (frustration.failure.message, frustration.details["turn_trace_id"]) == ("turn 2", turn[2])
    assert (coherence.failure.error_type, coherence.failure.message) == ("rating_2", "turn 1")
    assert [s["turn"] for s in frustration.details["signs"]] == [2, 3]
    assert "asks_for_human (turn 3)" in frustration.explanation
    assert all(r.details["judge_model"] == DEFAULT_MODEL for r in results.values())


@pytest.mark.integration
def test_the_request_carries_the_transcript_in_turn_order() -> None:
    session = recorded(SUPPORT)
    with FakeGemini(answering(FRUSTRATED)) as fake:
        run(session, settings_for(fake.url), judges()[:1])
        [request] = fake.requests
    assert "conversation between a user and an AI agent" in request.system
    found = blocks(request.prompt)
    text = found["transcript"]
    said = [t.user_message for t in session.turns] + [t.answer for t in session.turns]
    assert all(s and s in text for s in said)
    positions = [text.index(f"[turn {n} of 3]") for n in (1, 2, 3)]
    assert positions == sorted(positions)
    for n, t in enumerate(session.turns, start=1):  # each turn's message and answer inside its own entry
        entry = text[positions[n - 1] : positions[n] if n < 3 else len(text)]
        assert f"user: {t.user_message}" in entry and f"agent: {t.answer}" in entry
    assert "tools called: request_human_agent" in text.split("[turn 3 of 3]")[1]
    assert found["session"] == "3 turns; ended: idle"
    assert question_of(request.prompt) == "Which of the user's goals did the conversation meet by its end?"


@pytest.mark.integration
def test_a_clean_conversation_passes_every_judge() -> None:
    session = recorded(INTERLEAVED, "conv_trip_7Hq2Lx9d")
    assert [t.user_message for t in session.turns][1] == "Great, and what should I pack for that?"
    with FakeGemini(answering(CLEAN)) as fake:
        results = run(session, settings_for(fake.url))
        prompts = [r.prompt for r in fake.requests]
    assert {n: (r.score, r.passed) for n, r in results.items()} == {name: (1.0, True) for name in NAMES}
    assert all(r.failure is None and "turn" not in r.details for r in results.values())
    assert all("conv_hr" not in p and "vacation" not in p for p in prompts)  # the other conversation stays out


def long_session(turns: int, chars: int) -> Session:
    made = [
        Turn(f"{n:032x}", n * 10**9, n * 10**9 + 5, f"question {n} " + "q" * chars, f"answer {n} " + "a" * chars)
        for n in range(1, turns + 1)
    ]
    return Session("long", made, "session.id", "idle")


@pytest.mark.integration
def test_a_long_session_is_bounded_with_its_first_and_latest_turns() -> None:
    session = long_session(400, 3000)
    chosen = [(builtin("user_frustration", max_transcript_chars=20000, max_turn_chars=600), "user_frustration")]
    with FakeGemini(answering(CLEAN)) as fake:
        [(_, result)] = run(session, settings_for(fake.url), chosen).items()  # type: ignore[arg-type]
        [request] = fake.requests
    assert not result.is_skipped and result.score == 1.0
    text = blocks(request.prompt)["transcript"]
    assert len(text) <= 20000 and len(request.prompt) <= 21000
    assert text.startswith("[turn 1 of 400]\nuser: question 1 ") and "[turn 400 of 400]" in text
    assert "[truncated: showing 600 of 3011 characters]" in text  # each message clipped to max_turn_chars
    assert "left out to bound the transcript" in text and "[turn 200 of 400]" not in text
    kept = [n for n in range(1, 401) if f"[turn {n} of 400]" in text]
    assert kept[-5:] == [396, 397, 398, 399, 400]  # the latest turns, contiguous
    assert text.index("left out") < text.index(f"[turn {kept[-5]} of 400]")


@pytest.mark.integration
def test_secrets_in_the_conversation_are_redacted_before_they_leave() -> None:
    secret = "sk-proj-" + "Ab3" * 10
    turn = Turn("1" * 32, 1, 2, f"my key is {secret}, mail me at jane.doe@example.com", "Noted.")
    with FakeGemini(answering(CLEAN)) as fake:
        run(Session("s", [turn], "session.id", "idle"), settings_for(fake.url), judges()[:1])
        [request] = fake.requests
    assert secret not in request.prompt and "jane.doe@example.com" not in request.prompt
    assert "[redacted" in request.prompt


@pytest.mark.integration
def test_a_judge_that_is_down_gives_judge_unavailable_skips() -> None:
    session = recorded(SUPPORT)
    retry = RetrySettings(attempts=2, initial_delay=0.01, max_delay=0.02, jitter=0.0)
    with FakeGemini(default=status(503)) as fake:
        results = run(session, settings_for(fake.url, retry=retry))
        assert len(fake.requests) == 8  # four judgements, each tried twice
    assert all(r.skip_reason == "judge_unavailable" and r.score is None for r in results.values()), results
    assert all("unavailable" in r.explanation for r in results.values())
    without_key = run(session, JudgeSettings())
    assert all(r.skip_reason == "judge_unavailable" for r in without_key.values())


def test_short_sessions_skip_the_judges_that_need_earlier_turns_without_a_request() -> None:
    one_turn = Session("s", [Turn("2" * 32, 1, 2, "Hello?", "Hi, how can I help?")], "session.id", "idle")
    prepared = {p.judge.name: p for p in prepare(one_turn, [j for j, _ in judges()])}
    assert prepared["knowledge_retention"].result is not None
    assert prepared["knowledge_retention"].result.skip_reason == "not_applicable"
    assert prepared["conversation_coherence"].result.skip_reason == "not_applicable"  # type: ignore[union-attr]
    assert prepared["conversation_completion"].request is not None and prepared["user_frustration"].request is not None
    assert all(p.level == "session" and p.turn_trace_ids == ("2" * 32,) for p in prepared.values())
    empty = Session("e", [Turn("3" * 32, 1, 2, None, None)], "session.id", "idle")
    assert all(
        p.result is not None and p.result.skip_reason == "no_data" for p in prepare(empty, [j for j, _ in judges()])
    )
