"""Loading the config: YAML with line numbers, AGENT_MONITOR_* env overrides, the judge key fallback."""

from __future__ import annotations

import os
import types
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from .locate import ConfigError, Loc, Locator, Problem, dotted, located_problems
from .models import MonitorConfig

ENV_PREFIX = "AGENT_MONITOR_"
JUDGE_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_SOURCE = "<embedded default_config.yaml>"
# Values a document may hold once its aliases (*name) are expanded: a config holds hundreds; an "alias bomb" (each
# level repeating the one before) billions, which validation would expand in memory.
MAX_EXPANDED_VALUES = 100_000


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> MonitorConfig:
    """Load `path` (None: the embedded default), apply AGENT_MONITOR_* overrides from `env` (default os.environ).

    Raises ConfigError listing every problem as `file:line: section.field: message`.
    """
    return load_located(path, env)[0]


def load_located(path: str | Path | None, env: Mapping[str, str] | None) -> tuple[MonitorConfig, Locator]:
    """The config, and a Locator that places later problems (see `monitor.preflight`) at their lines."""

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
        problems += located_problems(MonitorConfig, exc, source, lines, origins)
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
        if node is not None:
            _check_expansion(node, source)
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
    if node is None or data is None:
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


def _check_expansion(root: yaml.Node, source: str, limit: int = MAX_EXPANDED_VALUES) -> None:
    """ConfigError when the document, its aliases expanded, holds more than `limit` values: located at the
    innermost mapping or list that goes over (each distinct node is sized once, so this is linear)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.MappingNode):
            total += sum(size(key) + size(value) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        if total > limit:
            line = node.start_mark.line + 1
            raise ConfigError(
                [
                    f"{source}:{line}: this value expands to more than {limit} values through YAML aliases (*name); "
                    "a config needs far fewer: write the values out, or use fewer aliases"
                ]
            )
        sizes[id(node)] = total
        return total

    size(root)


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


def _resolve(root: type[BaseModel], parts: list[str]) -> tuple[tuple[str, ...], Any]:
    model: type[BaseModel] | None = root
    loc: tuple[str, ...] = ()
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


def _set(data: dict[str, Any], loc: tuple[str, ...], value: Any) -> None:
    for key in loc[:-1]:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[loc[-1]] = value


def judge_key_from_env(env: Mapping[str, str]) -> str | None:
    """The judge API key from GEMINI_API_KEY, else GOOGLE_API_KEY (None when neither is set)."""
    for var in JUDGE_KEY_VARS:
        if env.get(var):
            return env[var]
    return None


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


def _accepts_str(annotation: Any) -> bool:
    if annotation is str:
        return True
    if get_origin(annotation) in (Union, types.UnionType, Annotated):
        return any(_accepts_str(arg) for arg in get_args(annotation))
    return False


# --- error reporting ----------------------------------------------------------------------------
