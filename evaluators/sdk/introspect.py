"""Reading evaluator signatures: resolved annotations, the level a subject type means, docstring summaries."""

from __future__ import annotations

import contextlib
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

_LEVEL_BY_NAME = {"Trace": "trace", "AgentTrace": "agent", "LLMSpan": "llm", "Session": "session"}


def resolve_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """The function's annotations, resolved against its module globals (works with postponed annotations).

    When some annotation cannot be resolved (e.g. a name imported only under TYPE_CHECKING), each one is
    resolved on its own and the unresolvable ones stay strings.
    """
    func = inspect.unwrap(func)
    try:
        return typing.get_type_hints(func)
    except Exception:
        pass
    globalns = getattr(func, "__globals__", {})
    hints: dict[str, Any] = {}
    for name, annotation in getattr(func, "__annotations__", {}).items():
        if isinstance(annotation, str):
            with contextlib.suppress(Exception):  # unresolvable: keep the text
                annotation = eval(annotation, globalns)  # the function's own annotation text
        hints[name] = annotation
    return hints


def strip_optional(annotation: Any) -> Any:
    """`X` for `X | None` / `Optional[X]`; the annotation unchanged otherwise."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def level_for(annotation: Any) -> str | None:
    """The level ("trace", "agent", "llm", "session") of a Trace, AgentTrace, LLMSpan or Session annotation (class
    or name), else None."""
    from evaluators.sessions.model import Session
    from evaluators.traces.model import AgentTrace, LLMSpan, Trace

    annotation = strip_optional(annotation)
    if isinstance(annotation, str):
        text = re.sub(r"\s*\|\s*None\s*$|^Optional\[(.*)\]$", r"\1", annotation.strip().strip("'\""))
        return _LEVEL_BY_NAME.get(text.rsplit(".", 1)[-1])
    if isinstance(annotation, type):
        for cls, level in ((LLMSpan, "llm"), (AgentTrace, "agent"), (Trace, "trace"), (Session, "session")):
            if issubclass(annotation, cls):
                return level
    return None


def describe(annotation: Any) -> str:
    """A short text for an annotation, for error messages."""
    if annotation is inspect.Parameter.empty:
        return "no annotation"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation)


def first_line(doc: str | None) -> str:
    """The summary line of a docstring ("" for none)."""
    if not doc:
        return ""
    lines = inspect.cleandoc(doc).strip().splitlines()
    return lines[0].strip() if lines else ""


def snake_case(name: str) -> str:
    """`ToolErrorRate` → `tool_error_rate`; a trailing `Evaluator` is dropped (`ToneEvaluator` → `tone`)."""
    if name.endswith("Evaluator") and len(name) > len("Evaluator"):
        name = name[: -len("Evaluator")]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
