"""A cheap estimate of the memory a decoded span or log record holds, for the assembler's byte bound.

A string counts its length, times four when it is long and not ASCII (Python stores up to 4 bytes a
character; short strings are left at one, their error is small next to the per-entry overhead); bytes
their length; every dict entry, list item, event and link a flat overhead on top; numbers a flat
amount. Resource attributes are one dict shared by the spans of one resource in one request: the
assembler charges it once per trace that holds one of them (`resource_bytes`), not per span.

Measured on a 2-core machine with the synthetic GenAI spans of tests/bench/synthetic.py: about
1 us a span, 6-9 % of decoding it (this walks the top-level values and recurses only into lists and
maps), and about 0.8 of what tracemalloc sees allocated for the decoded batch.
"""

from __future__ import annotations

from typing import Any

from evaluators.traces.raw_spans import RawSpan, ReceivedSpan
from evaluators.traces.records import Attributes, LogRecord

RAW_RECORD_BYTES = 300  # a RawSpan (slots) and its id strings; its payload counts its length
RECORD_BYTES = 500  # a SpanRecord or LogRecord (slots), its id strings and empty containers
ENTRY_BYTES = 100  # a dict entry or list item: the key and value objects' headers, the table slot
EVENT_BYTES = 200  # a SpanEvent or SpanLink, with its attributes dict
SCALAR_BYTES = 32  # an int, float, bool or None value
LONG_TEXT = 256  # from this length on, a non-ASCII string counts 4 bytes a character


def _text_bytes(text: str) -> int:
    size = len(text)
    return size if size < LONG_TEXT or text.isascii() else 4 * size


def value_bytes(value: Any) -> int:
    kind = type(value)
    if kind is str:
        return _text_bytes(value)
    if kind is bytes:
        return len(value)
    if kind is dict:
        return attributes_bytes(value)
    if kind is list:
        return sum(ENTRY_BYTES + value_bytes(item) for item in value)
    return SCALAR_BYTES


def attributes_bytes(attributes: Attributes) -> int:
    """The entries of a dict: keys, values and the per-entry overhead."""
    total = ENTRY_BYTES * len(attributes) + sum(map(len, attributes))
    for value in attributes.values():
        if type(value) is str:
            size = len(value)
            total += size if size < LONG_TEXT or value.isascii() else 4 * size
        else:
            total += value_bytes(value)
    return total


def span_bytes(span: ReceivedSpan) -> int:
    """What a span holds, its resource attributes left out (see `resource_bytes`); a raw span: its payload."""
    if isinstance(span, RawSpan):
        return RAW_RECORD_BYTES + len(span.payload)
    total = RECORD_BYTES + _text_bytes(span.name) + attributes_bytes(span.attributes)
    if span.status_message:
        total += _text_bytes(span.status_message)
    for event in span.events:
        total += EVENT_BYTES + _text_bytes(event.name) + attributes_bytes(event.attributes)
    for link in span.links:
        total += EVENT_BYTES + attributes_bytes(link.attributes)
    return total


def log_bytes(record: LogRecord) -> int:
    """What a log record holds, its resource attributes left out."""
    return (
        RECORD_BYTES + _text_bytes(record.event_name) + value_bytes(record.body) + attributes_bytes(record.attributes)
    )


def resource_bytes(attributes: Attributes) -> int:
    """A resource's attributes (charged once per trace and request; empty ones cost nothing extra)."""
    return attributes_bytes(attributes) if attributes else 0
