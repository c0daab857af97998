"""Regular expressions that run in linear time on any text (RE2), for the patterns applied to trace content or
taken from the config: a backtracking engine can take minutes on one crafted text (`^(a+)+$` on 28 characters).

RE2 syntax is Python's without lookarounds and backreferences; `\\w`, `\\d`, `\\b` and `\\s` are ASCII there.
A pattern RE2 rejects raises `re.error`, so callers keep one error type.
"""

from __future__ import annotations

import re
from typing import Any

import re2

# The Python flags RE2 takes as inline flags; any other is refused (re.VERBOSE, re.ASCII... change the syntax).
_INLINE = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s"}
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is the caller's error, not a line on stderr


def compile_linear(pattern: str, flags: int = 0) -> Any:
    """`pattern` compiled by RE2 (an object with `search`, `finditer`, `match`, `sub` like `re.Pattern`).
    Raises `re.error` for a pattern RE2 cannot run (a lookaround, a backreference, bad syntax)."""
    inline = "".join(letter for flag, letter in _INLINE.items() if flags & flag)
    unknown = flags & ~(sum(_INLINE) | re.UNICODE)  # re.UNICODE: the default of str patterns, in both engines
    if unknown:
        raise re.error(f"flags {re.RegexFlag(unknown)!r} are not supported by the linear-time engine")
    try:
        return re2.compile(f"(?{inline}){pattern}" if inline else pattern, _OPTIONS)
    except re2.error as exc:
        raise re.error(
            f"not a linear-time (RE2) pattern: {_reason(exc)} (RE2 has no lookarounds, no backreferences)"
        ) from None


def _reason(exc: Exception) -> str:
    """RE2's message for a refused pattern ("invalid perl operator: (?<", "invalid escape sequence: \\1")."""
    reason = exc.args[0] if exc.args else exc
    text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return text or "refused"


__all__ = ["compile_linear"]
