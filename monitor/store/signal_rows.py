"""The rows drift detection reads from the store (monitor/detection): per-window aggregates of the compact
per-trace table `trace_signals` (and `trace_tools`), of the stored verdicts, and of the completed conversations,
and the drift episodes kept across restarts. Sums are plain floats; a count of 0 means "no value in the window"
(e.g. no priced trace: `cost_n` 0)."""

from __future__ import annotations

from typing import NamedTuple


class TraceAggregate(NamedTuple):
    """The traces of one (service, agent) stored within a window."""

    service: str
    agent: str  # "" when the trace names none
    traces: int
    errors: int  # traces with a failed span
    llm_calls: float  # sum over the traces
    llm_calls_sq: float  # sum of squares
    tool_calls: float
    tool_calls_sq: float
    tool_failures: float  # failed tool calls (tool_calls − tool_failures succeeded)
    response_n: int  # traces with an answer
    response_chars: float
    response_chars_sq: float
    tokens_n: int  # traces whose calls reported usage
    tokens: float
    tokens_sq: float
    cost_n: int  # traces with at least one priced call
    cost: float
    cost_sq: float
    latency_n: int
    latency: float  # seconds
    latency_sq: float


class ToolAggregate(NamedTuple):
    """The traces of one (service, agent) that called `tool` at least once within a window."""

    service: str
    agent: str
    tool: str
    traces: int


class ResultAggregate(NamedTuple):
    """One evaluator's verdicts on the traces of one (service, agent) within a window (skips left out). The agent
    is the result's own, else its trace's (`trace_signals.agent`), else ""."""

    service: str
    agent: str
    evaluator: str
    verdicts: int
    passed: int
    scores_n: int
    scores: float
    scores_sq: float


class SessionAggregate(NamedTuple):
    """The conversations of one service completed within a window that ended one way (`ended`)."""

    service: str
    ended: str
    sessions: int
    turns: float
    turns_sq: float


class VariantCount(NamedTuple):
    """The traces of one (service, agent) within a window by variant (the agent version)."""

    service: str
    agent: str
    variant: str
    traces: int


class DriftEpisode(NamedTuple):
    """A change seen significant and still active, kept so that its `since` survives a restart and is the same on
    every replica (the first replica to see it writes it)."""

    service: str
    agent: str
    signal: str
    subject: str
    direction: str  # "up" or "down"
    since: float  # epoch seconds: the report time it was first seen


class WindowAggregates(NamedTuple):
    """Everything one window holds for drift detection."""

    traces: list[TraceAggregate]
    tools: list[ToolAggregate]
    results: list[ResultAggregate]
    sessions: list[SessionAggregate]
    variants: list[VariantCount]


__all__ = [
    "DriftEpisode",
    "ResultAggregate",
    "SessionAggregate",
    "ToolAggregate",
    "TraceAggregate",
    "VariantCount",
    "WindowAggregates",
]
