"""PII and secret detectors (`pii_leak`) and the masking of what they find: regexes plus checks (Luhn for cards).

A finding never carries the matched value, only a masked sample such as `j***@example.com` or `sk-****abcd`.
`redact_text` replaces each finding by a marker with that sample: what a judge prompt (judges.engine) and the
result store (monitor.store) hold instead of the secret. It imports nothing else of the SDK, so the judges, the
builtin `pii_leak` (`evaluators.builtins.pii` re-exports these names) and the store use it without loading each other.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .linear_regex import compile_linear


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected item: its kind, a masked sample, and where it is in the text."""

    kind: str
    sample: str
    start: int
    end: int


def luhn_valid(digits: str) -> bool:
    """True when a digit string passes the Luhn checksum (card numbers do)."""
    if not digits.isdigit():
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _is_card(value: str) -> bool:
    digits = _digits(value)
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn_valid(digits)


def _is_phone(value: str) -> bool:
    digits = _digits(value)
    return 8 <= len(digits) <= 15 and len(set(digits)) > 1


def mask_secret(value: str, prefix: str = "", keep: int = 4) -> str:
    """`prefix` + "****" + the last `keep` characters (fewer for short values: never the whole secret)."""
    body = value[len(prefix) :] if value.startswith(prefix) else value
    keep = min(keep, max(len(body) // 4, 0))
    return f"{prefix}****{body[-keep:] if keep else ''}"


def _mask_email(value: str) -> str:
    local, _, domain = value.partition("@")
    return f"{local[:1]}***@{domain}"


def _mask_phone(value: str) -> str:
    return f"{'+' if value.startswith('+') else ''}***{_digits(value)[-2:]}"


def _mask_card(value: str) -> str:
    return f"****{_digits(value)[-4:]}"


def _mask_ssn(value: str) -> str:
    return f"***-**-{_digits(value)[-4:]}"


def _mask_nino(value: str) -> str:
    compact = value.replace(" ", "")
    return f"{compact[:2]}******{compact[-1:]}"


def _mask_private_key(value: str) -> str:
    return f"{value} (key body hidden)"  # the match is the BEGIN line only: no key material


def _prefix_masker(*prefixes: str) -> Callable[[str], str]:
    def mask(value: str) -> str:
        prefix = next((p for p in prefixes if value.startswith(p)), "")
        return mask_secret(value, prefix)

    return mask


@dataclass(frozen=True, slots=True)
class _Detector:
    kind: str
    pattern: Any  # re.Pattern, or an RE2 pattern (linear time) where Python's engine could backtrack
    mask: Callable[[str], str]
    check: Callable[[str], bool] | None = None
    # Text the pattern cannot match without (a cheap `in` test before the regex): literals, or DIGITS.
    needs: tuple[str, ...] = ()
    digits: int = 0  # DIGITS: the fewest digits a finding holds

    @property
    def literals(self) -> tuple[bytes, ...]:
        return _LITERALS[self.kind]


DIGITS = ("<digit>",)
_DIGIT = re.compile(r"\d")


def _may_match(detector: _Detector, text: str | bytes, has_digit: bool) -> bool:
    """Whether `detector` can match `text` (or its ASCII image: the literals are ASCII, kept in place there)."""
    if not detector.needs:
        return True
    if detector.needs is DIGITS:
        return has_digit
    if isinstance(text, bytes):
        return any(literal in text for literal in detector.literals)
    return any(literal in text for literal in detector.needs)


_TOKEN_START = r"(?<![A-Za-z0-9_-])"
# Order matters: earlier detectors claim their text first (a key is not also reported as a phone number).
_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        _mask_private_key,
        needs=("PRIVATE KEY",),
    ),
    _Detector(
        "jwt",
        re.compile(_TOKEN_START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        _prefix_masker("eyJ"),
        needs=("eyJ",),
    ),
    _Detector(
        "anthropic_key",
        re.compile(_TOKEN_START + r"sk-ant-[A-Za-z0-9_-]{20,}"),
        _prefix_masker("sk-ant-"),
        needs=("sk-ant-",),
    ),
    _Detector(
        "openai_key",
        re.compile(_TOKEN_START + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _prefix_masker("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-"),
        needs=("sk-",),
    ),
    _Detector(
        "aws_access_key",
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        _prefix_masker("AKIA", "ASIA"),
        needs=("AKIA", "ASIA"),
    ),
    _Detector(
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        _prefix_masker("github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        needs=("github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Detector(
        "slack_token",
        re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        _prefix_masker("xoxb-", "xoxp-", "xoxa-", "xoxo-", "xoxs-", "xoxr-"),
        needs=("xox",),
    ),
    _Detector("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), _prefix_masker("AIza"), needs=("AIza",)),
    _Detector(
        "email",
        # RE2 (linear time): Python's engine backtracks quadratically on "a." * n + "@!" (8 s on 40 KB)
        compile_linear(r"\b[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b"),
        _mask_email,
        needs=("@",),
    ),
    _Detector(
        "credit_card",
        re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"),
        _mask_card,
        _is_card,
        needs=DIGITS,
        digits=13,
    ),
    _Detector(
        "ssn",
        re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])"),
        _mask_ssn,
        needs=DIGITS,
        digits=9,
    ),
    _Detector(
        "uk_nino",
        re.compile(r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"),
        _mask_nino,
        needs=DIGITS,
        digits=6,
    ),
    _Detector(
        "phone",
        re.compile(
            r"(?<![\w+])\+\d[\d ().-]{6,20}\d(?!\d)"  # international: +CC then 8-15 digits in all
            r"|(?<![\w+])(?:1[ .-])?(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4}(?!\w)"  # US/NANP
        ),
        _mask_phone,
        _is_phone,
        needs=DIGITS,
        digits=8,
    ),
)

PII_KINDS: tuple[str, ...] = tuple(d.kind for d in _DETECTORS)
_LITERALS = {d.kind: tuple(n.encode() for n in d.needs) if d.needs is not DIGITS else () for d in _DETECTORS}


def find_pii(text: str | None, kinds: Iterable[str] | None = None) -> list[Finding]:
    """Every PII or secret item of the chosen kinds (all by default) in `text`, in text order, without overlaps."""
    if not isinstance(text, str) or not text:
        return []
    wanted = set(PII_KINDS if kinds is None else kinds)
    taken: list[tuple[int, int]] = []
    findings: list[Finding] = []
    raw = _ascii_image(text)
    has_digit = len(raw.translate(None, _DIGITS)) < len(raw) if raw is not None else _DIGIT.search(text) is not None
    windows: list[tuple[int, int, int]] | None = None
    for detector in _DETECTORS:
        if detector.kind not in wanted or not _may_match(detector, text if raw is None else raw, has_digit):
            continue
        if detector.needs is DIGITS:
            if windows is None:
                windows = _number_windows(text, raw)
            matches = _windowed(detector.pattern, text, windows, detector.digits)
        else:
            matches = detector.pattern.finditer(text)
        added: list[tuple[int, int]] = []
        below = 0  # taken[:below] ends before this match: the matches come in text order, without overlaps
        for match in matches:
            start, end = match.span()
            while below < len(taken) and taken[below][1] <= start:
                below += 1
            if below < len(taken) and taken[below][0] < end:
                continue  # claimed by an earlier detector
            value = match.group(0)
            if detector.check is not None and not detector.check(value):
                continue
            added.append((start, end))
            findings.append(Finding(detector.kind, detector.mask(value), start, end))
        if added:  # kept sorted (no two overlap): the overlap test above is a walk, not a scan per match
            taken = list(heapq.merge(taken, added))
    return sorted(findings, key=lambda f: f.start)


# The number-shaped detectors (card, SSN, NINO, phone) scan only the runs of digits and " ().+-" holding 6 or
# more digits (every such finding lies in one), widened by 2 characters each side: a NINO's letters, and what the
# lookarounds read (a lookbehind sees before `pos`, nothing sees past `endpos`). The same matches as a scan of the
# whole text, found with bytes operations instead of a regex over every character.
_DIGITS = b"0123456789"
_RUN_IMAGE = bytes(ord("0") if chr(i) in "0123456789 ().+-" else ord("x") for i in range(256))
# from a digit, possessive: linear (a leading `[ ().+-]*` retried from every separator was quadratic); the
# separators before the first digit are added back in `_number_windows`
_NUMBER_RUN = re.compile(r"(?:\d[ ().+-]*+){6,}")
_SEPARATORS = " ().+-"
_ASCII = bytes(range(128))
_WIDEN = 2


def _ascii_image(text: str) -> bytes | None:
    """`text` as ASCII bytes, one byte per character ("?" for the others), when none of the others is a digit
    (`\\d` matches non-ASCII digits too); None when one is."""
    if text.isascii():
        return text.encode("ascii")
    others = text.encode("utf-8", "surrogatepass").translate(None, _ASCII).decode("utf-8", "surrogatepass")
    if _DIGIT.search(others):
        return None
    return text.encode("ascii", "replace")


def _number_windows(text: str, raw: bytes | None) -> list[tuple[int, int, int]]:
    """(pos, endpos, digits) of the runs of `text` that may hold a number-shaped finding, in text order."""
    size = len(text)
    if raw is None:  # a non-ASCII digit: the regex
        found = []
        previous_end = 0
        for match in _NUMBER_RUN.finditer(text):
            a, b = match.span()
            while a > previous_end and text[a - 1] in _SEPARATORS:
                a -= 1
            previous_end = b
            found.append((max(a - _WIDEN, 0), min(b + _WIDEN, size), sum(map(str.isdigit, text[a:b]))))
        return found
    image = raw.translate(_RUN_IMAGE)
    windows = []
    start = image.find(b"000000")  # the first 6 of a run: the search resumes past the previous run
    while start >= 0:
        end = image.find(b"x", start + 6)
        end = size if end < 0 else end
        digits = end - start - len(raw[start:end].translate(None, _DIGITS))
        if digits >= 6:
            windows.append((max(start - _WIDEN, 0), min(end + _WIDEN, size), digits))
        start = image.find(b"000000", end)
    return windows


def _windowed(
    pattern: re.Pattern[str], text: str, windows: list[tuple[int, int, int]], digits: int
) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` in the windows holding `digits` or more (non-overlapping, like finditer)."""
    last_end = 0
    for pos, endpos, held in windows:
        if held < digits:
            continue
        for match in pattern.finditer(text, pos, endpos):
            if match.start() >= last_end:
                last_end = match.end()
                yield match


# A private key's BEGIN line is what find_pii finds; its base64 body (raw or JSON-escaped lines) and END line follow.
_KEY_BODY = re.compile(r"(?:(?:\s|\\[nr])+[A-Za-z0-9+/=]{16,})*(?:(?:\s|\\[nr])*-----END [A-Z0-9 ]*-----)?")
_JOIN = "\x00"  # no detector matches across it (no pattern's character class holds it)


def redact_text(text: str) -> str:
    """`text` with every secret and PII item `find_pii` sees replaced by a marker with its masked sample."""
    findings = find_pii(text)
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        if finding.start < position:
            continue  # inside a private key body already masked
        end = finding.end
        if finding.kind == "private_key":
            body = _KEY_BODY.match(text, end)
            end = body.end() if body else end
        parts.append(text[position : finding.start])
        parts.append(f"[redacted {finding.kind}: {finding.sample}]")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def redact_texts(texts: Sequence[str | None]) -> list[str | None]:
    """`redact_text` of each text (None stays None) in one scan of them all: the same result, far fewer calls.
    A NUL character in a text becomes U+FFFD (it separates the texts in the scan)."""
    present = [t.replace(_JOIN, "\ufffd") if _JOIN in t else t for t in texts if t]
    if not present:
        return list(texts)
    parts = iter(redact_text(_JOIN.join(present)).split(_JOIN))
    return [next(parts) if t else t for t in texts]


__all__ = ["PII_KINDS", "Finding", "find_pii", "luhn_valid", "mask_secret", "redact_text", "redact_texts"]
