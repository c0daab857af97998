"""Text both result store databases accept: what a trace brings is made storable once, where rows are packed.

A lone surrogate (`\\ud800`: a str can hold one, UTF-8 cannot) makes SQLite's and psycopg's encoding fail, and a
NUL character is refused by PostgreSQL text and jsonb (`\\u0000`); both become U+FFFD, the replacement character,
on either database, so a trace reads back the same wherever it was stored.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")  # `\u0000` in JSON text, not an escaped backslash before it


def storable(text: str) -> str:
    """`text` with every lone surrogate and NUL character as U+FFFD (the same string when it has none)."""
    if text.isascii() and "\x00" not in text:
        return text
    return _UNSTORABLE.sub(REPLACEMENT, text)


def storable_json(text: str) -> str:
    """JSON text (as `json` writes it with ensure_ascii=False) with its lone surrogates and its `\\u0000` escapes as
    U+FFFD: what the strings in it would be had they been made `storable` before encoding."""
    text = storable(text)
    return text if "\\u0000" not in text else _NUL_ESCAPE.sub(lambda m: m.group(1) + REPLACEMENT, text)


def storable_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row with its strings `storable` (other values as they are)."""
    return tuple(storable(v) if isinstance(v, str) else v for v in values)
