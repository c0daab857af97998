"""The free builtins (no model call, no download): response_language, user_sentiment, secret_leak: pass, fail and
skip cases, masking, and that arbitrary text never makes them raise."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import builtin
from evaluators.builtins.rules_trace import prose
from evaluators.sdk import default_builtins
from evaluators.sessions import Session, Turn
from tests.support.builtins_spans import chat
from tests.support.spanfactory import trace_of

FREE = ("response_language", "user_sentiment", "secret_leak")
EN_Q = "Could you tell me how to reset the password of my account, please?"
EN_A = "Of course. Open the settings page, choose security, then follow the link to reset your password."
FR_A = "Bien sûr. Ouvrez la page des paramètres, choisissez sécurité, puis suivez le lien pour changer le mot de passe."


def asked(question: str, answer: str | None):
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])
    return trace_of(chat(answer, **{"gen_ai.input.messages": messages}))


def call_of(span):
    return trace_of(span).get_llm_calls()[0]


def conversation(*messages: str | None) -> Session:
    turns = [
        Turn(f"{n:032x}", n * 10**9, n * 10**9 + 1, text, "Sure.", (), (), ("bot",), 10, 0)
        for n, text in enumerate(messages, 1)
    ]
    return Session.of("conv-1", turns, "session.id", "idle")


def test_the_three_are_rules_of_the_default_set() -> None:
    defaults = {info.name: info for info in default_builtins()}
    assert {name: defaults[name].level for name in FREE} == {
        "response_language": "trace",
        "user_sentiment": "session",
        "secret_leak": "llm",
    }


# --- response_language ---------------------------------------------------------------------------------------------


def test_response_language_passes_an_answer_in_the_question_language() -> None:
    result = builtin("response_language").run(asked(EN_Q, EN_A))
    assert result.passed is True and result.score == 1.0
    assert result.details["request_language"] == result.details["answer_language"] == "en"


def test_response_language_fails_an_answer_in_another_language() -> None:
    result = builtin("response_language").run(asked(EN_Q, FR_A))
    assert result.passed is False and result.score == 0.0
    assert (result.details["request_language"], result.details["answer_language"]) == ("en", "fr")
    assert result.failure is not None and result.failure.error_type == "wrong_language"
    assert 0.7 <= result.details["answer_probability"] <= 1.0


def test_response_language_skips_short_and_code_only_answers() -> None:
    evaluator = builtin("response_language")
    for answer in ("OK", "Done.", "```python\ndef reset(user):\n    return user.send_reset_link()\n```"):
        result = evaluator.run(asked(EN_Q, answer))
        assert result.is_skipped and result.skip_reason == "not_applicable", answer


def test_response_language_skips_an_uncertain_classification() -> None:
    result = builtin("response_language", min_probability=1.0).run(asked(EN_Q, EN_A))
    assert result.is_skipped and "uncertain" in result.explanation


def test_prose_drops_fenced_and_inline_code() -> None:
    assert prose("Run `make run` then:\n```\nls -la\n```\nand done") == "Run   then:\n \nand done"


# --- user_sentiment ------------------------------------------------------------------------------------------------


def test_user_sentiment_passes_a_conversation_that_ends_well() -> None:
    session = conversation("My order arrived broken, this is terrible.", "Great, thank you so much, that fixed it!")
    result = builtin("user_sentiment").run(session)
    assert result.passed is True and result.score > 0.5
    assert result.details["worst_turn"] == 1 and len(result.details["turns"]) == 2


def test_user_sentiment_fails_a_conversation_that_ends_negative() -> None:
    session = conversation("Where is my parcel?", "It still does not work, this is useless and I am angry.")
    result = builtin("user_sentiment").run(session)
    assert result.passed is False and result.score < 0.475
    assert result.details["worst_turn"] == 2 and result.failure is not None


def test_user_sentiment_skips_a_single_message_and_an_empty_session() -> None:
    evaluator = builtin("user_sentiment")
    assert evaluator.run(conversation("This is terrible!")).skip_reason == "not_applicable"
    assert evaluator.run(conversation(None, "  ")).is_skipped


def test_user_sentiment_scores_only_the_last_window_turns() -> None:
    session = conversation("I hate this, awful.", "ok", "fine, thanks", "great, thanks!")
    result = builtin("user_sentiment", window=2).run(session)
    assert [t["turn"] for t in result.details["turns"]] == [3, 4] and result.passed is True


# --- secret_leak ---------------------------------------------------------------------------------------------------

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"


def test_secret_leak_fails_on_a_key_in_the_response_and_masks_it() -> None:
    result = builtin("secret_leak").run(call_of(chat(f"Use the key {AWS} for the bucket.")))
    assert result.passed is False and result.details["counts"] == {"aws_access_key": 1}
    assert AWS not in result.explanation and AWS not in repr(result.details)
    assert "AKIA****MPLE" in result.explanation


def test_secret_leak_reads_tool_call_arguments() -> None:
    span = chat(None, [("git_push", {"remote": "origin", "token": GITHUB})])
    result = builtin("secret_leak").run(call_of(span))
    assert result.passed is False and result.details["samples"][0]["kind"] == "github_token"
    assert "arguments of git_push" in result.details["samples"][0]["where"]
    assert GITHUB not in repr(result.details) and GITHUB not in result.explanation


def test_secret_leak_hides_a_password_in_a_url() -> None:
    result = builtin("secret_leak").run(call_of(chat("Connect to postgres://app:s3cr3tPassw0rd@db.internal/app")))
    assert result.passed is False and "s3cr3t" not in result.explanation
    assert result.details["samples"][0]["sample"] == "://app:****@"


def test_secret_leak_passes_hashes_uuids_and_shas() -> None:
    text = (
        "Commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it; request id 123e4567-e89b-12d3-a456-426614174000, "
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08."
    )
    assert builtin("secret_leak").run(call_of(chat(text))).passed is True


def test_secret_leak_skips_without_text_or_arguments() -> None:
    assert builtin("secret_leak").run(call_of(chat(""))).skip_reason == "no_data"


def test_secret_leak_detectors_param_selects_kinds() -> None:
    span = chat(f"key {AWS}")
    assert builtin("secret_leak", detectors=["github_token"]).run(call_of(span)).passed is True


# --- never raise ---------------------------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400)
SEEDED = st.sampled_from(["", AWS, GITHUB, "://a:b@", "eyJ", "xoxb-", "PRIVATE KEY", "```", "`", "sk-", "AIza"])
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(question=TEXT, answer=TEXT)
def test_response_language_never_raises(question: str, answer: str) -> None:
    result = builtin("response_language").run(asked(question or "q", answer))
    assert result.is_skipped or result.score in (0.0, 1.0)


@PROPERTY
@given(messages=st.lists(TEXT, max_size=5))
def test_user_sentiment_never_raises(messages: list[str]) -> None:
    result = builtin("user_sentiment").run(conversation(*messages))
    assert result.is_skipped or 0.0 <= result.score <= 1.0


@PROPERTY
@given(head=TEXT, seed=SEEDED, tail=TEXT)
def test_secret_leak_never_raises(head: str, seed: str, tail: str) -> None:
    result = builtin("secret_leak").run(call_of(chat(head + seed + tail)))
    assert result.is_skipped or result.score in (0.0, 1.0)
