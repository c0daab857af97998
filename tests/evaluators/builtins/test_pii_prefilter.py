"""The prefilters of the PII detectors change no finding: the literal checks only skip regexes that cannot match,
and the number-shaped detectors find in their windows what a scan of the whole text finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators import redaction

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


def unfiltered(text: str) -> list[redaction.Finding]:
    original, windows = redaction._may_match, redaction._number_windows
    redaction._may_match = lambda detector, text, has_digit: True
    redaction._number_windows = lambda text, raw: [(0, len(text), len(text))]  # one window: the whole text
    try:
        return redaction.find_pii(text)
    finally:
        redaction._may_match, redaction._number_windows = original, windows


def test_known_samples_give_the_same_findings() -> None:
    for text in SAMPLES:
        assert redaction.find_pii(text) == unfiltered(text)
    assert {f.kind for f in redaction.find_pii(" ".join(SAMPLES))} >= {"email", "openai_key", "aws_access_key", "ssn"}


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_random_texts_give_the_same_findings(parts: list[str]) -> None:
    text = "".join(parts)
    assert redaction.find_pii(text) == unfiltered(text)


NUMBERISH = st.lists(
    st.one_of(
        st.sampled_from(
            [" ", "-", "(", ")", ".", "+", "1", "4111", "AB", "C", "x", "é", "٣", "\x00", "\n", "ab@cd.io"]
        ),
        st.from_regex(r"[0-9 ().+-]{1,24}", fullmatch=True),
        st.from_regex(r"[A-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]", fullmatch=True),
        st.from_regex(r"\+?[0-9]{1,3}[ .-]?\(?[2-9][0-9]{2}\)?[ .-]?[2-9][0-9]{2}[ .-][0-9]{4}", fullmatch=True),
        st.from_regex(r"[0-9]{3}-[0-9]{2}-[0-9]{4}", fullmatch=True),
    ),
    max_size=16,
)


@settings(max_examples=500, deadline=None)
@given(NUMBERISH)
def test_number_windows_find_what_the_whole_text_scan_finds(parts: list[str]) -> None:
    text = "".join(parts)
    assert redaction.find_pii(text) == unfiltered(text)


def test_redact_texts_masks_each_text_as_redact_text_does() -> None:
    texts = [SAMPLES[0], None, "", "plain words", SAMPLES[2], "nul\x00inside 4111 1111 1111 1111"]
    assert redaction.redact_texts(texts) == [
        redaction.redact_text(SAMPLES[0]),
        None,
        "",
        "plain words",
        redaction.redact_text(SAMPLES[2]),
        "nul\ufffdinside [redacted credit_card: ****1111]",
    ]
    # a number split across two texts is two halves, not a card
    assert redaction.redact_texts(["4111 1111", "1111 1111"]) == ["4111 1111", "1111 1111"]
