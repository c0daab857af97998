"""Safe, bounded text for terminals and logs: nothing from a trace is printed raw or unbounded."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any


def one_line(value: Any) -> str:
    """`value` as one line of printable text: JSON for non-strings, control characters and runs of whitespace
    folded to single spaces. Unbounded: see `clip` and `clip_at_boundary`."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = "".join(ch if ch.isprintable() else " " for ch in text.replace("\n", " ").replace("\t", " "))
    return " ".join(text.split())


def clip(value: Any, limit: int = 80) -> str:
    """One line, control characters escaped, at most `limit` characters (with an ellipsis)."""
    text = one_line(value)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def shown(value: str | None, limit: int = 80) -> str:
    """A trace's input or answer for a terminal: clipped; `(empty)` when it was recorded empty (or blank),
    `(none)` when nothing recorded one."""
    if value is None:
        return "(none)"
    return clip(value, limit) or "(empty)"


_OPENERS = {"{": "}", "[": "]"}
_QUOTES = "\"'"


def _open_structure(head: str) -> int | None:
    """Where the outermost JSON object, array or quoted string still open at the end of `head` starts."""
    stack: list[str] = []
    start: int | None = None
    quote: str | None = None
    escaped = False
    for index, ch in enumerate(head):
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
                if not stack:
                    start = None
            continue
        if ch in _QUOTES and (ch == '"' or stack):  # an apostrophe in prose is not a quote
            quote = ch
            if not stack:
                start = index
        elif ch in _OPENERS:
            if not stack:
                start = index
            stack.append(_OPENERS[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                start = None
    return start if (stack or quote is not None) else None


def clip_at_boundary(value: Any, limit: int = 80) -> str:
    """Like `clip`, but a text longer than `limit` is cut before a JSON object, array or quoted string it would
    cut in the middle (unless the text is one), else after a whole word (unless that leaves less than half),
    then gets an ellipsis."""
    text = one_line(value)
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 0)]
    cut = _open_structure(head)
    if not cut:  # none open (None), or the text is one JSON value (0): after a word
        space = head.rfind(" ")
        cut = space if space >= limit // 2 and text[len(head)] != " " else len(head)
    return head[:cut].rstrip(" ,;:=") + "…"


def redact_url(url: str) -> str:
    """The URL with its password replaced by `***` (for logs, errors and metrics)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def usd(value: float | None) -> str:
    """A spend for a terminal: `$1,234.56` from a dollar up, else `$0.001234`; "-" for None (nothing priced)."""
    if value is None:
        return "-"
    return f"${value:,.2f}" if value >= 1 else f"${value:.6f}"
