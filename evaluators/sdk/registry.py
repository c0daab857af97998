"""Finding evaluators: the builtin catalog, `module:attr` specs, and installed entry points."""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import inspect
import threading
import types
from typing import Any

from .base import BaseEvaluator, EvaluatorInfo
from .decorator import FunctionEvaluator

ENTRY_POINT_GROUP = "agent_monitor.evaluators"
BUILTINS_MODULE = "evaluators.catalog"

_catalog: dict[str, type[BaseEvaluator] | BaseEvaluator] = {}
_lock = threading.RLock()
_builtins_loaded = False


def register(evaluator: Any, *, replace: bool = False) -> Any:
    """Add an evaluator (a BaseEvaluator subclass or instance) to the catalog under its name; returns it.

    Usable as a class decorator. A different evaluator under a taken name is refused unless `replace=True`
    (the same class or function registered again, e.g. on module reload, replaces the old one).
    """
    if isinstance(evaluator, type) and issubclass(evaluator, BaseEvaluator):
        if evaluator.level is None:
            raise TypeError(f"cannot register {evaluator.__name__}: its level is unknown")
    elif not isinstance(evaluator, BaseEvaluator):
        raise TypeError(f"register() takes a BaseEvaluator subclass or instance, got {evaluator!r}")
    name = evaluator.name
    with _lock:
        existing = _catalog.get(name)
        if existing is not None and not replace and _origin(existing) != _origin(evaluator):
            raise ValueError(f"an evaluator named {name!r} is already registered ({_origin(existing)})")
        _catalog[name] = evaluator
    return evaluator


def unregister(name: str) -> None:
    """Remove an evaluator from the catalog (no error if absent)."""
    with _lock:
        _catalog.pop(name, None)


def _origin(evaluator: Any) -> str:
    cls = evaluator if isinstance(evaluator, type) else type(evaluator)
    return f"{cls.__module__}.{cls.__qualname__}"


def _load_builtins() -> None:
    """Import `evaluators.catalog` once, if it exists; its imports register the builtin evaluators."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _lock:
        if _builtins_loaded:
            return
        try:
            importlib.import_module(BUILTINS_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name != BUILTINS_MODULE:
                raise
        _builtins_loaded = True


def _fresh(entry: type[BaseEvaluator] | BaseEvaluator, params: dict[str, Any]) -> BaseEvaluator:
    return entry(**params) if isinstance(entry, type) else entry.with_config(**params)


def builtin(name: str, **params: Any) -> BaseEvaluator:
    """A new instance of the catalog evaluator `name`, configured with `params`."""
    _load_builtins()
    with _lock:
        entry = _catalog.get(name)
        known = sorted(_catalog)
    if entry is None:
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        listing = ", ".join(known) if known else "none are registered"
        raise ValueError(f"unknown builtin evaluator {name!r}{hint} (known: {listing})")
    return _fresh(entry, params)


def list_builtins() -> list[EvaluatorInfo]:
    """The catalog's evaluators with their defaults, by name."""
    _load_builtins()
    with _lock:
        entries = sorted(_catalog.items())
    return [_fresh(entry, {}).info for _, entry in entries]


def in_default_set(info: EvaluatorInfo) -> bool:
    """Whether a builtin belongs to the default evaluator set: a rule that scores with its defaults alone
    (no ground truth, no LLM judge, nothing that must be configured first)."""
    return info.kind == "rule" and not info.needs_ground_truth and not info.needs_config


def default_builtins() -> list[EvaluatorInfo]:
    """The default evaluator set (what the daemon runs when no evaluators are configured), by name."""
    return [info for info in list_builtins() if in_default_set(info)]


def as_evaluator(obj: Any, origin: str = "object") -> BaseEvaluator:
    """An evaluator from an instance or decorated function (as is) or a BaseEvaluator subclass (instantiated)."""
    if isinstance(obj, BaseEvaluator):
        return obj
    if isinstance(obj, type) and issubclass(obj, BaseEvaluator):
        return obj()
    if inspect.isfunction(obj):
        raise TypeError(f"{origin} is a plain function; decorate it with @evaluator(...) to make it an evaluator")
    raise TypeError(f"{origin} is not an evaluator (got {type(obj).__name__})")


def evaluators_in_module(module: types.ModuleType) -> list[BaseEvaluator]:
    """Every evaluator a module defines, in definition order.

    That is: public evaluator instances (decorated functions only when defined in this module), and public,
    concrete BaseEvaluator subclasses defined in this module that have no instance there already.
    """
    items = [(k, v) for k, v in vars(module).items() if not k.startswith("_")]
    instance_classes = {type(v) for _, v in items if isinstance(v, BaseEvaluator)}
    found: list[BaseEvaluator] = []
    seen: set[int] = set()
    for _, value in items:
        if isinstance(value, BaseEvaluator):
            if isinstance(value, FunctionEvaluator) and type(value)._func.__module__ != module.__name__:
                continue  # imported from another module
            if id(value) not in seen:
                seen.add(id(value))
                found.append(value)
        elif _is_local_evaluator_class(value, module.__name__) and value not in instance_classes:
            found.append(value())
    return found


def _is_local_evaluator_class(value: Any, module_name: str) -> bool:
    return (
        isinstance(value, type)
        and issubclass(value, BaseEvaluator)
        and not issubclass(value, FunctionEvaluator)
        and value.__module__ == module_name
        and value.level is not None
        and value.evaluate is not BaseEvaluator.evaluate
        and not inspect.isabstract(value)
    )


def load_evaluator(spec: str) -> list[BaseEvaluator]:
    """The evaluators a spec names: `"pkg.mod:attr"` → that one; `"pkg.mod"` → every evaluator in the module."""
    module_name, sep, attr = spec.strip().partition(":") if isinstance(spec, str) else ("", "", "")
    if not module_name or (sep and not attr):
        raise ValueError(f"bad evaluator spec {spec!r}: expected 'package.module' or 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import evaluator module {module_name!r} (from {spec!r}): {exc}") from exc
    if not attr:
        return evaluators_in_module(module)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"evaluator spec {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return [as_evaluator(obj, f"{spec!r}")]


def entry_point_evaluators(group: str = ENTRY_POINT_GROUP) -> list[BaseEvaluator]:
    """Evaluators of installed packages, from entry points of `group` (an object, or a module: all of it)."""
    found: list[BaseEvaluator] = []
    for entry in importlib.metadata.entry_points(group=group):
        try:
            obj = entry.load()
        except Exception as exc:
            raise ImportError(
                f"entry point {entry.name!r} ({entry.value}) of group {group!r} failed to load: {exc}"
            ) from exc
        if isinstance(obj, types.ModuleType):
            found.extend(evaluators_in_module(obj))
        else:
            found.append(as_evaluator(obj, f"entry point {entry.name!r} ({entry.value})"))
    return found
