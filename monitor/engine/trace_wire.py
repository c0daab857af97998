"""Completed traces as plain tuples and lists: what crosses from the main process to an evaluation worker.

Pickling a slotted dataclass costs a reduce call, a class reference and a state dict per object; a tuple of
the same fields pickles in a fraction of the time, and the main process does that work with the GIL held.
A record becomes the tuple of its fields in declaration order (`attrgetter`, in C), so decoding is one
positional call. A span without events, links or logs (the usual case) leaves its three empty lists out.

Attribute dicts go as they are, never copied: the pickle memo writes a dict shared by many spans (a
request's `resource_attributes`, a log's attributes joined to a span) once, and the worker gets one shared
dict back. A raw span (`evaluators.traces.raw_spans`: its attributes still protobuf bytes) goes as the tuple
of its RAW_FIELDS, told from a record's by its length, and stays raw: the worker's evaluation decodes it. What
comes back is a metrics tally (`monitor.metrics.tally`).
"""

from __future__ import annotations

from operator import attrgetter

from evaluators.traces.raw_spans import RawSpan, ReceivedSpan
from evaluators.traces.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from monitor.engine.assembler import CompletedTrace

WireTrace = tuple

# Field names in declaration order (tests/monitor/engine/test_trace_wire.py checks them against the dataclasses).
TRACE_FIELDS = ("trace_id", "spans", "reason", "first_seen", "completed_at", "logs", "last_seen")
LOCAL_FIELDS = frozenset({"on_done", "size_bytes"})  # main-process only: a waiter's callback, the assembler's count
SPAN_FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "status_code",
    "status_message",
    "attributes",
    "events",
    "links",
    "resource_attributes",
    "scope_name",
    "scope_version",
    "logs",
)
SPAN_LISTS = ("events", "links", "logs")
RAW_FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "kind",
    "end_time_unix_nano",
    "payload",
    "resource_attributes",
    "scope_name",
    "scope_version",
    "source",
)
EVENT_FIELDS = ("name", "time_unix_nano", "attributes", "body", "from_log")
LINK_FIELDS = ("trace_id", "span_id", "attributes")
LOG_FIELDS = (
    "trace_id",
    "span_id",
    "event_name",
    "time_unix_nano",
    "body",
    "attributes",
    "resource_attributes",
    "scope_name",
)

_span_scalars = attrgetter(*(name for name in SPAN_FIELDS if name not in SPAN_LISTS))
_event = attrgetter(*EVENT_FIELDS)
_link = attrgetter(*LINK_FIELDS)
_log = attrgetter(*LOG_FIELDS)
_PLAIN_SPAN = len(SPAN_FIELDS) - len(SPAN_LISTS)
_raw = attrgetter(*RAW_FIELDS)
_RAW_SPAN = len(RAW_FIELDS)


def traces_to_wire(batch: list[CompletedTrace]) -> list[WireTrace]:
    """Each trace as the tuple of its TRACE_FIELDS, its spans and logs as tuples of their fields (a span: its
    fields but events, links and logs, then those three if any of them is not empty)."""
    return [
        (
            c.trace_id,
            list(map(_span_to_wire, c.spans)),
            c.reason,
            c.first_seen,
            c.completed_at,
            list(map(_log, c.logs)),
            c.last_seen,
        )
        for c in batch
    ]


def _span_to_wire(span: ReceivedSpan) -> tuple:
    if isinstance(span, RawSpan):
        return _raw(span)
    if span.events or span.links or span.logs:
        return (
            *_span_scalars(span),
            list(map(_event, span.events)),
            list(map(_link, span.links)),
            list(map(_event, span.logs)),
        )
    return _span_scalars(span)


def traces_from_wire(wire: list[WireTrace]) -> list[CompletedTrace]:
    """The inverse of `traces_to_wire`: equal traces, sharing the dicts the originals shared."""
    return [
        CompletedTrace(
            trace_id,
            list(map(_span_from_wire, spans)),
            reason,
            first_seen,
            completed_at,
            [LogRecord(*log) for log in logs],
            last_seen,
        )
        for trace_id, spans, reason, first_seen, completed_at, logs, last_seen in wire
    ]


def _span_from_wire(item: tuple) -> ReceivedSpan:
    if len(item) == _RAW_SPAN:
        return RawSpan(*item)
    events: list[SpanEvent] = []
    links: list[SpanLink] = []
    logs: list[SpanEvent] = []
    if len(item) > _PLAIN_SPAN:
        events = [SpanEvent(*event) for event in item[-3]]
        links = [SpanLink(*link) for link in item[-2]]
        logs = [SpanEvent(*event) for event in item[-1]]
        item = item[:_PLAIN_SPAN]
    trace_id, span_id, parent, name, kind, start, end, code, message, attributes, resource, scope, version = item
    return SpanRecord(
        trace_id, span_id, parent, name, kind, start, end, code, message, attributes, events, links, resource, scope,
        version, logs,
    )  # fmt: skip
