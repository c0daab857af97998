"""The session judges' prompts, replies and failures, without a model: the transcript, skips, scores, turns."""

from __future__ import annotations

from evaluators import builtin, load_traces
from evaluators.judges import JudgeRequest, LLMJudge, place_turn, prepare
from evaluators.judges.builtins_session import (
    ConversationCoherenceReply,
    ConversationCompletionReply,
    KnowledgeRetentionReply,
    UserFrustrationReply,
)
from evaluators.judges.failures import judge_failure
from evaluators.judges.transcript import transcript
from evaluators.sdk import dispatch_session
from evaluators.sessions import Session, Turn, TurnError
from evaluators.signatures import Failure
from tests.conftest import CORPUS
from tests.support.promptcheck import INJECTION, blocks

IDS = ("a" * 32, "b" * 32, "c" * 32)


def judge(name: str) -> LLMJudge:
    made = builtin(name)
    assert isinstance(made, LLMJudge)
    return made


def session(*turns: Turn) -> Session:
    return Session("s1", list(turns), "session.id", "idle")


def turn(n: int, said: str | None, answer: str | None, **extra) -> Turn:
    return Turn(IDS[n - 1], n * 1000, n * 1000 + 10, said, answer, **extra)


def test_a_session_judges_failure_is_the_session_step_naming_the_turn() -> None:
    failure = judge_failure("session", {"verdict": "very_frustrated", "turn": 2})
    assert failure == Failure(step_kind="session", error_type="very_frustrated", message="turn 2")
    assert judge_failure("session", {"rating": 2}) == Failure(step_kind="session", error_type="rating_2")
    # other levels keep stating no message, even when their details have a "turn"
    assert judge_failure("trace", {"verdict": "irrelevant", "turn": 2}).message is None


def test_the_turn_a_verdict_names_is_tied_to_its_trace_and_an_impossible_one_dropped() -> None:
    retention = judge("knowledge_retention")
    reply = KnowledgeRetentionReply.model_validate(
        {
            "verdict": "major_lapse",
            "lapses": [{"turn": 3, "established_in_turn": 1, "kind": "forgot", "fact": "no car"}],
            "explanation": "suggests driving",
        }
    )
    result = retention.stated(retention.to_result(reply).resolve(retention.threshold))
    assert (result.score, result.passed, result.details["turn"]) == (0.0, False, 3)
    placed = place_turn(result, IDS)
    assert placed.details["turn_trace_id"] == IDS[2] and placed.failure == result.failure
    assert placed.failure is not None and placed.failure.message == "turn 3"
    beyond = place_turn(result, IDS[:2])  # the judge named a turn the session does not have
    assert "turn" not in beyond.details and "turn_trace_id" not in beyond.details
    assert beyond.failure is not None and beyond.failure.message is None
    assert beyond.failure.error_type == "major_lapse"


def test_scores_of_each_reply() -> None:
    completion = judge("conversation_completion").to_result(
        ConversationCompletionReply.model_validate(
            {
                "goals": [
                    {"goal": "a", "turn": 1, "status": "met", "reason": "r"},
                    {"goal": "b", "turn": 2, "status": "partially_met", "reason": "r"},
                ],
                "explanation": "x",
            }
        )
    )
    assert (completion.score, completion.details["verdict"], completion.details["turn"]) == (
        0.75,
        "goals_partially_met",
        2,
    )
    frustration = judge("user_frustration").to_result(
        UserFrustrationReply.model_validate({"verdict": "mildly_frustrated", "signs": [], "explanation": "x"})
    )
    assert frustration.score == 0.67 and "turn" not in frustration.details  # no sign named: no turn
    coherence = judge("conversation_coherence").to_result(
        ConversationCoherenceReply.model_validate(
            {
                "rating": 5,
                "issues": [{"turn": 2, "issue": "repetitive", "description": "d"}],
                "explanation": "x",
            }
        )
    )
    assert coherence.score == 1.0 and "turn" not in coherence.details  # a passing rating names no turn


def test_the_transcript_shows_tools_and_errors_in_brief_and_keeps_agent_text_in_its_block() -> None:
    errors = tuple(TurnError("tool", "lookup", f"timed out {n}") for n in range(5))
    chat = session(
        turn(1, "Book a table for two.", None, tool_calls=("lookup",) * 3 + ("book",), errors=errors),
        turn(2, INJECTION, "Done."),
    )
    request = judge("conversation_coherence").request(chat)
    assert isinstance(request, JudgeRequest)
    text = blocks(request.prompt)["transcript"]  # well formed: the injection did not close the block
    assert "tools called: lookup ×3, book" in text
    assert "error: tool lookup: timed out 0" in text and "error: (+2 more failed spans)" in text
    assert "timed out 3" not in text
    assert "agent: (not recorded)" in text
    assert "&lt;/data>" in text


def test_transcript_without_turns_is_none_and_a_short_one_is_whole() -> None:
    assert transcript(session(), 5000, 500) is None
    chat = session(turn(1, "Hi", "Hello"), turn(2, "Bye", ""))
    assert transcript(chat, 5000, 500) == (
        "[turn 1 of 2]\nuser: Hi\nagent: Hello\n\n[turn 2 of 2]\nuser: Bye\nagent: (empty)"
    )


def test_session_judges_never_judge_a_trace_and_skip_in_the_plain_runner() -> None:
    names = ("conversation_completion", "user_frustration", "knowledge_retention", "conversation_coherence")
    chosen = [judge(n) for n in names]
    trace = load_traces(CORPUS / "oi_openai__session_support")[0]
    assert list(prepare(trace, chosen)) == []
    chat = session(turn(1, "Hi", "Hello"), turn(2, "Thanks", "You're welcome"))
    done = list(dispatch_session(chat, chosen))
    assert [d.level for d in done] == ["session"] * 4
    assert all(d.result.skip_reason == "judge_unavailable" for d in done)
