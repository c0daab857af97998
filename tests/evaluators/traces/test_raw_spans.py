"""Raw spans (evaluators.traces.raw_spans) decode to exactly what the full protobuf decoder gives.

The receiving process keeps a span's attributes as protobuf bytes and the evaluation worker decodes them: for any
request the spans, their order, the spans refused for invalid ids, errors and the attributes dropped for nesting too
deep (at parse time in the receiving process, the rest when the worker decodes) must equal `decode_traces_protobuf`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from evaluators.traces import TraceDecodeError
from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH
from evaluators.traces.otlp_proto import decode_traces_protobuf
from evaluators.traces.raw_spans import DEEP_ATTRIBUTES, RawSpan, decode_traces_raw, records_of
from tests.evaluators.traces.test_decoders_depth import pb_attr, pb_request, pb_span, pb_text, pb_value
from tests.evaluators.traces.test_properties import mutated_protobuf

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"


def _value(draw: st.DrawFn, depth: int) -> AnyValue:
    kind = draw(st.sampled_from(["s", "i", "b", "d", "bytes", "array", "kvlist", "empty"] if depth < 4 else ["s"]))
    value = AnyValue()
    if kind == "s":
        value.string_value = draw(st.text(max_size=8))
    elif kind == "i":
        value.int_value = draw(st.integers(-(2**63), 2**63 - 1))
    elif kind == "b":
        value.bool_value = draw(st.booleans())
    elif kind == "d":
        value.double_value = draw(st.floats(allow_nan=False))
    elif kind == "bytes":
        value.bytes_value = draw(st.binary(max_size=4))
    elif kind == "array":
        value.array_value.values.extend(_value(draw, depth + 1) for _ in range(draw(st.integers(0, 2))))
    elif kind == "kvlist":
        value.kvlist_value.values.extend(
            KeyValue(key=draw(st.text(max_size=3)), value=_value(draw, depth + 1))
            for _ in range(draw(st.integers(0, 2)))
        )
    return value


def _attributes(draw: st.DrawFn, target: Any) -> None:
    for _ in range(draw(st.integers(0, 3))):
        target.add(key=draw(st.sampled_from(["a", "b", "gen_ai.system", ""])), value=_value(draw, 0))


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    """Random requests: several resources and scopes, spans with valid and invalid ids, nested attributes,
    events, links and statuses."""
    request = ExportTraceServiceRequest()
    ids = st.sampled_from([b"", b"\x00" * 8, b"\x01" * 8, b"\x02" * 8, b"\x03" * 4])
    traces = st.sampled_from([b"\x11" * 16, b"\x22" * 16, b"\x00" * 16, b"\x33" * 3])
    for _ in range(draw(st.integers(0, 2))):
        resource_spans = request.resource_spans.add()
        _attributes(draw, resource_spans.resource.attributes)
        for _ in range(draw(st.integers(0, 2))):
            scope_spans = resource_spans.scope_spans.add()
            scope_spans.scope.name = draw(st.text(max_size=4))
            scope_spans.scope.version = draw(st.text(max_size=2))
            for _ in range(draw(st.integers(0, 3))):
                span = scope_spans.spans.add()
                span.trace_id, span.span_id, span.parent_span_id = draw(traces), draw(ids), draw(ids)
                span.name = draw(st.text(max_size=6))
                span.kind = draw(st.integers(0, 5))
                span.start_time_unix_nano = draw(st.integers(0, 2**64 - 1))
                span.end_time_unix_nano = draw(st.integers(0, 2**64 - 1))
                span.status.code = draw(st.integers(0, 2))
                span.status.message = draw(st.text(max_size=4))
                _attributes(draw, span.attributes)
                for _ in range(draw(st.integers(0, 1))):
                    event = span.events.add(name=draw(st.text(max_size=3)), time_unix_nano=draw(st.integers(0, 9)))
                    _attributes(draw, event.attributes)
                for _ in range(draw(st.integers(0, 1))):
                    link = span.links.add(trace_id=draw(traces), span_id=draw(ids))
                    _attributes(draw, link.attributes)
    return request.SerializeToString()


def _deep(levels: int, kind: str) -> bytes:
    """A request with one span holding an attribute nested `levels` levels and a plain one."""
    return pb_request([pb_span(0, [pb_attr("deep", pb_value(levels, kind)), pb_attr("ok", pb_text("x"))])])


def _same_as_full_decoding(data: bytes) -> None:
    DEEP_ATTRIBUTES.take()
    try:
        full = decode_traces_protobuf(data, "request")
    except TraceDecodeError as exc:
        with pytest.raises(TraceDecodeError) as raised:
            decode_traces_raw(data, "request", "grpc")
        assert str(raised.value) == str(exc)
        return
    raw = decode_traces_raw(data, "request", "grpc")
    assert all(isinstance(span, RawSpan) for span in raw.spans)
    assert [s.trace_id for s in raw.spans] == [s.trace_id for s in full.spans]
    assert records_of(list(raw.spans)) == full.spans
    assert raw.rejected == full.rejected
    later = DEEP_ATTRIBUTES.take()
    assert raw.dropped_attributes + later.get("grpc", 0) == full.dropped_attributes
    assert set(later) <= {"grpc"}


@settings(max_examples=300, deadline=None)
@given(st.one_of(requests(), mutated_protobuf()))
@example(_deep(MAX_VALUE_DEPTH + 3, "array"))  # parses in C: left out when the worker decodes
@example(_deep(MAX_VALUE_DEPTH + 20, "kvlist"))  # past the C parser's limit: cut when the request is parsed
@example(_deep(MAX_VALUE_DEPTH, "array"))  # at the limit: kept
@example(  # a resource attribute too deep for the walk: counted like a span's
    pb_request([pb_span(0, [pb_attr("ok", pb_text("x"))])], [pb_attr("deep", pb_value(MAX_VALUE_DEPTH + 3, "array"))])
)
def test_raw_spans_decode_to_the_full_decoders_records(data: bytes) -> None:
    _same_as_full_decoding(data)


@pytest.mark.parametrize("path", sorted(CORPUS.rglob("*.pb")), ids=lambda p: str(p.relative_to(CORPUS)))
def test_recorded_requests_decode_the_same(path: Path) -> None:
    try:
        _same_as_full_decoding(path.read_bytes())
    except TraceDecodeError:
        pytest.skip("not a traces request")


def test_an_attribute_too_deep_for_the_worker_is_counted_under_its_receiver() -> None:
    DEEP_ATTRIBUTES.take()
    raw = decode_traces_raw(_deep(MAX_VALUE_DEPTH + 3, "array"), "request", "http")
    assert raw.dropped_attributes == 0 and len(raw.spans) == 1  # the receiving process did not walk it
    (record,) = records_of(list(raw.spans))
    assert record.attributes == {"ok": "x"}
    assert DEEP_ATTRIBUTES.take() == {"http": 1}
    assert DEEP_ATTRIBUTES.take() == {}


def test_raw_spans_cross_to_a_worker_raw_and_decode_there_like_records() -> None:
    """traces_to_wire keeps a raw span raw (its bytes, not its attributes) and traces_from_wire gives it back equal;
    a trace mixing raw spans and records (a polled one) keeps each as it is."""
    from monitor.engine.assembler import CompletedTrace
    from monitor.engine.trace_wire import traces_from_wire, traces_to_wire

    data = pb_request([pb_span(0, [pb_attr("ok", pb_text("x"))]), pb_span(1, [pb_attr("n", pb_text("y"))])])
    raw = decode_traces_raw(data, "request", "grpc").spans
    record = decode_traces_protobuf(data, "request").spans[1]
    completed = CompletedTrace(raw[0].trace_id, [raw[0], raw[1], record], "quiet", 1.0, 2.0, [], 1.5)
    (back,) = traces_from_wire(traces_to_wire([completed]))
    assert back.spans[:2] == raw and isinstance(back.spans[0], RawSpan)
    assert back.spans[2] == record
    assert records_of(back.spans) == [*decode_traces_protobuf(data, "request").spans[:2], record]
