"""The review API's page cursor: the order key of the last item shown, as unpadded URL-safe base64 of a JSON
array. Results, signatures and sessions page with it; each checks the values against its own kinds, so a cursor
that was edited or belongs to another listing is a ValueError (the API's 400), never a query."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from monitor import client_json

_INT64 = 2**63  # the store's integers (SQLite INTEGER, PostgreSQL bigint) are signed 64-bit


def _time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and abs(value) < 1e15


def _int64(value: Any) -> bool:
    return type(value) is int and -_INT64 <= value < _INT64


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**31


def _text(value: Any) -> bool:
    return isinstance(value, str)


Kind = Callable[[Any], bool]
TIME: Kind = _time  # a finite Unix time (returned as a float)
INT64: Kind = _int64  # an integer a 64-bit column holds
COUNT: Kind = _count  # a non-negative offset or count
TEXT: Kind = _text


def encode_cursor(values: Sequence[float | int | str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values), separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kinds: Sequence[Kind], max_chars: int) -> list[Any]:
    """The values of a cursor from `encode_cursor`, one per kind (TIME values as floats); ValueError for anything
    else: longer than `max_chars`, not base64 of a JSON array, another length, a value not of its kind."""
    if len(cursor) > max_chars:
        raise ValueError("invalid cursor")
    try:
        values = client_json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ValueError("invalid cursor") from exc
    if not isinstance(values, list) or len(values) != len(kinds):
        raise ValueError("invalid cursor")
    if not all(kind(value) for value, kind in zip(values, kinds, strict=True)):
        raise ValueError("invalid cursor")
    return [float(v) if kind is TIME else v for v, kind in zip(values, kinds, strict=True)]


__all__ = ["COUNT", "INT64", "TEXT", "TIME", "Kind", "decode_cursor", "encode_cursor"]
