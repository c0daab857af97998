"""The wire form of completed traces sent to worker processes: exact round trip, shared dicts pickled once."""

from __future__ import annotations

import pickle
from dataclasses import fields
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators.traces.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from monitor.engine.assembler import CompletedTrace
from monitor.engine.trace_wire import (
    EVENT_FIELDS,
    LINK_FIELDS,
    LOCAL_FIELDS,
    LOG_FIELDS,
    SPAN_FIELDS,
    TRACE_FIELDS,
    traces_from_wire,
    traces_to_wire,
)

SETTINGS = settings(
    max_examples=80,  # drawing the large values is most of the time: 150 took 22 s of the suite
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

hex_ids = st.sampled_from(["", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"]) | st.text(max_size=40)
scalars = (
    st.text(max_size=20)
    | st.booleans()
    | st.integers(-(2**63), 2**64)
    | st.floats(allow_nan=False)  # NaN != NaN: equality could not tell a round trip from a copy
    | st.binary(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
attributes = st.dictionaries(st.text(max_size=12), values, max_size=5)
nanos = st.integers(0, 2**64 - 1)
events = st.builds(SpanEvent, st.text(max_size=12), nanos, attributes, st.none() | values, st.booleans())
links = st.builds(SpanLink, hex_ids, hex_ids, attributes)


@st.composite
def completed_traces(draw: st.DrawFn) -> CompletedTrace:
    trace_id = draw(hex_ids)
    resources = draw(st.lists(attributes, min_size=1, max_size=3))  # spans share their request's dict

    def span() -> SpanRecord:
        return SpanRecord(
            draw(st.just(trace_id) | hex_ids),
            draw(hex_ids),
            draw(hex_ids),
            draw(st.text(max_size=16)),
            draw(st.integers(0, 5)),
            draw(nanos),
            draw(nanos),
            draw(st.integers(0, 2)),
            draw(st.text(max_size=12)),
            draw(attributes),
            draw(st.lists(events, max_size=3)),
            draw(st.lists(links, max_size=2)),
            draw(st.sampled_from(resources)),
            draw(st.text(max_size=8)),
            draw(st.text(max_size=8)),
            draw(st.lists(events, max_size=2)),
        )

    def log() -> LogRecord:
        return LogRecord(
            draw(hex_ids),
            draw(hex_ids),
            draw(st.text(max_size=12)),
            draw(nanos),
            draw(st.none() | values),
            draw(attributes),
            draw(st.sampled_from(resources)),
            draw(st.text(max_size=8)),
        )

    times = st.floats(0, 1e9)
    return CompletedTrace(
        trace_id,
        [span() for _ in range(draw(st.integers(0, 5)))],
        draw(st.sampled_from(["quiet", "max_wait", "shutdown"])),
        draw(times),
        draw(times),
        [log() for _ in range(draw(st.integers(0, 3)))],
        draw(times),
    )


def test_the_wire_form_names_every_field_in_declaration_order() -> None:
    for cls, names in (
        (CompletedTrace, TRACE_FIELDS),
        (SpanRecord, SPAN_FIELDS),
        (SpanEvent, EVENT_FIELDS),
        (SpanLink, LINK_FIELDS),
        (LogRecord, LOG_FIELDS),
    ):
        assert tuple(f.name for f in fields(cls) if f.name not in LOCAL_FIELDS) == names, cls.__name__


def only_builtins(value: Any) -> bool:
    if isinstance(value, tuple | list):
        return all(map(only_builtins, value))
    if isinstance(value, dict):
        return all(only_builtins(k) and only_builtins(v) for k, v in value.items())
    return value is None or type(value) in (str, int, float, bool, bytes)


@SETTINGS
@given(st.lists(completed_traces(), max_size=4))
def test_traces_round_trip_through_the_wire_form(batch: list[CompletedTrace]) -> None:
    wire = traces_to_wire(batch)
    assert only_builtins(wire)
    assert traces_from_wire(wire) == batch
    assert traces_from_wire(pickle.loads(pickle.dumps(wire))) == batch


def typical_trace(spans: int, resource: dict[str, Any], trace_id: str = "ab" * 16) -> CompletedTrace:
    records = [
        SpanRecord(
            trace_id,
            f"{n:016x}",
            "" if n == 0 else f"{0:016x}",
            f"chat {n}",
            1,
            1_000 + n,
            2_000 + n,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": n},
            resource_attributes=resource,
            scope_name="scope",
        )
        for n in range(spans)
    ]
    log = LogRecord(trace_id, f"{1:016x}", "gen_ai.choice", 1_500, {"text": "hi"}, {"k": 1}, resource, "scope")
    records[-1].logs.append(log.as_event())  # joined: the event shares the log's attributes
    records[0].events.append(SpanEvent("exception", 1_100, {"exception.type": "ValueError"}))
    records[0].links.append(SpanLink("cd" * 16, f"{9:016x}", {}))
    return CompletedTrace(trace_id, records, "quiet", 1.0, 6.0, [log], 5.5)


def test_dicts_shared_before_are_pickled_once_and_shared_after() -> None:
    resource = {f"resource.attribute.{n}": f"{n}" * 200 for n in range(50)}
    one, many = typical_trace(1, resource), typical_trace(41, resource)
    per_span = (len(pickle.dumps(traces_to_wire([many]))) - len(pickle.dumps(traces_to_wire([one])))) / 40
    assert per_span < len(pickle.dumps(resource)) / 20

    (back,) = traces_from_wire(pickle.loads(pickle.dumps(traces_to_wire([many]))))
    assert back == many
    shared = back.spans[0].resource_attributes
    assert all(span.resource_attributes is shared for span in back.spans) and back.logs[0].resource_attributes is shared
    assert back.spans[-1].logs[0].attributes is back.logs[0].attributes
    # Empty lists are each span's own: the log join appends to them.
    assert len({id(span.logs) for span in back.spans}) == len(back.spans)
    assert len({id(span.events) for span in back.spans}) == len(back.spans)


def test_the_pickled_wire_form_is_no_larger_than_the_pickled_records() -> None:
    batch = [typical_trace(7, {"service.name": f"service-{n}"}, trace_id=f"{n:032x}") for n in range(8)]
    assert len(pickle.dumps(traces_to_wire(batch))) <= len(pickle.dumps(batch))
