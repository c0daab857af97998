"""The compact rows an evaluation produces: what crosses from a worker process to the metrics and the store.

Plain tuples (NamedTuple) so they pickle small and fast; text from traces is already bounded here, in the
worker, so the process that owns the store only inserts.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

MAX_TEXT = 4000


def bounded(text: Any, limit: int = MAX_TEXT) -> str | None:
    """`text` as a string of at most `limit` characters (JSON for anything not a string); None stays None."""
    if text is None:
        return None
    value = text if isinstance(text, str) else json.dumps(text, default=str, ensure_ascii=False)
    return value if len(value) <= limit else value[: limit - 1] + "…"


class ResultRow(NamedTuple):
    """One evaluator's result on one dispatch unit (trace, agent or LLM call)."""

    span_id: str | None
    agent: str | None
    model: str | None
    evaluator: str  # the `evaluator` metric label
    level: str
    score: float | None
    passed: bool | None  # None for a skip
    skip_reason: str | None
    explanation: str | None  # bounded
    details: str | None  # JSON, bounded; None when empty
    duration_seconds: float


class TraceOutcome(NamedTuple):
    """One evaluated trace: what its metrics need, what the store keeps, and every result row."""

    trace_id: str
    service: str  # the trace's service name, "unknown" when it has none
    duration_seconds: float
    has_error: bool
    tokens: tuple[tuple[str | None, int, int], ...]  # (model, input, output) per LLM call
    tools: tuple[tuple[str, bool], ...]  # (tool, ok) per tool call
    llm_calls: tuple[tuple[str | None, bool], ...]  # (model, ok) per LLM call
    input: str | None  # bounded
    output: str | None  # bounded
    span_count: int
    duration_ms: float
    last_seen: float  # time.monotonic() of the trace's last span (CLOCK_MONOTONIC is system-wide on Linux)
    results: tuple[ResultRow, ...]


class TraceFailure(NamedTuple):
    """A trace whose views or evaluation failed as a whole (counted as dropped, reason evaluation_error)."""

    trace_id: str
    error: str


# On the wire between processes: plain tuples pickle about four times faster than NamedTuples (no class
# reference and reduce call per row).
WireOutcome = tuple


def to_wire(outcomes: list[TraceOutcome | TraceFailure]) -> list[WireOutcome]:
    """Outcomes as plain tuples: (0, trace fields..., rows) for a TraceOutcome, (1, trace_id, error) for a failure."""
    wire: list[WireOutcome] = []
    for outcome in outcomes:
        if isinstance(outcome, TraceFailure):
            wire.append((1, *outcome))
        else:
            wire.append((0, *outcome[:-1], tuple(map(tuple, outcome.results))))
    return wire


def from_wire(wire: list[WireOutcome]) -> list[TraceOutcome | TraceFailure]:
    """The inverse of `to_wire`."""
    make_row = ResultRow._make
    outcomes: list[TraceOutcome | TraceFailure] = []
    for item in wire:
        if item[0] == 1:
            outcomes.append(TraceFailure(*item[1:]))
        else:
            outcomes.append(TraceOutcome._make((*item[1:-1], tuple(map(make_row, item[-1])))))
    return outcomes
