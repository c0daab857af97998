"""JSON text of the values the daemon stores (results' details, a trace's packed rows), by orjson: the standard
library's encoder was the largest single cost of an evaluation worker's own code (iterencode: 6.5 % of its time
under the bench's load). Compact (no spaces), non-ASCII characters as they are (`ensure_ascii=False`).

What orjson refuses, the standard library writes as it did (a lone surrogate, an integer past 64 bits); what
orjson does not know (a tuple or float subclass, a dataclass, a datetime) goes to the same `default` as there.
Differences kept on purpose: NaN and the infinities are written `null` (JSON has no spelling for them, and a
`jsonb` column refuses the standard library's `NaN`), and an Enum member that is neither a str nor an int is
written as its value, not as its name.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_LENIENT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def _native(value: Any) -> Any:
    """What the standard library writes of a value orjson leaves to `default`: a tuple subclass (a NamedTuple) as
    an array, a float subclass as the number; TypeError for the others."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _native_or_str(value: Any) -> Any:
    try:
        return _native(value)
    except TypeError:
        return str(value)


def _encoded(value: Any, default: Callable[[Any], Any], fallback: json.JSONEncoder) -> str:
    try:
        return orjson.dumps(value, default=default, option=_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a big integer, or (strict) an unknown type
        return fallback.encode(value)


def compact_json(value: Any) -> str:
    """`value` as compact JSON; TypeError for a value JSON has no form for (ValueError: NaN, by the fallback)."""
    return _encoded(value, _native, _STRICT)


def compact_json_or_str(value: Any) -> str:
    """`value` as compact JSON, anything JSON has no form for written as its `str`."""
    return _encoded(value, _native_or_str, _LENIENT)
