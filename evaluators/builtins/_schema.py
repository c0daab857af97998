"""A small JSON-schema validator for tool-call arguments (no dependency, never raises on odd schemas).

Supported: `type` (object, string, number, integer, boolean, array, null, a list of them; Gemini's upper-case
names too), `nullable`, `required`, `properties`, `additionalProperties` (false or a schema), `enum`, `const`,
`items` (a schema), `minItems`/`maxItems`, `minimum`/`maximum`, `exclusiveMinimum`/`exclusiveMaximum`,
`minLength`/`maxLength`, and `anyOf`/`oneOf`/`allOf`. Anything else (`$ref`, `format`, `pattern`, ...) is
accepted unchecked.
"""

from __future__ import annotations

import math
from typing import Any

MAX_PROBLEMS = 20
_MAX_DEPTH = 32
_KNOWN_TYPES = frozenset({"object", "string", "number", "integer", "boolean", "array", "null"})


def json_type(value: Any) -> str:
    """The JSON type name of a parsed JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    actual = json_type(value)
    if name == "number":
        return actual in ("integer", "number") and not (isinstance(value, float) and math.isnan(value))
    if name == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == name


def _types(schema: dict[str, Any]) -> list[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        names = [declared]
    elif isinstance(declared, list):
        names = [t for t in declared if isinstance(t, str)]
    else:
        return None
    names = [t.lower() for t in names if t.lower() in _KNOWN_TYPES]  # unknown names are not checked
    if not names:
        return None
    if schema.get("nullable") is True and "null" not in names:
        names.append("null")
    return names


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def validate(instance: Any, schema: Any) -> list[str]:
    """The problems of `instance` against `schema` (empty when valid), each prefixed by its JSON path."""
    problems: list[str] = []
    _check(instance, schema, "$", problems, 0)
    return problems[:MAX_PROBLEMS]


def _check(value: Any, schema: Any, path: str, problems: list[str], depth: int) -> None:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH or len(problems) >= MAX_PROBLEMS:
        return  # `true`, `{}`, an odd schema or a runaway: nothing (more) to check
    types = _types(schema)
    if types is not None and not any(_is_type(value, t) for t in types):
        wanted = " or ".join(types)
        problems.append(f"{path}: expected {wanted}, got {json_type(value)}")
        return
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: must be {schema['const']!r}, got {value!r}")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        problems.append(f"{path}: {value!r} is not one of {enum!r}")
    _check_combinators(value, schema, path, problems, depth)
    if isinstance(value, dict):
        _check_object(value, schema, path, problems, depth)
    elif isinstance(value, list | tuple):
        _check_array(list(value), schema, path, problems, depth)
    elif isinstance(value, str):
        _check_string(value, schema, path, problems)
    elif _number(value) is not None:
        _check_number(float(value), schema, path, problems)


def _check_combinators(value: Any, schema: dict[str, Any], path: str, problems: list[str], depth: int) -> None:
    all_of = schema.get("allOf")
    for sub in all_of if isinstance(all_of, list) else []:
        _check(value, sub, path, problems, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if not isinstance(options, list) or not options:
            continue
        branch_problems = []
        for sub in options:
            found: list[str] = []
            _check(value, sub, path, found, depth + 1)
            if not found:
                break
            branch_problems.append(found)
        else:
            first = branch_problems[0][0] if branch_problems and branch_problems[0] else f"{path}: no match"
            problems.append(f"{path}: matches none of the {key} options ({first})")


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, problems: list[str], depth: int) -> None:
    required = schema.get("required")
    if isinstance(required, list):
        for key in required:
            if isinstance(key, str) and key not in value:
                problems.append(f"{path}: missing required property {key!r}")
    properties = props if isinstance(props := schema.get("properties"), dict) else {}
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        child = f"{path}.{key}"
        if key in properties:
            _check(item, properties[key], child, problems, depth + 1)
        elif extra is False:
            problems.append(f"{path}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            _check(item, extra, child, problems, depth + 1)


def _check_array(value: list[Any], schema: dict[str, Any], path: str, problems: list[str], depth: int) -> None:
    low, high = _number(schema.get("minItems")), _number(schema.get("maxItems"))
    if low is not None and len(value) < low:
        problems.append(f"{path}: {len(value)} items, fewer than minItems {int(low)}")
    if high is not None and len(value) > high:
        problems.append(f"{path}: {len(value)} items, more than maxItems {int(high)}")
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _check(item, items, f"{path}[{index}]", problems, depth + 1)


def _check_string(value: str, schema: dict[str, Any], path: str, problems: list[str]) -> None:
    low, high = _number(schema.get("minLength")), _number(schema.get("maxLength"))
    if low is not None and len(value) < low:
        problems.append(f"{path}: length {len(value)} is below minLength {int(low)}")
    if high is not None and len(value) > high:
        problems.append(f"{path}: length {len(value)} is above maxLength {int(high)}")


def _check_number(value: float, schema: dict[str, Any], path: str, problems: list[str]) -> None:
    shown = int(value) if value.is_integer() else value
    low, high = _number(schema.get("minimum")), _number(schema.get("maximum"))
    if low is not None and value < low:
        problems.append(f"{path}: {shown} is below minimum {schema['minimum']}")
    if high is not None and value > high:
        problems.append(f"{path}: {shown} is above maximum {schema['maximum']}")
    ex_low, ex_high = _number(schema.get("exclusiveMinimum")), _number(schema.get("exclusiveMaximum"))
    if ex_low is not None and value <= ex_low:
        problems.append(f"{path}: {shown} is not above exclusiveMinimum {schema['exclusiveMinimum']}")
    if ex_high is not None and value >= ex_high:
        problems.append(f"{path}: {shown} is not below exclusiveMaximum {schema['exclusiveMaximum']}")
