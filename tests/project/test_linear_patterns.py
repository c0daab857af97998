"""Issue 38, item 1: every pattern on trace content or from the config runs in linear time.

No timing is asserted on a single call: each reproduction runs in a subprocess given a generous timeout that the
quadratic (or exponential) patterns of before exceed by far (the e-mail pattern: 8 s on 40 KB, so hours on 400 KB;
`^(a+)+$`: 22.7 s on 28 characters, doubling with each one)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaluators.builtins._common import compile_patterns
from evaluators.linear_regex import compile_linear
from evaluators.redaction import find_pii, redact_text
from evaluators.sdk import EvaluatorConfigError
from evaluators.signatures import SignatureRule
from evaluators.signatures.masking import mask_message
from monitor.store.packing import SCAN_MARGIN, mask

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 10  # seconds: generous on a loaded 2-core machine; today's code needs minutes to hours


def run_bounded(code: str) -> str:
    """Run `code` in a fresh interpreter of this checkout; fails the test if it does not finish within TIMEOUT."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {TIMEOUT} s: a pattern backtracks")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.integration
def test_find_pii_on_400_kb_of_adversarial_text_returns() -> None:
    out = run_bounded(
        """
        from evaluators.redaction import find_pii, redact_text
        text = "a." * 200_000 + "@!"
        print(len(find_pii(text)), redact_text(text) == text)
        """
    )
    assert out.split() == ["0", "True"]


@pytest.mark.integration
def test_the_store_masking_on_400_kb_of_adversarial_text_returns() -> None:
    out = run_bounded(
        """
        from monitor.store.packing import mask
        text = "a." * 200_000 + "@!"
        (kept,) = mask([text], [4000])
        print(len(kept))
        """
    )
    assert out.split() == ["4000"]


@pytest.mark.integration
def test_signature_message_masking_on_400_kb_of_adversarial_text_returns() -> None:
    out = run_bounded(
        """
        from evaluators.signatures.masking import mask_message
        print(mask_message("a." * 200_000 + "@!", 50))
        """
    )
    assert out.strip() == "a." * 25


@pytest.mark.integration
def test_signature_url_masking_on_400_kb_of_adversarial_text_returns() -> None:
    out = run_bounded(
        """
        from evaluators.signatures.masking import mask_message
        print(mask_message("a." * 200_000 + "://x?q", 50))
        """
    )
    assert out.strip() == "a." * 25


@pytest.mark.integration
def test_an_exponential_signature_rule_returns_at_once() -> None:
    out = run_bounded(
        """
        import re
        from evaluators.signatures import Failure, SignatureRule
        failure = Failure(step_kind="tool", step_name="t", error_type="E", message="x")
        for given in ("^(a+)+$", re.compile("^(a+)+$")):
            rule = SignatureRule("x", message=given)
            print(rule.matches("e", failure, "a" * 40 + "!"), rule.matches("e", failure, "a" * 40))
        """
    )
    assert out.split() == ["False", "True", "False", "True"]


@pytest.mark.integration
def test_an_exponential_evaluator_pattern_param_returns_at_once() -> None:
    out = run_bounded(
        """
        import re
        from evaluators.builtins._common import compile_patterns
        (pattern,) = compile_patterns("forbidden_output", "patterns", ["^(a+)+$"], re.IGNORECASE)
        print(pattern.search("A" * 40 + "!") is None, pattern.search("a" * 40) is not None)
        """
    )
    assert out.split() == ["True", "True"]


# --- what the engine refuses and keeps ------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<=a)b", r"a(?!b)", r"(?P<x>a)(?P=x)"])
def test_patterns_re2_cannot_run_are_refused(pattern: str) -> None:
    with pytest.raises(re.error, match="linear-time"):
        compile_linear(pattern)
    with pytest.raises(EvaluatorConfigError, match="patterns"):
        compile_patterns("forbidden_output", "patterns", [pattern])


def test_flags_are_kept_and_others_refused() -> None:
    assert compile_linear("HELLO", re.IGNORECASE).search("say hello") is not None
    assert compile_linear("^b", re.MULTILINE).search("a\nb") is not None
    assert compile_linear("a.b", re.DOTALL).search("a\nb") is not None
    assert compile_linear("a.b").search("a\nb") is None
    with pytest.raises(re.error):
        compile_linear("a b", re.VERBOSE)


def test_a_signature_rule_compiles_with_the_linear_engine() -> None:
    rule = SignatureRule("x", message=re.compile("TIMEOUT", re.IGNORECASE))
    assert not isinstance(rule.message, re.Pattern)
    assert rule.message.search("a timeout") is not None
    with pytest.raises(re.error):
        SignatureRule("x", message=r"(a)\1")


def test_check_config_refuses_a_backreference_in_a_signature_rule(check) -> None:
    code, out, err, path = check('signatures:\n  rules:\n    - name: x\n      message: "(a)\\\\1"\n')
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:4: signatures.rules[0].message"), first
    assert "linear-time" in first and "\\1" in first, first


def test_check_config_accepts_an_re2_signature_rule(check) -> None:
    code, _out, err, _path = check('signatures:\n  rules:\n    - name: x\n      message: "^(a+)+$"\n')
    assert code == 0, err


# --- same matches as before -----------------------------------------------------------------------------------


def test_the_email_detector_finds_what_it_did() -> None:
    text = "write to john.doe+x@mail.example.co.uk or a@b.c, not @x.com; ops@corp.io."
    assert [f.kind for f in find_pii(text)] == ["email", "email"]
    assert redact_text("mail ops@corp.io now").startswith("mail [redacted email: ")


def test_the_store_masks_an_item_across_the_limit() -> None:
    """The text is cut before the scan, past the limit: a key straddling the limit is still masked."""
    key = "sk-proj-" + "A1b2C3d4" * 6
    text = "x" * (4000 - 10) + " " + key + " " + "y" * (2 * SCAN_MARGIN)
    (kept,) = mask([text], [4000])
    assert kept is not None and len(kept) <= 4000 and "A1b2C3d4A1b2" not in kept


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a@b.co+d@e.com failed", "<email><email> failed"),
        ("..john@x.com failed", "..<email> failed"),
        ("x@a.b-c@d.e", "<email>@d.e"),
        ("mail a.b@c.de and f@g.hi", "mail <email> and <email>"),
    ],
)
def test_the_message_email_mask_finds_what_it_did(text: str, expected: str) -> None:
    assert mask_message(text) == expected
