"""LLM-level rule builtins: finish_reason, response_length, non_empty_response, prohibited_content, pii_leak."""

from __future__ import annotations

import random

import pytest

from evaluators import EvaluatorConfigError, builtin
from evaluators.builtins.pii import PII_KINDS, find_pii, luhn_valid
from tests.support.builtins_spans import chat
from tests.support.spanfactory import trace_of


def call_of(span):
    calls = trace_of(span).get_llm_calls()
    assert len(calls) == 1
    return calls[0]


def run(name: str, span, **params):
    return builtin(name, **params).run(call_of(span))


# --- finish_reason ----------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["stop", "tool_calls", "end_turn", "STOP"])
def test_finish_reason_passes_on_normal_stops(reason: str) -> None:
    result = run("finish_reason", chat("ok", finish=reason))
    assert result.score == 1.0 and result.passed is True and reason in result.explanation


@pytest.mark.parametrize(
    ("reason", "why"),
    [
        ("length", "cut off"),
        ("max_tokens", "cut off"),
        ("MAX_TOKENS", "cut off"),
        ("FinishReason.MAX_TOKENS", "cut off"),
        ("content_filter", "blocked"),
        ("SAFETY", "blocked"),
    ],
)
def test_finish_reason_fails_on_truncation_and_filters(reason: str, why: str) -> None:
    result = run("finish_reason", chat("partial", finish=reason))
    assert result.score == 0.0 and result.passed is False
    assert reason in result.explanation and why in result.explanation


def test_finish_reason_is_configurable_and_skips_without_reason() -> None:
    assert run("finish_reason", chat("ok", finish="length"), fail_on=["safety"]).passed is True
    assert run("finish_reason", chat("ok", finish=None)).skip_reason == "no_data"


# --- response_length --------------------------------------------------------------------------


def test_response_length_passes_within_bounds() -> None:
    result = run("response_length", chat("Hello there"))
    assert result.score == 1.0 and result.passed is True and "11 chars" in result.explanation


def test_response_length_fails_outside_bounds() -> None:
    long = run("response_length", chat("x" * 50), max_chars=40)
    assert long.score == 0.0 and long.passed is False
    assert "50 chars" in long.explanation and "above the maximum of 40" in long.explanation
    short = run("response_length", chat("hi"), min_chars=5)
    assert short.passed is False and "below the minimum of 5" in short.explanation
    empty = run("response_length", chat("", output_tokens=0))
    assert empty.passed is False and "0 chars" in empty.explanation


def test_response_length_skips_tool_only_and_unrecorded_responses() -> None:
    assert run("response_length", chat(None, [("get_weather", {"city": "Paris"})])).skip_reason == "no_data"
    unrecorded = run("response_length", chat(None, output_tokens=18))
    assert unrecorded.skip_reason == "no_data" and "not recorded" in unrecorded.explanation


# --- non_empty_response -----------------------------------------------------------------------


def test_non_empty_response_passes_on_text_or_tool_calls() -> None:
    assert run("non_empty_response", chat("Hi")).passed is True
    tools_only = run("non_empty_response", chat(None, [("get_weather", {"city": "Paris"})]))
    assert tools_only.score == 1.0 and "get_weather" in tools_only.explanation


def test_non_empty_response_fails_on_an_empty_response() -> None:
    result = run("non_empty_response", chat("   ", output_tokens=0))
    assert result.score == 0.0 and result.passed is False
    assert "empty response" in result.explanation and "stop" in result.explanation


def test_non_empty_response_skips_when_content_was_not_captured() -> None:
    result = run("non_empty_response", chat(None, output_tokens=26))
    assert result.skip_reason == "no_data" and "26 output tokens" in result.explanation


# --- prohibited_content -----------------------------------------------------------------------


def test_prohibited_content_passes_on_clean_text() -> None:
    result = run("prohibited_content", chat("The weather is fine."), strings=["password"], patterns=[r"\bkill\b"])
    assert result.score == 1.0 and result.passed is True and "none of 2" in result.explanation


def test_prohibited_content_fails_on_strings_and_patterns() -> None:
    span = chat("Your PASSWORD is hunter2; order #12345.")
    by_string = run("prohibited_content", span, strings=["password"])
    assert by_string.score == 0.0 and by_string.passed is False and "'password'" in by_string.explanation
    assert run("prohibited_content", span, strings=["password"], case_sensitive=True).passed is True
    by_pattern = run("prohibited_content", span, patterns=[r"order #\d+"])
    assert by_pattern.passed is False and "order #12345" in by_pattern.explanation


def test_prohibited_content_skips_when_unconfigured_and_rejects_bad_regex() -> None:
    result = run("prohibited_content", chat("anything"))
    assert result.skip_reason == "not_configured" and "no prohibited strings or patterns" in result.explanation
    assert run("prohibited_content", chat("anything"), strings=["", 3]).skip_reason == "not_configured"
    with pytest.raises(EvaluatorConfigError):
        builtin("prohibited_content", patterns=["[unclosed"])


# --- pii_leak ---------------------------------------------------------------------------------

SECRETS = {
    "email": ("Write to jane.doe@example.com today.", "jane.doe@example.com", "j***@example.com"),
    "phone": ("Call +44 20 7946 0958 now.", "+44 20 7946 0958", "+***58"),
    "credit_card": ("Card 4111 1111 1111 1111 on file.", "4111 1111 1111 1111", "****1111"),
    "ssn": ("SSN 123-45-6789.", "123-45-6789", "***-**-6789"),
    "uk_nino": ("NINO AB123456C.", "AB123456C", "AB******C"),
    "openai_key": ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx9z7abcd ok", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx9z7abcd", None),
    "aws_access_key": ("id AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE", "AKIA****MPLE"),
    "github_token": ("t ghp_" + "a1" * 18 + " ok", "ghp_" + "a1" * 18, None),
    "slack_token": ("t xoxb-123456789012-abcdefghij ok", "xoxb-123456789012-abcdefghij", None),
    "google_api_key": ("k AIza" + "B" * 35 + " ok", "AIza" + "B" * 35, None),
    "private_key": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "MIIEow", None),
    "jwt": (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        None,
    ),
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_pii_leak_detects_each_kind_and_never_shows_the_value(kind: str) -> None:
    text, secret, sample = SECRETS[kind]
    result = run("pii_leak", chat(text))
    assert result.score == 0.0 and result.passed is False
    assert kind in result.explanation
    assert secret not in result.explanation and secret not in repr(result.details)
    if sample is not None:
        assert sample in result.explanation


def test_pii_leak_masks_openai_keys_like_sk_stars_last4() -> None:
    result = run("pii_leak", chat("use sk-abcdefghijklmnopqrstuvwxyz0123abcd please"))
    assert "openai_key sk-****abcd" in result.explanation


def test_pii_leak_passes_on_clean_text_with_numbers() -> None:
    text = "In 2024 we served 12345 users; call ext. 4411 or see page 555. Version 1.2.3, order #1234567890123."
    result = run("pii_leak", chat(text))
    assert result.score == 1.0 and result.passed is True and "no PII" in result.explanation


def test_pii_leak_kinds_param_selects_detectors() -> None:
    span = chat("Mail jane@example.com")
    assert run("pii_leak", span, kinds=["phone"]).passed is True
    assert run("pii_leak", span, kinds=["email"]).passed is False
    with pytest.raises(EvaluatorConfigError):
        builtin("pii_leak", kinds=["dna"])


def test_pii_leak_skips_without_text() -> None:
    assert run("pii_leak", chat(None, [("get_weather", {"city": "Paris"})])).skip_reason == "no_data"


def test_luhn_accepts_test_cards_and_rejects_a_random_number() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("5500005555555559")
    assert not luhn_valid("4111111111111112")
    rng = random.Random(7)
    number = "".join(str(rng.randrange(10)) for _ in range(15))
    check = next(d for d in "0123456789" if luhn_valid(number + d))
    wrong = str((int(check) + 1) % 10)
    assert not luhn_valid(number + wrong)
    assert find_pii(f"card {number}{wrong}", ["credit_card"]) == []
    assert [f.kind for f in find_pii(f"card {number}{check}", ["credit_card"])] == ["credit_card"]


def test_find_pii_reports_overlaps_once_and_in_order() -> None:
    found = find_pii("a@b.io then +1 415-555-0132 then 415-555-0199")
    assert [f.kind for f in found] == ["email", "phone", "phone"]
    assert set(PII_KINDS) >= {"email", "phone", "credit_card", "ssn", "uk_nino", "jwt", "private_key"}
