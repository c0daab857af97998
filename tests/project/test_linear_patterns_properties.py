"""Issue 38, item 1: each family of patterns run on trace content stays linear on 1 MB of text built to make a
backtracking engine retry (long runs of what a pattern reads, with the character it needs missing at the end).

Each example is 1 MB; one call is interrupted (SIGALRM: `re` checks signals while it matches) past `LIMIT`
seconds, which fails the test: a quadratic pattern needs minutes to hours there (the old e-mail pattern took 8 s
on 40 KB), a linear one well under a second or two. Known worst cases of the old patterns are explicit examples."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evaluators.builtins._common import compile_patterns
from evaluators.builtins._similarity import content_words
from evaluators.builtins.ground_truth import words
from evaluators.builtins.rules_agent import _without_value
from evaluators.builtins.rules_trace import DEFAULT_REFUSAL_PATTERNS
from evaluators.judges.prompt import escape_data
from evaluators.redaction import find_pii, redact_text
from evaluators.signatures import Failure, SignatureRule
from evaluators.signatures.addresses import mask_addresses
from evaluators.signatures.masking import mask_message
from evaluators.signatures.span_failures import http_status, split_type
from monitor.store.packing import mask

SIZE = 1_000_000
LIMIT = 30.0  # seconds per 1 MB call, on a loaded shared 2-core machine

# pieces that the patterns read: word and digit runs, the separators of e-mails, numbers, addresses, tokens, URLs,
# quotes, key headers and HTTP statuses, a non-ASCII digit (the regex path of the number windows)
PIECES = [
    "a", "Z", "1", "0", "9", "\u0661", "é", ".", "@", "-", "+", "_", ":", "/", "(", ")", "[", "]", "%", "'", '"',
    "<", ">", " ", "\n", "\t", "=", "#", "?", ",", "e", "x", "f", "eyJ", "sk-", "AKIA", "ghp_", "xoxb-", "AIza",
    "HTTP", "status", "code", "Error", "-----BEGIN ", "PRIVATE KEY", "://", "data", "\\n", "%5B", "port ", "0x",
]  # fmt: skip
chunks = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)


@st.composite
def adversarial(draw: st.DrawFn) -> str:
    """About 1 MB: one or two chunks repeated, then a short tail (what makes the last attempt fail)."""
    body = draw(st.lists(chunks, min_size=1, max_size=2))
    tail = draw(st.sampled_from(["", "!", "@!", "@", ".", "1", "x", '"', "-"]))
    unit = "".join(body)
    return (unit * (SIZE // len(unit) + 1))[:SIZE] + tail


bounded = settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
# the old patterns' worst cases: e-mail local parts without a domain, URL schemes, a separator run before a
# non-ASCII digit (number windows), many findings (the overlap test per finding), nested quantifiers in a config rule
WORST = [
    "a." * (SIZE // 2) + "@!",
    "a." * (SIZE // 2) + "://x?q",
    "a" * SIZE + "@",
    " " * SIZE + "\u0661",
    "a@b.co " * (SIZE // 7),
    "eyJaaaaaaaa." * (SIZE // 12),
    "a" * SIZE + "!",
]


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail the test if the block runs longer than `seconds` (main thread only, as pytest runs tests)."""

    def stop(signum: int, frame: object) -> None:
        raise AssertionError(f"did not finish within {seconds} s on 1 MB: a pattern backtracks")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def examples(test: Callable[..., None]) -> Callable[..., None]:
    for text in WORST:
        test = example(text=text)(test)
    return test


_REFUSALS = compile_patterns("refusal", "patterns", DEFAULT_REFUSAL_PATTERNS, re.IGNORECASE)
_RULE = SignatureRule("x", message=r"^(a+)+$|(x+x+)+y|(\d+\.?)+@")
_FAILURE = Failure(step_kind="tool", step_name="t", error_type="E", message="m")

FAMILIES: dict[str, Callable[[str], Any]] = {
    "pii detectors (find_pii)": find_pii,
    "pii redaction (redact_text, private key bodies)": redact_text,
    "store masking (cut, then redact)": lambda text: mask([text], [4000]),
    "signature message masking": mask_message,
    "signature address masking": mask_addresses,
    "span failure http status": http_status,
    "span failure error type": split_type,
    "refusal patterns (evaluator params)": lambda text: [p.search(text) for p in _REFUSALS],
    "signatures.rules message": lambda text: _RULE.matches("e", _FAILURE, text),
    "judge data escaping": escape_data,
    "similarity words": content_words,
    "ground truth words": words,
    "tool argument problems (schema messages)": lambda text: _without_value(f"$.{text}: {text!r} is not one of [1]"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
@bounded
@examples
@given(text=adversarial())
def test_each_pattern_family_is_linear_on_1_mb(family: str, text: str) -> None:
    with time_limit(LIMIT):
        FAMILIES[family](text)


@bounded
@given(text=adversarial())
def test_a_long_output_is_kept_to_its_limit_masked(text: str) -> None:
    with time_limit(LIMIT):
        (kept,) = mask([text + " ops@corp.io"], [4000])
    assert kept is not None and len(kept) <= 4000
