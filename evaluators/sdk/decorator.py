"""@evaluator: turn a function into an evaluator (a BaseEvaluator instance that stays callable like the function)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypedDict, overload

from .base import BaseEvaluator
from .introspect import describe, first_line, level_for, resolve_hints, strip_optional
from .params import Param
from .result import DEFAULT_THRESHOLD, LEVELS

_PLAIN_TYPES = (bool, int, float, str, list, dict)


class _Options(TypedDict):
    """@evaluator's keyword options, as build_function_evaluator takes them."""

    threshold: float
    aggregations: tuple[str, ...] | None
    description: str
    level: str | None
    kind: str
    needs_ground_truth: bool | None


class FunctionEvaluator(BaseEvaluator):
    """An evaluator made by @evaluator. `evaluate` calls the function with the configured params;
    calling the evaluator itself calls the function directly (configured params fill what is not given)."""

    _func: ClassVar[Callable[..., Any]]

    def evaluate(self, subject: Any, task: Any = None) -> Any:
        kwargs = dict(self._params)
        if self._accepts_task:
            kwargs["task"] = task
        return type(self)._func(subject, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        func = type(self)._func
        bound = inspect.signature(func).bind_partial(*args, **kwargs)
        for key, value in self._params.items():
            bound.arguments.setdefault(key, value)
        return func(*bound.args, **bound.kwargs)


@overload
def evaluator(name: Callable[..., Any], /) -> FunctionEvaluator: ...


@overload
def evaluator(
    name: str | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    aggregations: Sequence[str] | None = None,
    description: str = "",
    level: str | None = None,
    kind: str = "rule",
    needs_ground_truth: bool | None = None,
) -> Callable[[Callable[..., Any]], FunctionEvaluator]: ...


def evaluator(
    name: str | Callable[..., Any] | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    aggregations: Sequence[str] | None = None,
    description: str = "",
    level: str | None = None,
    kind: str = "rule",
    needs_ground_truth: bool | None = None,
) -> Any:
    """Make the decorated function an evaluator: `@evaluator("tone", threshold=0.7)` (or bare `@evaluator`).

    The level comes from the first parameter's annotation (Trace → "trace", AgentTrace → "agent",
    LLMSpan → "llm"), unless `level=` is given. A `task: Task` parameter without a default means the
    evaluator needs ground truth; `task: Task | None = None` means it uses a task when one is given.
    Every other parameter must have a default and becomes a Param (a `Param(...)` default is used as is).
    The function may return an EvalResult, a float score or a bool.
    """
    options: _Options = {
        "threshold": threshold,
        "aggregations": tuple(aggregations) if aggregations is not None else None,
        "description": description,
        "level": level,
        "kind": kind,
        "needs_ground_truth": needs_ground_truth,
    }
    return bare_or_named(name, lambda func, named: build_function_evaluator(func, named, **options), "evaluator")


def bare_or_named(name: Any, build: Callable[[Callable[..., Any], str | None], Any], decorator: str) -> Any:
    """What a decorator used bare (`@d`: `name` is the function) or called (`@d("name", ...)`) returns:
    `build(func, name)` now, or a decorator that does it."""
    if callable(name):
        return build(name, None)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"@{decorator}: the name must be a str, got {type(name).__name__}")
    return lambda func: build(func, name)


def function_signature(
    func: Callable[..., Any], name: str | None, decorator: str
) -> tuple[str, str, list[inspect.Parameter], dict[str, Any]]:
    """(label, where, parameters, type hints) of a function decorated with `@decorator`; TypeError unless it is
    a plain function whose first parameter is the subject."""
    if isinstance(func, BaseEvaluator) or not inspect.isfunction(inspect.unwrap(func)):
        raise TypeError(f"@{decorator} applies to a plain function, got {func!r}")
    label = name or func.__name__
    where = f"@{decorator} {label!r} ({func.__module__}.{func.__qualname__})"
    parameters = list(inspect.signature(func).parameters.values())
    hints = resolve_hints(func)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not parameters or parameters[0].kind not in positional:
        raise TypeError(f"{where}: the first parameter must be the subject (a Trace, AgentTrace or LLMSpan)")
    return label, where, parameters, hints


def function_level(level: str | None, subject: inspect.Parameter, hints: dict[str, Any], where: str) -> str:
    """`level` checked, or (None) the level the subject parameter's annotation names; TypeError otherwise."""
    if level is not None:
        if level not in LEVELS:
            raise TypeError(f"{where}: level must be one of {LEVELS}, got {level!r}")
        return level
    annotation = hints.get(subject.name, subject.annotation)
    derived = level_for(annotation)
    if derived is None:
        raise TypeError(
            f"{where}: annotate the first parameter {subject.name!r} with Trace, AgentTrace or LLMSpan "
            f"(got {describe(annotation)}), or pass level='trace'|'agent'|'llm'"
        )
    return derived


def function_namespace(
    func: Callable[..., Any], label: str, level: str, threshold: float, description: str
) -> dict[str, Any]:
    """The class attributes every evaluator made from a function has (a `task` parameter changes the last two)."""
    return {
        "__module__": func.__module__,
        "__qualname__": func.__qualname__,
        "__doc__": func.__doc__,
        "__wrapped__": staticmethod(func),
        "_func": staticmethod(func),
        "name": label,
        "level": level,
        "threshold": threshold,
        "description": description or first_line(func.__doc__),
        "_accepts_task": False,
        "needs_ground_truth": False,
    }


def build_function_evaluator(
    func: Callable[..., Any],
    name: str | None,
    *,
    threshold: float,
    aggregations: tuple[str, ...] | None,
    description: str,
    level: str | None,
    kind: str,
    needs_ground_truth: bool | None,
) -> FunctionEvaluator:
    """The evaluator instance for `func` (a fresh FunctionEvaluator subclass holding its Params)."""
    label, where, parameters, hints = function_signature(func, name, "evaluator")
    level = function_level(level, parameters[0], hints, where)
    namespace = function_namespace(func, label, level, threshold, description)
    namespace.update(aggregations=aggregations, kind=kind)
    for param in parameters[1:]:
        if param.name == "task":
            namespace["_accepts_task"] = True
            namespace["needs_ground_truth"] = param.default is inspect.Parameter.empty
            continue
        namespace[param.name] = _param_for(param, hints.get(param.name), where)
    if needs_ground_truth is not None:
        namespace["needs_ground_truth"] = needs_ground_truth
    cls = type(func.__name__, (FunctionEvaluator,), namespace)
    return cls()


def _param_for(param: inspect.Parameter, hint: Any, where: str) -> Param:
    if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise TypeError(f"{where}: *args/**kwargs are not supported; give each setting its own parameter")
    if param.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise TypeError(f"{where}: parameter {param.name!r} must not be positional-only")
    if param.default is inspect.Parameter.empty:
        raise TypeError(
            f"{where}: parameter {param.name!r} needs a default (extra parameters become configurable params); "
            "a ground-truth parameter must be named 'task'"
        )
    if param.name in {"name", "level", "threshold", "description", "aggregations", "kind", "params", "info"}:
        raise TypeError(f"{where}: parameter name {param.name!r} is reserved")
    if isinstance(param.default, Param):
        return param.default
    return Param(param.default, type=_plain_type(hint))


def _plain_type(hint: Any) -> type | None:
    """The Param type an annotation asks for (int, float, str, bool, list, dict), else None (from the default)."""
    hint = strip_optional(hint)
    hint = typing.get_origin(hint) or hint
    if hint in _PLAIN_TYPES:
        return hint
    return None
