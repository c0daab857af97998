"""Loading the config: YAML with line numbers, AGENT_MONITOR_* env overrides, duration/size parsing, errors.

The models live in `config.py`; this module imports them lazily (inside `load`) so that `config.py`
can import the scalar parsers and error types from here.
"""

from __future__ import annotations

import math
import os
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from .config import MonitorConfig

Loc = tuple[str | int, ...]
ENV_PREFIX = "AGENT_MONITOR_"
JUDGE_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_SOURCE = "<embedded default_config.yaml>"


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

_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_SIZE = re.compile(r"(\d+)\s*(b|kb|kib|mb|mib|gb|gib)?", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}


def parse_duration(value: object) -> float:
    """Seconds from a number or text like "250ms", "5s", "2m", "1h", "7d" (or "1h30m")."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite duration, got {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration like 5s, 2m or 1h, got {value!r}")
    text = value.strip().lower()
    try:
        return parse_duration(float(text))
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(_DURATION_PART.sub("#", text).split()) != "#" * len(parts):
        raise ValueError(f"invalid duration {value!r}: use seconds or a number with ms, s, m, h or d (e.g. 5s, 2m)")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def parse_size(value: object) -> int:
    """Bytes from an int or text like "16MiB", "512KiB", "4MB"."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"expected a size in bytes, got {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"invalid size {value!r}: use bytes or a number with KiB, MiB, GiB, KB, MB or GB")
    return int(match[1]) * _SIZE_UNITS[(match[2] or "b").lower()]


# --- loading ------------------------------------------------------------------------------------


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


def load(path: str | Path | None, env: Mapping[str, str] | None) -> MonitorConfig:
    """See `monitor.config.load_config`."""
    return load_located(path, env)[0]


def load_located(path: str | Path | None, env: Mapping[str, str] | None) -> tuple[MonitorConfig, Locator]:
    """The config, and a Locator that places later problems (see `monitor.preflight`) at their lines."""
    from .config import MonitorConfig

    env = os.environ if env is None else env
    source, text = _read(path)
    data, lines = _parse(source, text)
    _null_sections_to_empty(MonitorConfig, data)
    origins: dict[Loc, str] = {}
    problems = _apply_env(MonitorConfig, data, env, origins)
    _judge_key_fallback(data, env, origins)
    try:
        config = MonitorConfig.model_validate(data)
    except ValidationError as exc:
        problems += _describe(MonitorConfig, exc, source, lines, origins)
    if problems:
        raise ConfigError([text for _, text in sorted(problems, key=lambda p: p[0])])
    return config, Locator(source, lines, origins)


def _read(path: str | Path | None) -> tuple[str, str]:
    if path is None:
        return DEFAULT_SOURCE, resources.files("monitor").joinpath("default_config.yaml").read_text("utf-8")
    try:
        return str(path), Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from None


def _parse(source: str, text: str) -> tuple[dict[str, Any], dict[Loc, int]]:
    """The YAML document as data, and the 1-based line of every key and list item in it."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        raise ConfigError([f"{where}: invalid YAML: {exc.problem or exc.context}{context}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: invalid YAML: {exc}"]) from None
    finally:
        loader.dispose()
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        line = node.start_mark.line + 1
        raise ConfigError([f"{source}:{line}: the document must be a mapping of sections (receivers:, metrics:, …)"])
    lines: dict[Loc, int] = {}
    duplicates: list[str] = []
    _index(node, (), lines, duplicates, source)
    if duplicates:
        raise ConfigError(duplicates)
    return data, lines


def _index(node: yaml.Node, loc: Loc, lines: dict[Loc, int], duplicates: list[str], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            child = (*loc, key.value)
            line = key.start_mark.line + 1
            if child in lines:
                duplicates.append(f"{source}:{line}: {dotted(child)}: duplicate key (first at line {lines[child]})")
            lines.setdefault(child, line)
            _index(value, child, lines, duplicates, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _index(item, (*loc, index), lines, duplicates, source)


def _null_sections_to_empty(model: type[BaseModel], data: dict[str, Any]) -> None:
    """An empty section (`receivers:` with everything commented out) means all its defaults."""
    for name, info in model.model_fields.items():
        key = info.alias or name
        section = info.annotation if isinstance(info.annotation, type) else None
        if section is None or not issubclass(section, BaseModel):
            continue
        if key in data and data[key] is None:
            data[key] = {}
        if isinstance(data.get(key), dict):
            _null_sections_to_empty(section, data[key])


# --- environment overrides ----------------------------------------------------------------------

Problem = tuple[tuple[int, int, str], str]  # (sort key, text)


def _apply_env(root: type[BaseModel], data: dict[str, Any], env: Mapping[str, str], origins: dict[Loc, str]) -> list:
    """Set every AGENT_MONITOR_<SECTION>__<FIELD>[__<SUB>] variable into `data`; problems for bad ones."""
    problems: list[Problem] = []
    for var in sorted(env):
        if not var.upper().startswith(ENV_PREFIX):
            continue
        parts = var[len(ENV_PREFIX) :].lower().split("__")
        if len(parts) == 1 and parts[0] not in root.model_fields:
            continue  # AGENT_MONITOR_<NAME> without "__" is left to command-line options (e.g. a config path)
        try:
            loc, annotation = _resolve(root, parts)
            value = _env_value(env[var], annotation)
        except ValueError as exc:
            problems.append(((1, 0, var), f"env {var}: {exc}"))
            continue
        _set(data, loc, value)
        origins[loc] = var
    return problems


def _resolve(root: type[BaseModel], parts: list[str]) -> tuple[Loc, Any]:
    model: type[BaseModel] | None = root
    loc: Loc = ()
    annotation: Any = None
    for part in parts:
        if model is None:
            raise ValueError(f"{dotted((*loc, part))}: unknown field ({dotted(loc)} has no sub-fields)")
        fields = {(info.alias or name): info for name, info in model.model_fields.items()}
        if part not in fields:
            raise ValueError(f"{dotted((*loc, part))}: unknown field (expected one of: {', '.join(fields)})")
        loc = (*loc, part)
        annotation = fields[part].annotation
        model = _model_in(annotation, through_lists=False)
    return loc, annotation


def _env_value(raw: str, annotation: Any) -> Any:
    """The variable parsed as a YAML scalar or flow value (raw text for string fields)."""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        if _accepts_str(annotation):
            return raw
        raise ValueError(f"cannot parse {raw!r} as YAML: {getattr(exc, 'problem', None) or exc}") from None
    if value is not None and not isinstance(value, str) and _accepts_str(annotation):
        return raw
    return value


def _set(data: dict[str, Any], loc: Loc, value: Any) -> None:
    for key in loc[:-1]:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[loc[-1]] = value


def _judge_key_fallback(data: dict[str, Any], env: Mapping[str, str], origins: dict[Loc, str]) -> None:
    judges = data.get("judges")
    if judges is None:
        judges = data["judges"] = {}
    if not isinstance(judges, dict) or judges.get("gemini_api_key") is not None:
        return
    for var in JUDGE_KEY_VARS:
        if env.get(var):
            judges["gemini_api_key"] = env[var]
            origins[("judges", "gemini_api_key")] = var
            return


# --- type helpers -------------------------------------------------------------------------------


def _model_in(annotation: Any, through_lists: bool) -> type[BaseModel] | None:
    """The config model an annotation holds (through Optional/Annotated, and lists if asked)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, Annotated) or (through_lists and origin is list):
        for arg in get_args(annotation):
            if (found := _model_in(arg, through_lists)) is not None:
                return found
    return None


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


def _accepts_str(annotation: Any) -> bool:
    if annotation is str:
        return True
    if get_origin(annotation) in (Union, types.UnionType, Annotated):
        return any(_accepts_str(arg) for arg in get_args(annotation))
    return False


# --- error reporting ----------------------------------------------------------------------------


def dotted(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(top level)"


def _describe(
    root: type[BaseModel], exc: ValidationError, source: str, lines: dict[Loc, int], origins: dict[Loc, str]
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
    from .config_evaluators import FORM_TAGS

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


def _where(loc: Loc, source: str, lines: dict[Loc, int], origins: dict[Loc, str]) -> tuple[str, tuple[int, int, str]]:
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
