"""The literal prefilter of the PII detectors changes no finding: it only skips regexes that cannot match."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.builtins import pii

SAMPLES = [
    "mail me at jane.doe@example.com or call +44 20 7946 0958",
    "key sk-proj-" + "a" * 30 + " and AKIAABCDEFGHIJKLMNOP, ghp_" + "b" * 36,
    "card 4111 1111 1111 1111, ssn 123-45-6789, NI AB 12 34 56 C, xoxb-1234567890-abcdef",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB...\n-----END RSA PRIVATE KEY-----",
    "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "AIza" + "c" * 35 + " and nothing else: sunny, 18°C",
]
PIECES = st.sampled_from(["@", "sk-", "sk-ant-", "AKIA", "ghp_", "xox", "AIza", "eyJ", "PRIVATE KEY", "-", ".", " "])
TEXTS = st.lists(st.one_of(st.text(max_size=12), PIECES, st.from_regex(r"\d{1,16}", fullmatch=True)), max_size=12)


def unfiltered(text: str) -> list[pii.Finding]:
    original = pii._may_match
    pii._may_match = lambda detector, text, has_digit: True
    try:
        return pii.find_pii(text)
    finally:
        pii._may_match = original


def test_known_samples_give_the_same_findings() -> None:
    for text in SAMPLES:
        assert pii.find_pii(text) == unfiltered(text)
    assert {f.kind for f in pii.find_pii(" ".join(SAMPLES))} >= {"email", "openai_key", "aws_access_key", "ssn"}


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_random_texts_give_the_same_findings(parts: list[str]) -> None:
    text = "".join(parts)
    assert pii.find_pii(text) == unfiltered(text)
