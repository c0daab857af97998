"""Param: a typed, bounded, documented evaluator setting, declared as a class attribute."""

from __future__ import annotations

import copy
import math
from typing import Any

from pydantic import BaseModel


class EvaluatorConfigError(ValueError, TypeError):
    """A bad evaluator configuration (wrong type, out of bounds, unknown name). Both a ValueError and a TypeError.

    `param` names the offending param when there is one (so a config file can point at its line).
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


_JSON_TYPES: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
_TYPE_WORDS: dict[type, str] = {
    bool: "a bool",
    int: "an int",
    float: "a number",
    str: "a str",
    list: "a list",
    dict: "a dict",
}


class ParamInfo(BaseModel):
    """One param as shown in `EvaluatorInfo.params`."""

    name: str
    type: str | None
    default: Any
    description: str = ""
    min: float | None = None
    max: float | None = None
    choices: list[Any] | None = None


class Param:
    """A configurable evaluator setting: `max_errors = Param(0, "errors allowed", min=0)`.

    The type comes from `type=` or else the default's type (None default: any type). An int is accepted
    for a float param; a tuple for a list param. `choices` constrains the value (each item, for a list).
    On an instance the attribute reads the configured value; change it with `with_config(...)`.
    """

    def __init__(
        self,
        default: Any = None,
        description: str = "",
        min: float | None = None,
        max: float | None = None,
        choices: list[Any] | tuple[Any, ...] | None = None,
        type: type | None = None,
    ) -> None:
        self.default = default
        self.description = description
        self.min = min
        self.max = max
        self.choices = list(choices) if choices is not None else None
        self.type = type if type is not None else _infer_type(default)
        self.name = ""
        self.owner_name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        # Only named here: BaseEvaluator subclasses check the default in bind() (errors raised from
        # __set_name__ get wrapped in RuntimeError before Python 3.12).
        self.name = name
        self.owner_name = getattr(owner, "name", None) or owner.__name__

    def bind(self, name: str, owner_name: str) -> None:
        """Name this param (and its evaluator, for messages), and check the default against the rules."""
        self.name = name
        self.owner_name = owner_name
        if self.default is not None:
            self.default = self.validate(self.default)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        values = getattr(instance, "_params", None)
        if values is not None and self.name in values:
            return values[self.name]
        return copy.deepcopy(self.default)

    def __set__(self, instance: Any, value: Any) -> None:
        raise AttributeError(f"{self.owner_name}: param {self.name!r} is read-only; use with_config({self.name}=...)")

    def _fail(self, problem: str) -> EvaluatorConfigError:
        return EvaluatorConfigError(f"{self.owner_name or 'evaluator'}: param {self.name!r} {problem}", param=self.name)

    def validate(self, value: Any) -> Any:
        """`value` checked against type, bounds and choices (an int becomes a float for a float param)."""
        if value is None and self.default is None:
            return None
        value = self._coerce(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and math.isnan(value):
                raise self._fail("must be a number, got NaN")
            if self.min is not None and value < self.min:
                raise self._fail(f"must be >= {self.min}, got {value!r}")
            if self.max is not None and value > self.max:
                raise self._fail(f"must be <= {self.max}, got {value!r}")
        if self.choices is not None:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if item not in self.choices:
                    raise self._fail(f"must be one of {self.choices!r}, got {item!r}")
        return value

    def _coerce(self, value: Any) -> Any:
        expected = self.type
        if expected is None:
            return value
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if expected is list and isinstance(value, tuple):
            return list(value)
        ok = isinstance(value, expected)
        if ok and isinstance(value, bool) and expected is not bool:
            ok = False  # a bool is not an int or a float here
        if not ok:
            word = _TYPE_WORDS.get(expected, expected.__name__)
            raise self._fail(f"must be {word}, got {type(value).__name__} ({value!r})")
        return value

    @property
    def json_type(self) -> str | None:
        return _JSON_TYPES.get(self.type) if self.type is not None else None

    def info(self) -> ParamInfo:
        return ParamInfo(
            name=self.name,
            type=self.json_type,
            default=copy.deepcopy(self.default),
            description=self.description,
            min=self.min,
            max=self.max,
            choices=copy.deepcopy(self.choices),
        )

    def json_schema(self) -> dict[str, Any]:
        """This param as a JSON schema property: type, default, minimum, maximum, enum, description."""
        schema: dict[str, Any] = {}
        json_type = self.json_type
        if json_type is not None:
            schema["type"] = [json_type, "null"] if self.default is None else json_type
        schema["default"] = copy.deepcopy(self.default)
        if self.min is not None:
            schema["minimum"] = self.min
        if self.max is not None:
            schema["maximum"] = self.max
        if self.choices is not None:
            if json_type == "array":
                schema["items"] = {"enum": copy.deepcopy(self.choices)}
            else:
                schema["enum"] = copy.deepcopy(self.choices)
        if self.description:
            schema["description"] = self.description
        return schema

    def __repr__(self) -> str:
        return f"Param({self.default!r}, name={self.name!r})"


def _infer_type(default: Any) -> type | None:
    if default is None:
        return None
    if isinstance(default, tuple):
        return list
    for candidate in (bool, int, float, str, list, dict):
        if isinstance(default, candidate):
            return candidate
    return type(default)


def config_schema(title: str, params: dict[str, Param]) -> dict[str, Any]:
    """The JSON schema of an evaluator's params (an object with no other properties)."""
    return {
        "title": title,
        "type": "object",
        "properties": {name: p.json_schema() for name, p in params.items()},
        "additionalProperties": False,
    }
