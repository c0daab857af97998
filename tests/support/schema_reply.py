"""A minimal reply that satisfies a response schema as the client sent it on the wire (Gemini's OpenAPI form)."""

from __future__ import annotations

from typing import Any


def reply_for(schema: dict[str, Any], *, text: str = "x", number: float | None = None) -> Any:
    """The smallest value of `schema`: every required property, one item per array (or `min_items`), the first
    enum value, the minimum of a bounded number (`number` when given and within bounds)."""
    kind = str(schema.get("type", "")).upper()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "OBJECT":
        properties = schema.get("properties") or {}
        required = schema.get("required") or list(properties)
        return {name: reply_for(properties[name], text=text, number=number) for name in required}
    if kind == "ARRAY":
        count = max(int(schema.get("min_items", schema.get("minItems", 1)) or 1), 1)
        return [reply_for(schema.get("items") or {}, text=text, number=number) for _ in range(count)]
    if kind in ("NUMBER", "INTEGER"):
        low, high = schema.get("minimum"), schema.get("maximum")
        value = number if number is not None else (low if low is not None else 0)
        if low is not None:
            value = max(value, low)
        if high is not None:
            value = min(value, high)
        return int(value) if kind == "INTEGER" else float(value)
    if kind == "BOOLEAN":
        return True
    return text
