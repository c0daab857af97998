"""Hand-built SpanRecords for unit tests: `make_span(...)` and `trace_of(*spans)`.

Ids are lowercase hex like the decoders produce. Span ids and start times are generated
(unique, increasing) unless given, so spans made one after another sort in creation order.
"""

from __future__ import annotations

import itertools
from typing import Any

from evaluators.traces import Trace, build_trace
from evaluators.traces.records import SpanEvent, SpanRecord

DEFAULT_TRACE_ID = "0" * 31 + "1"
_BASE_START_NS = 1_700_000_000_000_000_000
_STEP_NS = 10_000_000  # 10 ms between auto-generated start times
_MS_NS = 1_000_000

_span_ids = itertools.count(1)
_starts = itertools.count(0)


def new_span_id() -> str:
    """A fresh, unique, non-zero 16-hex-digit span id."""
    return f"{next(_span_ids):016x}"


def next_start() -> int:
    """An auto-increasing start time in ns (10 ms apart)."""
    return _BASE_START_NS + next(_starts) * _STEP_NS


def make_span(
    name: str,
    attributes: dict[str, Any] | None = None,
    *,
    trace_id: str = DEFAULT_TRACE_ID,
    span_id: str | None = None,
    parent: str | SpanRecord | None = None,
    kind: int = 1,
    start: int | None = None,
    end: int | None = None,
    status: int = 0,
    status_message: str = "",
    events: list[SpanEvent] | None = None,
    scope: str = "",
    resource: dict[str, Any] | None = None,
) -> SpanRecord:
    """One SpanRecord. `parent` is a span id or a SpanRecord; `end` defaults to start + 1 ms."""
    if isinstance(parent, SpanRecord):
        parent_id = parent.span_id
    else:
        parent_id = parent or ""
    start_ns = next_start() if start is None else start
    end_ns = start_ns + _MS_NS if end is None else end
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id if span_id is not None else new_span_id(),
        parent_span_id=parent_id,
        name=name,
        kind=kind,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=end_ns,
        status_code=status,
        status_message=status_message,
        attributes=dict(attributes or {}),
        events=list(events or []),
        resource_attributes=dict(resource or {}),
        scope_name=scope,
    )


def trace_of(*spans: SpanRecord) -> Trace:
    """A Trace built from the given spans with `evaluators.traces.build_trace`."""
    return build_trace(list(spans))


__all__ = ["DEFAULT_TRACE_ID", "make_span", "new_span_id", "next_start", "trace_of"]
