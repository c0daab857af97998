"""One nesting limit for attribute values in both encodings: an over-deep value drops that attribute
(counted in `DecodedBatch.dropped_attributes`), never the other attributes, spans or the request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators.traces import DecodedBatch, TraceDecodeError, decode_bytes, otlp_json, otlp_proto
from evaluators.traces.otlp_depth import MAX_VALUE_DEPTH, prune_json_text
from evaluators.traces.otlp_depth import _encode_varint as _varint
from evaluators.traces.otlp_json import decode_traces_json
from evaluators.traces.otlp_proto import decode_logs_protobuf, decode_traces_protobuf

TRACE_ID = "0" * 31 + "1"
SPAN_IDS = ["00000000000000a1", "00000000000000a2", "00000000000000a3"]

# --- protobuf wire encoding by hand (any depth, with no protobuf library limit in the way) ------------


def _field(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint((number << 3) | 2) + _varint(len(data)) + data


def pb_value(levels: int, kind: str) -> bytes:
    """An AnyValue nesting `levels` levels through kvlistValue or arrayValue down to a string."""
    value = _field(1, "leaf")  # string_value
    for _ in range(levels - 1):
        if kind == "kvlist":
            value = _field(6, _field(1, _field(1, "k") + _field(2, value)))  # kvlist{values: [KeyValue]}
        else:
            value = _field(5, _field(1, value))  # array{values: [AnyValue]}
    return value


def pb_attr(key: str, value: bytes) -> bytes:
    return _field(1, key) + _field(2, value)  # KeyValue


def pb_text(text: str) -> bytes:
    return _field(1, text)


def pb_span(
    index: int, attrs: list[bytes], event_attrs: Sequence[bytes] = (), link_attrs: Sequence[bytes] = ()
) -> bytes:
    span = _field(1, bytes.fromhex(TRACE_ID)) + _field(2, bytes.fromhex(SPAN_IDS[index])) + _field(5, f"s{index}")
    span += b"".join(_field(9, a) for a in attrs)
    if event_attrs:
        span += _field(11, _field(2, "ev") + b"".join(_field(3, a) for a in event_attrs))
    if link_attrs:
        link = _field(1, bytes.fromhex(TRACE_ID)) + _field(2, bytes.fromhex(SPAN_IDS[0]))
        span += _field(13, link + b"".join(_field(4, a) for a in link_attrs))
    return span


def pb_request(spans: list[bytes], resource_attrs: Sequence[bytes] = ()) -> bytes:
    resource = _field(1, b"".join(_field(1, a) for a in resource_attrs))
    scope_spans = _field(2, b"".join(_field(2, s) for s in spans))
    return _field(1, resource + scope_spans)


# --- the same in OTLP-JSON, as text (json.dumps would recurse too deep) -------------------------------


def js_value(levels: int, kind: str) -> str:
    """An AnyValue nesting `levels` levels through kvlistValue or arrayValue down to a string."""
    value = '{"stringValue": "leaf"}'
    for _ in range(levels - 1):
        if kind == "kvlist":
            value = '{"kvlistValue": {"values": [{"key": "k", "value": ' + value + "}]}}"
        else:
            value = '{"arrayValue": {"values": [' + value + "]}}"
    return value


def js_attr(key: str, value: str) -> str:
    return '{"key": ' + json.dumps(key) + ', "value": ' + value + "}"


def js_text(text: str) -> str:
    return json.dumps({"stringValue": text})


def _attrs(attrs: Sequence[str]) -> str:
    return '"attributes": [' + ", ".join(attrs) + "]"


def js_span(index: int, attrs: list[str], event_attrs: Sequence[str] = (), link_attrs: Sequence[str] = ()) -> str:
    head = json.dumps({"traceId": TRACE_ID, "spanId": SPAN_IDS[index], "name": f"s{index}"})[:-1]
    parts = [head, _attrs(attrs)]
    if event_attrs:
        parts.append('"events": [{"name": "ev", ' + _attrs(event_attrs) + "}]")
    if link_attrs:
        link = json.dumps({"traceId": TRACE_ID, "spanId": SPAN_IDS[0]})[:-1]
        parts.append('"links": [' + link + ", " + _attrs(link_attrs) + "}]")
    return ", ".join(parts) + "}"


def js_request(spans: list[str], resource_attrs: Sequence[str] = ()) -> str:
    resource = '{"resource": {' + _attrs(resource_attrs) + "}, "
    return '{"resourceSpans": [' + resource + '"scopeSpans": [{"spans": [' + ", ".join(spans) + "]}]}]}"


# --- helpers --------------------------------------------------------------------------------------


def depth_of(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    return 1


def both(levels: int, kind: str) -> tuple[DecodedBatch, DecodedBatch]:
    """Three spans, the middle one with a `deep` attribute of `levels` levels between two plain ones."""
    pb_attrs = [
        pb_attr("before", pb_text("a")),
        pb_attr("deep", pb_value(levels, kind)),
        pb_attr("after", pb_text("b")),
    ]
    js_attrs = [
        js_attr("before", js_text("a")),
        js_attr("deep", js_value(levels, kind)),
        js_attr("after", js_text("b")),
    ]
    pb = pb_request([pb_span(0, []), pb_span(1, pb_attrs), pb_span(2, [])])
    js = js_request([js_span(0, []), js_span(1, js_attrs), js_span(2, [])])
    return decode_traces_protobuf(pb), decode_traces_json(js)


# --- tests ----------------------------------------------------------------------------------------


def test_one_limit_for_both_encodings() -> None:
    assert MAX_VALUE_DEPTH == 32
    assert otlp_proto.MAX_VALUE_DEPTH == otlp_json.MAX_VALUE_DEPTH == MAX_VALUE_DEPTH


@pytest.mark.parametrize("kind", ["kvlist", "array"])
@pytest.mark.parametrize("levels", [1, 2, MAX_VALUE_DEPTH])
def test_values_up_to_the_limit_are_kept_whole(levels: int, kind: str) -> None:
    for batch in both(levels, kind):
        assert [s.name for s in batch.spans] == ["s0", "s1", "s2"]
        assert depth_of(batch.spans[1].attributes["deep"]) == levels
        assert batch.dropped_attributes == 0


@pytest.mark.parametrize("kind", ["kvlist", "array"])
@pytest.mark.parametrize("levels", [MAX_VALUE_DEPTH + 1, 40, 60, 300, 3000])
def test_an_over_deep_value_drops_only_its_attribute_and_is_counted(levels: int, kind: str) -> None:
    pb_batch, js_batch = both(levels, kind)
    for batch in (pb_batch, js_batch):
        assert [s.name for s in batch.spans] == ["s0", "s1", "s2"]
        assert batch.spans[1].attributes == {"before": "a", "after": "b"}
        assert batch.dropped_attributes == 1
        assert batch.rejected == []
    assert pb_batch.spans == js_batch.spans


def test_over_deep_resource_scope_event_and_link_attributes_are_each_dropped_and_counted() -> None:
    deep_pb, deep_js = pb_value(40, "kvlist"), js_value(40, "kvlist")
    pb = pb_request(
        [
            pb_span(
                0,
                [pb_attr("deep", deep_pb), pb_attr("k", pb_text("v"))],
                event_attrs=[pb_attr("deep", deep_pb), pb_attr("e", pb_text("1"))],
                link_attrs=[pb_attr("deep", deep_pb)],
            ),
            pb_span(1, [pb_attr("k", pb_text("w"))]),
        ],
        resource_attrs=[pb_attr("service.name", pb_text("svc")), pb_attr("deep", deep_pb)],
    )
    js = js_request(
        [
            js_span(
                0,
                [js_attr("deep", deep_js), js_attr("k", js_text("v"))],
                event_attrs=[js_attr("deep", deep_js), js_attr("e", js_text("1"))],
                link_attrs=[js_attr("deep", deep_js)],
            ),
            js_span(1, [js_attr("k", js_text("w"))]),
        ],
        resource_attrs=[js_attr("service.name", js_text("svc")), js_attr("deep", deep_js)],
    )
    for batch in (decode_traces_protobuf(pb), decode_traces_json(js), decode_bytes(pb), decode_bytes(js.encode())):
        first, second = batch.spans
        assert first.attributes == {"k": "v"} and second.attributes == {"k": "w"}
        assert first.resource_attributes == {"service.name": "svc"}
        assert first.events[0].attributes == {"e": "1"} and first.links[0].attributes == {}
        assert batch.dropped_attributes == 4  # resource, span, event, link: the resource one once


def _pb_logs(levels: int) -> bytes:
    ids = _field(9, bytes.fromhex(TRACE_ID)) + _field(10, bytes.fromhex(SPAN_IDS[0]))
    deep = pb_value(levels, "kvlist")
    records = [
        ids + _field(5, deep) + _field(6, pb_attr("deep", deep)) + _field(6, pb_attr("k", pb_text("v"))),
        ids + _field(5, pb_text("hello")) + _field(12, "gen_ai.choice"),
    ]
    return _field(1, _field(2, b"".join(_field(2, r) for r in records)))  # resource_logs{scope_logs{records}}


def _js_logs(levels: int) -> str:
    ids = json.dumps({"traceId": TRACE_ID, "spanId": SPAN_IDS[0]})[:-1]
    deep = js_value(levels, "kvlist")
    records = [
        ids + ', "body": ' + deep + ", " + _attrs([js_attr("deep", deep), js_attr("k", js_text("v"))]) + "}",
        ids + ', "body": ' + js_text("hello") + ', "eventName": "gen_ai.choice"}',
    ]
    return '{"resourceLogs": [{"scopeLogs": [{"logRecords": [' + ", ".join(records) + "]}]}]}"


@pytest.mark.parametrize("levels", [40, 300])
def test_an_over_deep_log_body_or_attribute_is_dropped_and_counted(levels: int) -> None:
    for batch in (
        decode_logs_protobuf(_pb_logs(levels)),
        decode_traces_json(_js_logs(levels)),
        decode_bytes(_pb_logs(levels)),
    ):
        first, second = batch.logs
        assert first.body is None and first.attributes == {"k": "v"}
        assert second.body == "hello" and second.event_name == "gen_ai.choice"
        assert batch.dropped_attributes == 2


def test_bad_bytes_around_a_deep_value_still_raise() -> None:
    pb = pb_request([pb_span(0, [pb_attr("deep", pb_value(60, "kvlist"))])])
    for cut in (len(pb) - 1, len(pb) // 2):
        with pytest.raises(TraceDecodeError):
            decode_traces_protobuf(pb[:cut])
    with pytest.raises(TraceDecodeError):
        decode_traces_protobuf(pb + b"\x0a\xff\xff\xff\xff")
    with pytest.raises(TraceDecodeError, match="expected an OTLP export object"):
        decode_traces_json("[" * 50_000 + "]" * 50_000)


def test_json_pruning_keeps_strings_and_shallow_containers() -> None:
    text = json.dumps({"a": [[["x"]]], "s": "[[[{{{", "b": {"c": {"d": 1}}})
    assert json.loads(prune_json_text(text, max_depth=3)) == {"a": [[[]]], "s": "[[[{{{", "b": {"c": {"d": 1}}}
    assert json.loads(prune_json_text(text, max_depth=2)) == {"a": [[]], "s": "[[[{{{", "b": {"c": {}}}
    assert prune_json_text(text, max_depth=10) == text


@settings(max_examples=60, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(1, 45), st.sampled_from(["kvlist", "array"])), min_size=1, max_size=5))
def test_property_both_encodings_keep_the_shallow_attributes_and_count_the_deep(
    attrs: list[tuple[int, str]],
) -> None:
    pb_attrs = [pb_attr(f"a{i}", pb_value(levels, kind)) for i, (levels, kind) in enumerate(attrs)]
    js_attrs = [js_attr(f"a{i}", js_value(levels, kind)) for i, (levels, kind) in enumerate(attrs)]
    pb_batch = decode_traces_protobuf(pb_request([pb_span(0, [pb_attr("k", pb_text("v"))]), pb_span(1, pb_attrs)]))
    js_batch = decode_traces_json(js_request([js_span(0, [js_attr("k", js_text("v"))]), js_span(1, js_attrs)]))
    kept = {f"a{i}" for i, (levels, _) in enumerate(attrs) if levels <= MAX_VALUE_DEPTH}
    for batch in (pb_batch, js_batch):
        assert len(batch.spans) == 2 and batch.spans[0].attributes == {"k": "v"}
        assert set(batch.spans[1].attributes) == kept
        assert batch.dropped_attributes == len(attrs) - len(kept)
    assert pb_batch.spans == js_batch.spans
