"""What every polled source gives the poll runner (runner.py), so that a polled trace and a received one are the
same to the views and evaluators.

Two kinds of source:

- a **TraceSource** (jaeger, tempo, phoenix, amp) lists the traces that *started* in a time range and fetches
  them whole: `pages(since, until)` yields lists of PolledTrace, each trace once per call, in any order. The
  runner keeps the checkpoint (checkpoints: the time mark and the trace ids seen near it), asks for
  `[mark - overlap, now - settle_delay)`, evaluates the traces it has not seen, and moves the mark.
- a **SpanFeed** (otlp_files) reads spans as they are written, not whole traces: `read(state)` returns the new
  spans and the source's new state (JSON-serialisable, e.g. file offsets); the runner hands the spans to the
  assembler like received spans (it completes traces after their quiet period) and stores the state.

A source is `ordered` (an attribute, False when absent) when its pages come in ascending start time, so that
after a page every trace that started before that page's latest start has been yielded: a run stopped early can
then move its checkpoint to that start instead of reading the same pages again.

With a result store that several replicas share (PostgreSQL), a source is polled by one replica at a time: the
runner asks its `Leases` (the store's implementation: monitor/store/postgres/leases.py) before each run and each
page whether this replica holds the source, and a replica that does not waits for the holder to go.

Errors: a source raises SourceError with a `kind` (the `kind` label of agent_monitor_poll_errors_total) and a
message that names the request, never a token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.consumer import PolledTrace
from monitor.sources.errors import BOUND_KINDS, ErrorKind, SourceError

if TYPE_CHECKING:
    from monitor.sources.guard import RunGuard

__all__ = [
    "BOUND_KINDS", "ErrorKind", "Leases", "PolledTrace", "SourceError", "SpanFeed", "TraceSource", "span_time_range",
]  # fmt: skip


@runtime_checkable
class TraceSource(Protocol):
    name: str

    def pages(self, since: float, until: float, guard: RunGuard | None = None) -> AsyncIterator[list[PolledTrace]]:
        """The traces that started in [since, until), page by page, each once; SourceError when it fails.
        `guard` (the run's bounds; None: no bound) counts every page request and response byte, stops a cursor
        that does not advance, and cuts traces at its spans_per_trace."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class SpanFeed(Protocol):
    name: str

    async def read(self, state: Any, limit: int) -> tuple[list[SpanRecord], list[LogRecord], Any]:
        """Spans and log records written since `state` (None: from the start; at most about `limit` spans), and
        the state after them; SourceError when it fails."""
        ...

    async def close(self) -> None: ...


class Leases(Protocol):
    """Which sources this replica polls, when replicas share them."""

    async def hold(self, source: str) -> bool:
        """Whether this replica polls `source` now (taking it when no replica holds it); raises when that cannot
        be known (the database fails)."""
        ...

    async def close(self) -> None:
        """Give every source up (another replica takes them over)."""
        ...


def span_time_range(spans: list[SpanRecord]) -> tuple[float, float | None]:
    """(start, end) in Unix seconds of a trace's spans: the earliest start, the latest end (None if none ended)."""
    starts = [s.start_time_unix_nano for s in spans if s.start_time_unix_nano > 0]
    ends = [s.end_time_unix_nano for s in spans if s.end_time_unix_nano > 0]
    start = min(starts) / 1e9 if starts else 0.0
    return start, (max(ends) / 1e9 if ends else None)
