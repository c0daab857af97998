"""Helpers shared by the rule-based builtin evaluators: budget decay, text trimming, regex params, response state."""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Iterable
from typing import Any, Literal

from evaluators.sdk import EvaluatorConfigError

from ..linear_regex import compile_linear

# Tools that hand control to another agent rather than act in the world (ADK, openai-agents, swarm styles).
HANDOFF_TOOL_PATTERNS: tuple[str, ...] = ("transfer_to_agent", "transfer_to_*", "handoff_to_*")

DECAY_HELP = "multiple of the limit at which the score reaches 0 (linear in between; 1 = a hard cutoff)"

ResponseState = Literal["text", "tool_only", "empty", "unrecorded"]


# The highest score of a value over its limit: a budget's default threshold of 1 then fails exactly those.
_BELOW_ONE = math.nextafter(1.0, 0.0)


def decay_score(value: float, limit: float, zero_at: float) -> float:
    """1 at or below `limit`, falling linearly to 0 at `zero_at × limit` (a factor of 1 or less: 0 above it).

    Any value over the limit scores below 1, however little it is over, so `score >= 1` means "within".
    """
    if value <= limit:
        return 1.0
    span = limit * (zero_at - 1.0)
    if span <= 0:
        return 0.0
    return max(0.0, min(_BELOW_ONE, 1.0 - (value - limit) / span))


def shorten(text: Any, limit: int = 120) -> str:
    """`text` as one line of at most `limit` characters (an ellipsis marks a cut)."""
    one_line = " ".join(str(text).split())
    return one_line if len(one_line) <= limit else one_line[: max(limit - 1, 0)] + "…"


def listing(items: list[str], limit: int = 3, sep: str = "; ") -> str:
    """The first `limit` items joined, with "(+N more)" for the rest."""
    shown = sep.join(items[:limit])
    rest = len(items) - limit
    return f"{shown}{sep}(+{rest} more)" if rest > 0 else shown


def fmt_num(value: float) -> str:
    """A number without a useless fraction: 1200 → "1200", 12.345 → "12.3"."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def compile_patterns(owner: str, name: str, patterns: Iterable[Any], flags: int = 0) -> list[Any]:
    """Regexes compiled from a list param by the linear-time engine (RE2: they search trace content); a bad one,
    or one RE2 cannot run (a lookaround, a backreference), is an EvaluatorConfigError naming it."""
    compiled = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise EvaluatorConfigError(f"{owner}: param {name!r} must hold regex strings, got {pattern!r}", param=name)
        try:
            compiled.append(compile_linear(pattern, flags))
        except re.error as exc:
            raise EvaluatorConfigError(
                f"{owner}: param {name!r} has a bad regex {pattern!r}: {exc}", param=name
            ) from None
    return compiled


class PatternList:
    """Regexes of a list param (compile_patterns), searched in order for the first that matches a text. Most texts
    match none of them: one search of them all combined answers that, instead of one search each."""

    def __init__(self, owner: str, name: str, patterns: Iterable[Any], flags: int = 0) -> None:
        listed = list(patterns)
        self.compiled = compile_patterns(owner, name, listed, flags)
        self._any: Any = None
        if len(self.compiled) > 1:
            try:
                self._any = compile_linear("|".join(f"(?:{p})" for p in listed), flags)
            except re.error:  # each compiles alone; should the whole not, each is searched
                self._any = None

    def first_match(self, text: str) -> tuple[Any, Any] | None:
        """(pattern, match) of the first pattern, in list order, found in `text`; None when none is."""
        if self._any is not None and self._any.search(text) is None:
            return None
        for pattern in self.compiled:
            match = pattern.search(text)
            if match:
                return pattern, match
        return None


def is_handoff_tool(name: str | None, patterns: Iterable[str] = HANDOFF_TOOL_PATTERNS) -> bool:
    """True for a handoff pseudo-tool name such as `transfer_to_agent`."""
    return bool(name) and any(fnmatch.fnmatchcase(str(name), p) for p in patterns)


def text_of(value: Any) -> str:
    """A view's text field as a str ("" for None or a non-text value)."""
    return value if isinstance(value, str) else ""


def response_state(call: Any) -> ResponseState:
    """What an LLM call's recorded output holds.

    "text" (non-blank text), "tool_only" (tool calls, no text), "unrecorded" (no content captured although
    the model produced output tokens, or nothing at all about the output was recorded), else "empty".
    """
    if text_of(getattr(call, "response", None)).strip():
        return "text"
    if getattr(call, "tool_calls", None):
        return "tool_only"
    metrics = getattr(call, "metrics", None)
    output_tokens = getattr(metrics, "output_tokens", 0) or 0
    if output_tokens > 0:
        return "unrecorded"
    has_usage = bool(getattr(metrics, "has_usage", False))
    if getattr(call, "response", None) is None and not getattr(call, "finish_reasons", None) and not has_usage:
        return "unrecorded"
    return "empty"


def canonical_arguments(arguments: Any) -> str | None:
    """A comparable form of tool-call arguments (None when they were not recorded)."""
    if arguments is None:
        return None
    try:
        return json.dumps(arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(arguments)
