"""Lenient helpers for the JSON that instrumentation libraries stuff into attributes."""

from __future__ import annotations

import json
from typing import Any

_NOT_JSON = object()


def parse_json(value: Any) -> Any:
    """Parse a JSON string; return the value unchanged when it is not a string or not valid JSON.

    Truncated or invalid JSON degrades to the raw string, never an exception.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or (text[0] not in '[{"' and not text[0].isdigit() and text not in ("true", "false", "null")):
        return value
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return value


def try_parse_json(value: Any) -> tuple[Any, str | None]:
    """(parsed, None) on success, (raw, error message) when a string is not valid JSON."""
    if not isinstance(value, str):
        return value, None
    try:
        return json.loads(value), None
    except json.JSONDecodeError as exc:
        return value, f"{exc.msg} at column {exc.colno}"
    except (ValueError, RecursionError) as exc:
        return value, str(exc)[:200]


def parse_json_deep(value: Any, depth: int = 2) -> Any:
    """parse_json, then once more when the result is itself a JSON string (double encoding)."""
    for _ in range(depth):
        parsed = parse_json(value)
        if parsed is value:
            return value
        value = parsed
        if not isinstance(value, str):
            return value
    return value


def as_text(value: Any) -> str | None:
    """A display string for any attribute value: strings as-is, others as compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 1e18:
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value.strip()))
        except (ValueError, OverflowError):
            return None
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def as_str_list(value: Any) -> list[str]:
    """A string array attribute (or a JSON string of one, or a single string) as a list of strings."""
    value = parse_json(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return []


def unflatten(attributes: dict[str, Any], prefix: str) -> list[Any]:
    """Rebuild an indexed list from flattened keys: `prefix.{i}.rest` → [ {rest...}, ... ].

    Indices are sorted numerically and may be sparse; nested `.{j}.` segments become lists too.
    Keys without a numeric segment after the prefix are ignored.
    """
    root: dict[int, Any] = {}
    plen = len(prefix) + 1
    for key, value in attributes.items():
        if not key.startswith(prefix) or len(key) <= plen or key[plen - 1] != ".":
            continue
        parts = key[plen:].split(".")
        if not parts[0].isdigit():
            continue
        _insert(root, parts, value)
    return _to_lists(root)


def _insert(node: dict, parts: list[str], value: Any) -> None:
    for i, part in enumerate(parts):
        key: Any = int(part) if part.isdigit() else part
        if i == len(parts) - 1:
            if not isinstance(node.get(key), dict):
                node[key] = value
            return
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child


def _to_lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_to_lists(node[k]) for k in sorted(node)]
    return {k if isinstance(k, str) else str(k): _to_lists(v) for k, v in node.items()}


def get_path(value: Any, *path: str | int) -> Any:
    """Safe nested lookup: dict keys and list indices; None when any step is missing."""
    for step in path:
        if isinstance(step, int):
            if isinstance(value, list) and -len(value) <= step < len(value):
                value = value[step]
            else:
                return None
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value
