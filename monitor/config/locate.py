"""Where config problems are: locations (`Loc`), the errors that carry them, and their messages.

`Locator` places a problem at the YAML line (or env variable) it came from; `validation_problems` turns a
pydantic ValidationError into (location, message) pairs with the form tags of tagged unions removed.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

Loc = tuple[str | int, ...]
Problem = tuple[tuple[int, int, str], str]  # (sort key, text)

# Tags pydantic adds to locations for the form of a tagged union (`evaluators:` as a list or a mapping).
LIST_TAG = "<list form>"
MAPPING_TAG = "<mapping form>"
FORM_TAGS = frozenset({LIST_TAG, MAPPING_TAG})


class ConfigError(Exception):
    """An invalid configuration; `problems` holds one `where: section.field: message` line each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class LocatedError(ValueError):
    """Raised by validators to report problems at locations below the validated object."""

    def __init__(self, problems: list[tuple[Loc, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{dotted(loc)}: {msg}" for loc, msg in problems))


# --- scalar parsing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Locator:
    """Where each config value came from: a line of `source`, or an environment variable."""

    source: str = "config"
    lines: Mapping[Loc, int] = field(default_factory=dict)
    origins: Mapping[Loc, str] = field(default_factory=dict)

    def error(self, problems: list[tuple[Loc, str]]) -> ConfigError:
        """A ConfigError with one `where: section.field: message` line per (location, message), in file order."""
        located = []
        for loc, message in problems:
            where, key = _where(loc, self.source, self.lines, self.origins)
            located.append((key, f"{where}: {dotted(loc)}: {message}"))
        return ConfigError([text for _, text in sorted(located, key=lambda p: p[0])])


def dotted(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(top level)"


def located_problems(
    root: type[BaseModel], exc: ValidationError, source: str, lines: Mapping[Loc, int], origins: Mapping[Loc, str]
) -> list[Problem]:
    problems: list[Problem] = []
    for loc, message in validation_problems(root, exc):
        where, key = _where(loc, source, lines, origins)
        problems.append((key, f"{where}: {dotted(loc)}: {message}"))
    return problems


def validation_problems(root: type[BaseModel], exc: ValidationError) -> list[tuple[Loc, str]]:
    """(location, message) for every error of validating `root`, LocatedError causes spread out."""
    problems: list[tuple[Loc, str]] = []
    for error in exc.errors():
        loc = _untagged(tuple(error["loc"]))
        cause = (error.get("ctx") or {}).get("error")
        located = cause.problems if isinstance(cause, LocatedError) else [((), _message(root, error, loc))]
        problems.extend(((*loc, *sub), message) for sub, message in located)
    return problems


def _untagged(loc: Loc) -> Loc:
    """`loc` without the tags pydantic adds for the form of a tagged union (not keys of the file)."""
    return tuple(part for part in loc if part not in FORM_TAGS)


def _message(root: type[BaseModel], error: Any, loc: Loc) -> str:
    kind, message = error["type"], error["msg"]
    if kind == "extra_forbidden":
        model = _model_at(root, loc[:-1])
        known = [f.alias or n for n, f in model.model_fields.items()] if model else []
        return "unknown key" + (f" (expected one of: {', '.join(known)})" if known else "")
    if kind == "missing":
        return "required"
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    message = message[:1].lower() + message[1:]
    value = error.get("input")
    if kind != "value_error" and isinstance(value, str | int | float | bool | None):
        message += f" (got {value!r})"
    return message


def _where(
    loc: Loc, source: str, lines: Mapping[Loc, int], origins: Mapping[Loc, str]
) -> tuple[str, tuple[int, int, str]]:
    """Where a problem comes from: the env var that set it, else its line (or its nearest parent's)."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in origins:
            return f"env {origins[loc[:end]]}", (1, 0, origins[loc[:end]])
    if loc in lines:
        return f"{source}:{lines[loc]}", (0, lines[loc], "")
    below = sorted(var for at, var in origins.items() if at[: len(loc)] == loc)
    if below:
        return f"env {below[0]}", (1, 0, below[0])
    for end in range(len(loc) - 1, 0, -1):
        if loc[:end] in lines:
            return f"{source}:{lines[loc[:end]]}", (0, lines[loc[:end]], "")
    return source, (0, 0, "")


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The config model at `loc` (through fields, list items, mapping values and union members)."""
    options: list[Any] = [root]
    for part in loc:
        following: list[Any] = []
        for option in _members(options):
            if isinstance(option, type) and issubclass(option, BaseModel) and isinstance(part, str):
                info = next((f for n, f in option.model_fields.items() if (f.alias or n) == part), None)
                following += [info.annotation] if info else []
            elif get_origin(option) is list and isinstance(part, int):
                following += list(get_args(option)[:1])
            elif get_origin(option) is dict and isinstance(part, str):
                following += list(get_args(option)[1:2])
        options = following
    return next((m for m in _members(options) if isinstance(m, type) and issubclass(m, BaseModel)), None)


def _members(annotations: list[Any]) -> list[Any]:
    """The annotations with every Optional/Union/Annotated opened up."""
    found: list[Any] = []
    for annotation in annotations:
        if get_origin(annotation) in (Union, types.UnionType):
            found += _members(list(get_args(annotation)))
        elif get_origin(annotation) is Annotated:
            found += _members(list(get_args(annotation)[:1]))
        else:
            found.append(annotation)
    return found
