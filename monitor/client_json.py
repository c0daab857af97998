"""JSON from clients (a review's body, the queue's skipped-list cookie, page cursors) parsed with a nesting limit:
Python's parser raises RecursionError on a document nested about a thousand deep, which a handler would answer
with a 500. Here such a document is refused with a ValueError, which the callers already answer with a 400 (or
ignore, for a cookie). Strings are skipped whole, so brackets inside them do not count (the same scan as
evaluators/traces/otlp_depth.prune_json_text)."""

from __future__ import annotations

import json
import re
from typing import Any

MAX_CLIENT_JSON_DEPTH = 64  # what the API reads is flat: a review nests 1 level, a cursor 1

_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonTooDeep(ValueError):
    """A JSON document nested past the limit."""


def loads(data: str | bytes | bytearray, max_depth: int = MAX_CLIENT_JSON_DEPTH) -> Any:
    """`json.loads(data)`, or JsonTooDeep (a ValueError) when its arrays and objects nest deeper than `max_depth`;
    ValueError (JSONDecodeError, UnicodeDecodeError) for what is not JSON, as `json.loads`."""
    text = data if isinstance(data, str) else bytes(data).decode(json.detect_encoding(data))
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels")
        elif token in "]}":
            depth -= 1
    return json.loads(text)
