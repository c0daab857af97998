"""The message of a failure with its variable parts masked, so that the same failure reads the same every time.

Masked, in this order: URL queries and fragments (`?<query>`), e-mail addresses (`<email>`), UUIDs (`<uuid>`),
network addresses (`addresses.py`: an IPv4 or IPv6 address or a hostname with a port, with its port if any,
`<addr>`; a port after the word "port" `<port>`), timestamps and dates (`<ts>`), hexadecimal ids (16 hex digits or
more; 8 or more mixing digits and letters; or `0x...`: `<hex>`), ids glued to a word (after `_` or `-`, 6 hex digits
or more with a digit: `req_123456`, `job-8f3a9b2c`; right after letters, 6 digits or more: `<id>`), random tokens
(16 to 64 letters and digits mixing both, or changing case as only a random string does:
`org-9kUesx6Hhg0nCqPpsfxuXf5l`: `<id>`), numbers (`<num>`: integers, decimals, exponents, thousands separators, a
sign, a short unit) and long quoted values (`<str>`). Then whitespace is folded and the text bounded to
`MAX_TEMPLATE_CHARS`. Masking is idempotent: it is repeated until the text no longer changes (twice for nearly every
message), so a template masks to itself. Every pattern is bounded or anchored on a separator, so masking takes time
linear in the text.
"""

from __future__ import annotations

import re

from .addresses import mask_addresses

MAX_TEMPLATE_CHARS = 200
LONG_QUOTED_CHARS = 24  # quoted values at least this long are data, not words of the message

_URL_QUERY = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s?#'\"<>]*)[?#](?!<query>)[^\s'\"<>]*")
# `_URL_QUERY` is tried once per "://", from the first start its scheme run offers (`_mask_url_queries`): retried
# from every word start of a long run ("a." * n + "://") it was quadratic; every start of a run has the same outcome
_SCHEME_START = re.compile(r"\b[a-zA-Z]")
_URL_PATH = re.compile(r"[^\s?#'\"<>]*")  # the run `_URL_QUERY` takes after "://" before its "?" or "#"
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
# An e-mail address, tried only where a run of [\w.+-] starts (`_EMAIL`) or where the previous address ends
# (`_EMAIL_HERE`), past the run's leading punctuation (possessive): linear. `\b[\w.+-]+@...` retried from every
# word start of a run was quadratic ("a." * n + "@!"); every start of a run has the same outcome (the local part
# ends at the run's "@"), so `_mask_emails` finds the same addresses.
_EMAIL_ADDRESS = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
_EMAIL = re.compile(r"(?<![\w.+-])([.+-]*+)" + _EMAIL_ADDRESS)
_EMAIL_HERE = re.compile(r"(\b|[.+-]*+)" + _EMAIL_ADDRESS)
_UUID = re.compile(
    r"(?<![0-9A-Za-z])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Za-z])"
)
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
)
# a quote opens a value where no word or masked value ends (the quote closing `'<addr>'` opens nothing)
_QUOTED = re.compile(rf"(?<![\w>])(?:\"[^\"\n]{{{LONG_QUOTED_CHARS},}}\"|'[^'\n]{{{LONG_QUOTED_CHARS},}}')")
# A hex id: 0x..., 8+ hex digits mixing digits and letters, or 16+ digits alone (a span or trace id that happens to
# have no letter; no amount is that long). An 8-15 digit id without a letter reads as a number.
_HEX = re.compile(
    r"(?<![0-9A-Za-z_])(?<![0-9A-Za-z]-)"  # not glued to a word (`_GLUED_ID`)
    r"(?:0[xX][0-9a-fA-F]+|(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}|[0-9]{16,})"
    r"(?![0-9A-Za-z_])"
)
# an id glued to a word, which the number pattern leaves alone: after `_` or `-`, 6 hex digits or more with a digit
# (`req_123456`, `job-8f3a9b2c`), whatever its length; right after letters, 6 digits or more (`err123456`)
_GLUED_ID = re.compile(
    r"(?<=[A-Za-z0-9][_-])(?=[0-9A-Fa-f]{0,63}[0-9])[0-9A-Fa-f]{6,}(?![0-9A-Za-z])"
    r"|(?<=[A-Za-z])[0-9]{6,}(?![0-9A-Za-z])"
)
# a number with a short unit (12ms, 3.5s, 100KB, 20%) is one value; "gpt-4o" keeps its 4 (a name, not a value)
_NUMBER = re.compile(r"(?<![\w.\-])[-+]?\d[\d,_]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?:[a-zA-Z]{1,3}|%)?(?![\w%])")
# a random token (an organization, key or request id in base 62): 16 to 64 letters and digits with a digit, or with
# the case changing at least `_RANDOM_CASE_CHANGES` times (a CamelCase name changes far less often)
_TOKEN = re.compile(r"(?<![0-9A-Za-z])[0-9A-Za-z]{16,64}(?![0-9A-Za-z])")
# what a pattern needs, found by a quick scan first (masking runs on every failing result)
_MAY_BE_TOKEN = re.compile(r"[0-9A-Za-z]{16}")
_MAY_BE_GLUED_ID = re.compile(r"[0-9A-Fa-f]{6}")
_CASE_CHANGES = re.compile(r"(?<=[a-z])[A-Z]|(?<=[A-Z])[a-z]")
_RANDOM_CASE_CHANGES = 8
_DIGIT = re.compile(r"\d")  # what the timestamp, hex and number patterns all need (0x needs a digit too)


MAX_PASSES = 8


def mask_message(text: str, limit: int = MAX_TEMPLATE_CHARS) -> str:
    """`text` with its variable parts masked, whitespace folded, at most `limit` characters."""
    masked = text
    for _ in range(MAX_PASSES):
        again = _mask_once(masked, limit)
        if again == masked:
            break
        masked = again
    return masked


def _mask_url_queries(text: str) -> str:
    """`_URL_QUERY.sub(r"\\1?<query>", text)`, each match tried once: from the first start of the scheme before
    each "://" (a later start of the same run has the same outcome and leaves the same text); a failed try skips
    the "://"s of its path run ("a://" * n was quadratic: each try ran to the end of the same run)."""
    parts: list[str] = []
    done = 0
    at = text.find("://")
    while at >= 0:
        start = at
        while start > done and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        first = next((p for p in range(start, at) if _SCHEME_START.match(text, p)), None)
        match = _URL_QUERY.match(text, first) if first is not None else None
        if match is not None:
            parts += (text[done : match.start()], match.group(1), "?<query>")
            done = match.end()
            at = text.find("://", done)
        elif first is not None:  # the path run after it ends without a query: so does every "://" inside that run
            path = _URL_PATH.match(text, at + 3)  # `[...]*`: matches everywhere, empty at worst
            at = text.find("://", path.end() if path is not None else at + 3)
        else:
            at = text.find("://", at + 1)
    return "".join(parts) + text[done:] if parts else text


def _mask_emails(text: str) -> str:
    """`text` with each e-mail address replaced by `<email>` (what `\\b[\\w.+-]+@[\\w-]+(?:\\.[\\w-]+)+\\b` finds)."""
    parts: list[str] = []
    done = 0
    match = _EMAIL.search(text)
    while match is not None:
        parts += (text[done : match.start()], match.group(1), "<email>")
        done = match.end()
        match = _EMAIL_HERE.match(text, done) or _EMAIL.search(text, done)
    return "".join(parts) + text[done:] if parts else text


def _mask_token(match: re.Match[str]) -> str:
    token = match.group(0)
    letters = not token.isdigit() and not token.isalpha()
    if letters or len(_CASE_CHANGES.findall(token)) >= _RANDOM_CASE_CHANGES:
        return "<id>"
    return token


def _mask_once(text: str, limit: int) -> str:
    # Each pattern runs only on a text that has the character it needs (the same result, in a fraction of the
    # time: masking runs on every failing result).
    masked = _mask_url_queries(text) if "://" in text else text
    if "@" in masked:
        masked = _mask_emails(masked)
    if "-" in masked:
        masked = _UUID.sub("<uuid>", masked)
    masked = mask_addresses(masked)  # `::`, the unspecified address, has no digit
    if _DIGIT.search(masked) is not None:
        masked = _TIMESTAMP.sub("<ts>", masked)
        masked = _HEX.sub("<hex>", masked)
        if _MAY_BE_GLUED_ID.search(masked) is not None:
            masked = _GLUED_ID.sub("<id>", masked)
    if _MAY_BE_TOKEN.search(masked) is not None:
        masked = _TOKEN.sub(_mask_token, masked)
    if _DIGIT.search(masked) is not None:
        masked = _NUMBER.sub("<num>", masked)
    if "'" in masked or '"' in masked:
        masked = _QUOTED.sub("<str>", masked)
    masked = " ".join(masked.split())  # whitespace folded (str.split and re's \s agree on what it is)
    return masked[:limit].rstrip() if len(masked) > limit else masked
