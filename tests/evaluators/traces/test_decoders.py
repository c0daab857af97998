"""OTLP decoders: protobuf and OTLP-JSON agree, every AnyValue type, JSON lines, logs, bad input."""

from __future__ import annotations

import base64
import contextlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict, MessageToJson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from evaluators.traces import (
    DecodedBatch,
    SpanEvent,
    TraceDecodeError,
    decode_bytes,
    join_logs,
    load_traces,
    read_paths,
)
from evaluators.traces.otlp_json import decode_traces_json, decode_traces_object
from evaluators.traces.otlp_proto import decode_logs_protobuf, decode_traces_protobuf
from tests.conftest import CORPUS

TRACE_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c")
ROOT_ID = bytes.fromhex("eee19b7ec3c1b174")
CHILD_ID = bytes.fromhex("eee19b7ec3c1b173")
LINKED_TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
LINKED_SPAN = bytes.fromhex("b7ad6b7169203331")
ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


# --- helpers ------------------------------------------------------------------------------------


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _every_any_value() -> list[KeyValue]:
    nested = AnyValue()
    nested.kvlist_value.values.extend(
        [
            _kv("s", AnyValue(string_value="inner")),
            _kv("n", AnyValue(int_value=-7)),
            _kv("empty", AnyValue()),
        ]
    )
    inner_array = AnyValue()
    inner_array.array_value.values.extend([AnyValue(int_value=1), AnyValue(string_value="two")])
    array = AnyValue()
    array.array_value.values.extend(
        [AnyValue(string_value="a"), AnyValue(bool_value=False), AnyValue(double_value=2.5), inner_array, nested]
    )
    kvlist = AnyValue()
    kvlist.kvlist_value.values.extend(
        [_kv("list", array), _kv("obj", nested), _kv("b", AnyValue(bytes_value=b"\x00\xff"))]
    )
    return [
        _kv("str", AnyValue(string_value="héllo ✓")),
        _kv("empty_str", AnyValue(string_value="")),
        _kv("bool_true", AnyValue(bool_value=True)),
        _kv("bool_false", AnyValue(bool_value=False)),
        _kv("int", AnyValue(int_value=42)),
        _kv("int_big", AnyValue(int_value=2**62 + 1)),
        _kv("int_neg", AnyValue(int_value=-(2**40))),
        _kv("double", AnyValue(double_value=3.25)),
        _kv("double_whole", AnyValue(double_value=2.0)),
        _kv("bytes", AnyValue(bytes_value=b"\x00\x01binary\xff")),
        _kv("array", array),
        _kv("kvlist", kvlist),
        _kv("unset", AnyValue()),
    ]


EXPECTED_ATTRIBUTES: dict[str, Any] = {
    "str": "héllo ✓",
    "empty_str": "",
    "bool_true": True,
    "bool_false": False,
    "int": 42,
    "int_big": 2**62 + 1,
    "int_neg": -(2**40),
    "double": 3.25,
    "double_whole": 2.0,
    "bytes": b"\x00\x01binary\xff",
    "array": ["a", False, 2.5, [1, "two"], {"s": "inner", "n": -7, "empty": None}],
    "kvlist": {
        "list": ["a", False, 2.5, [1, "two"], {"s": "inner", "n": -7, "empty": None}],
        "obj": {"s": "inner", "n": -7, "empty": None},
        "b": b"\x00\xff",
    },
    "unset": None,
}


def build_request() -> ExportTraceServiceRequest:
    """Two resources, two scopes, spans of several kinds, statuses, events and links."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend([_kv("service.name", AnyValue(string_value="svc"))])
    ss = rs.scope_spans.add()
    ss.scope.name = "my.scope"
    ss.scope.version = "1.2.3"
    root = ss.spans.add()
    root.trace_id = TRACE_ID
    root.span_id = ROOT_ID
    root.name = "invoke_agent planner"
    root.kind = Span.SPAN_KIND_SERVER
    root.start_time_unix_nano = 1_700_000_000_123_456_789
    root.end_time_unix_nano = 1_700_000_001_123_456_789
    root.status.code = Status.STATUS_CODE_OK
    root.attributes.extend(_every_any_value())
    event = root.events.add()
    event.name = "gen_ai.content.prompt"
    event.time_unix_nano = 1_700_000_000_200_000_000
    event.attributes.extend([_kv("gen_ai.prompt", AnyValue(string_value='[{"role":"user","content":"hi"}]'))])
    link = root.links.add()
    link.trace_id = LINKED_TRACE
    link.span_id = LINKED_SPAN
    link.attributes.extend([_kv("link.kind", AnyValue(string_value="follows"))])
    child = ss.spans.add()
    child.trace_id = TRACE_ID
    child.span_id = CHILD_ID
    child.parent_span_id = ROOT_ID
    child.name = "chat gpt-4o"
    child.kind = Span.SPAN_KIND_CLIENT
    child.start_time_unix_nano = 1_700_000_000_300_000_000
    child.end_time_unix_nano = 1_700_000_000_900_000_000
    child.status.code = Status.STATUS_CODE_ERROR
    child.status.message = "boom"
    child.attributes.extend([_kv("gen_ai.operation.name", AnyValue(string_value="chat"))])
    rs2 = request.resource_spans.add()
    rs2.resource.attributes.extend([_kv("service.name", AnyValue(string_value="other"))])
    ss2 = rs2.scope_spans.add()
    other = ss2.spans.add()
    other.trace_id = LINKED_TRACE
    other.span_id = LINKED_SPAN
    other.name = "producer"
    other.kind = Span.SPAN_KIND_PRODUCER
    return request


def ids_to_hex(value: Any) -> Any:
    """protobuf json_format writes bytes ids as base64; OTLP-JSON uses hex. Convert id fields only."""
    if isinstance(value, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ID_KEYS and isinstance(v, str) else ids_to_hex(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [ids_to_hex(v) for v in value]
    return value


def otlp_json(message: Any, **options: Any) -> str:
    return json.dumps(ids_to_hex(MessageToDict(message, **options)))


def span_doc(spans: list[Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]}


def good_span(span_id: str = "00000000000000a1", **extra: Any) -> dict[str, Any]:
    return {"traceId": "0" * 31 + "1", "spanId": span_id, "name": "ok", **extra}


def attr_doc(value: Any) -> dict[str, Any]:
    return span_doc([good_span(attributes=[{"key": "k", "value": value}])])


def corpus_pairs(prefix: str) -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob(f"*/{prefix}_0001.pb") if p.with_suffix(".json").is_file())


# --- protobuf vs OTLP-JSON ----------------------------------------------------------------------


def test_protobuf_decodes_every_field() -> None:
    batch = decode_traces_protobuf(build_request().SerializeToString())
    assert batch.rejected == []
    assert [s.name for s in batch.spans] == ["invoke_agent planner", "chat gpt-4o", "producer"]
    root, child, other = batch.spans
    assert root.trace_id == TRACE_ID.hex() and root.span_id == ROOT_ID.hex() and root.parent_span_id == ""
    assert child.parent_span_id == ROOT_ID.hex()
    assert root.kind == 2 and child.kind == 3 and other.kind == 4
    assert root.start_time_unix_nano == 1_700_000_000_123_456_789
    assert root.end_time_unix_nano == 1_700_000_001_123_456_789
    assert root.status_code == 1 and child.status_code == 2 and child.status_message == "boom"
    assert root.attributes == EXPECTED_ATTRIBUTES
    assert root.resource_attributes == {"service.name": "svc"}
    assert other.resource_attributes == {"service.name": "other"}
    assert (root.scope_name, root.scope_version) == ("my.scope", "1.2.3")
    assert root.events == [
        SpanEvent(
            "gen_ai.content.prompt", 1_700_000_000_200_000_000, {"gen_ai.prompt": '[{"role":"user","content":"hi"}]'}
        )
    ]
    assert len(root.links) == 1
    assert (root.links[0].trace_id, root.links[0].span_id) == (LINKED_TRACE.hex(), LINKED_SPAN.hex())
    assert root.links[0].attributes == {"link.kind": "follows"}


@pytest.mark.parametrize(
    "options",
    [
        {},  # lowerCamelCase, enums as names, int64 as strings
        {"preserving_proto_field_name": True},  # snake_case keys
        {"use_integers_for_enums": True},  # enums as ints
        {"preserving_proto_field_name": True, "use_integers_for_enums": True},
    ],
    ids=["camel-names", "snake-names", "camel-ints", "snake-ints"],
)
def test_json_and_protobuf_of_same_request_are_identical(options: dict[str, Any]) -> None:
    request = build_request()
    from_pb = decode_traces_protobuf(request.SerializeToString())
    text = otlp_json(request, **options)
    from_json = decode_traces_json(text.encode())
    assert from_json.spans == from_pb.spans
    assert from_json.rejected == from_pb.rejected == []
    # enums really are names (or ints) in what we fed the JSON decoder
    if options.get("use_integers_for_enums"):
        assert '"SPAN_KIND_CLIENT"' not in text
    else:
        assert '"SPAN_KIND_CLIENT"' in text and '"STATUS_CODE_ERROR"' in text
    if options.get("preserving_proto_field_name"):
        assert '"resource_spans"' in text and '"string_value"' in text


def test_message_to_json_output_with_base64_ids_is_tolerated() -> None:
    request = build_request()
    from_json = decode_traces_json(MessageToJson(request))  # ids left as base64
    assert from_json.spans == decode_traces_protobuf(request.SerializeToString()).spans


def test_decode_bytes_tells_protobuf_from_json() -> None:
    request = build_request()
    pb = decode_bytes(request.SerializeToString())
    js = decode_bytes(otlp_json(request).encode())
    assert pb.spans == js.spans and len(pb.spans) == 3
    pretty = json.dumps(json.loads(otlp_json(request)), indent=2)
    assert decode_bytes(("\n  " + pretty).encode()).spans == pb.spans
    assert decode_bytes(b"") == DecodedBatch()
    assert decode_bytes(b"  \n ") == DecodedBatch()


@pytest.mark.skipif(not corpus_pairs("traces"), reason="recorded corpus missing")
@pytest.mark.parametrize("pb_path", corpus_pairs("traces"), ids=lambda p: p.parent.name)
def test_corpus_traces_protobuf_equals_json(pb_path: Path) -> None:
    from_pb = decode_bytes(pb_path.read_bytes(), str(pb_path))
    from_json = decode_bytes(pb_path.with_suffix(".json").read_bytes())
    assert from_pb.spans, "corpus file decoded to nothing"
    assert from_json.spans == from_pb.spans
    assert from_pb.rejected == from_json.rejected == []
    assert all(len(s.trace_id) == 32 and len(s.span_id) == 16 for s in from_pb.spans)


@pytest.mark.skipif(not corpus_pairs("logs"), reason="recorded corpus missing")
@pytest.mark.parametrize("pb_path", corpus_pairs("logs"), ids=lambda p: p.parent.name)
def test_corpus_logs_protobuf_equals_json(pb_path: Path) -> None:
    from_pb = decode_bytes(pb_path.read_bytes())
    from_json = decode_bytes(pb_path.with_suffix(".json").read_bytes())
    assert from_pb.logs and not from_pb.spans
    assert from_json.logs == from_pb.logs
    assert all(len(r.trace_id) == 32 and len(r.span_id) == 16 for r in from_pb.logs)


# --- every AnyValue shape in JSON ---------------------------------------------------------------


def _phoenix_any_value(**member: Any) -> dict[str, Any]:
    fields = ("array_value", "bool_value", "bytes_value", "double_value", "int_value", "kvlist_value", "string_value")
    return {name: member.get(name) for name in fields}


def _decoded_value(value: Any) -> Any:
    batch = decode_traces_object(attr_doc(value))
    return batch.spans[0].attributes["k"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"stringValue": "text"}, "text"),
        ({"string_value": "snake"}, "snake"),
        ({"boolValue": True}, True),
        ({"boolValue": False}, False),
        ({"intValue": "123"}, 123),
        ({"intValue": "-9007199254740993"}, -9007199254740993),
        ({"intValue": 77}, 77),
        ({"intValue": 5.0}, 5),
        ({"int_value": "8"}, 8),
        ({"doubleValue": 1.5}, 1.5),
        ({"doubleValue": 2}, 2.0),
        ({"doubleValue": "2.25"}, 2.25),
        ({"bytesValue": base64.b64encode(b"\x00\x10\xff").decode()}, b"\x00\x10\xff"),
        ({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}, {}]}}, ["a", 1, None]),
        ({"arrayValue": {}}, []),
        (
            {
                "kvlistValue": {
                    "values": [
                        {"key": "x", "value": {"kvlistValue": {"values": [{"key": "y", "value": {"boolValue": True}}]}}}
                    ]
                }
            },
            {"x": {"y": True}},
        ),
        (
            {
                "kvlist_value": {
                    "values": [{"key": "arr", "value": {"array_value": {"values": [{"double_value": 0.5}]}}}]
                }
            },
            {"arr": [0.5]},
        ),
        ({}, None),
        (None, None),
        # null siblings (Arize Phoenix's otlpv1 spans write every member): a non-null member wins
        (_phoenix_any_value(string_value="x"), "x"),
        (_phoenix_any_value(int_value=7), 7),
        (_phoenix_any_value(bool_value=False), False),
        (_phoenix_any_value(array_value={"values": [_phoenix_any_value(double_value=0.5)]}), [0.5]),
        ({"stringValue": None, "intValue": "3"}, 3),
        (_phoenix_any_value(), None),
    ],
)
def test_json_any_value_types(value: Any, expected: Any) -> None:
    decoded = _decoded_value(value)
    assert decoded == expected
    assert type(decoded) is type(expected)


def test_json_enum_names_and_ints() -> None:
    spans = [
        good_span("00000000000000a1", kind="SPAN_KIND_CLIENT", status={"code": "STATUS_CODE_ERROR", "message": "m"}),
        good_span("00000000000000a2", kind=3, status={"code": 2}),
        good_span("00000000000000a3", kind="SPAN_KIND_INTERNAL", status={"code": "STATUS_CODE_OK"}),
        good_span("00000000000000a4"),
    ]
    batch = decode_traces_object(span_doc(spans))
    assert [(s.kind, s.status_code) for s in batch.spans] == [(3, 2), (3, 2), (1, 1), (0, 0)]
    assert batch.spans[0].status_message == "m"


def test_json_snake_case_everywhere() -> None:
    doc = {
        "resource_spans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"string_value": "svc"}}]},
                "scope_spans": [
                    {
                        "scope": {"name": "sc", "version": "9"},
                        "spans": [
                            {
                                "trace_id": "0" * 31 + "1",
                                "span_id": "00000000000000b1",
                                "parent_span_id": "00000000000000b0",
                                "name": "n",
                                "start_time_unix_nano": "10",
                                "end_time_unix_nano": 20,
                                "events": [{"name": "e", "time_unix_nano": "15"}],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    span = decode_traces_object(doc).spans[0]
    assert (span.span_id, span.parent_span_id, span.start_time_unix_nano, span.end_time_unix_nano) == (
        "00000000000000b1",
        "00000000000000b0",
        10,
        20,
    )
    assert span.events[0].time_unix_nano == 15
    assert span.resource_attributes == {"service.name": "svc"} and span.scope_name == "sc"


def test_hex_ids_are_lowercased() -> None:
    span = decode_traces_object(span_doc([good_span("00000000000000AB", traceId="A" * 32)])).spans[0]
    assert span.span_id == "00000000000000ab" and span.trace_id == "a" * 32


# --- collector file exporter: JSON lines, directories ------------------------------------------


def _line(span_id: str, trace_id: str = "0" * 31 + "1") -> str:
    return json.dumps(span_doc([good_span(span_id, traceId=trace_id)]))


def test_json_lines_one_traces_data_per_line() -> None:
    text = _line("00000000000000c1") + "\n\n" + _line("00000000000000c2", "f" * 32) + "\n"
    batch = decode_traces_json(text.encode())
    assert [s.span_id for s in batch.spans] == ["00000000000000c1", "00000000000000c2"]
    assert [s.trace_id for s in batch.spans] == ["0" * 31 + "1", "f" * 32]


def test_json_lines_error_names_the_line() -> None:
    text = _line("00000000000000c1") + "\n" + '{"resourceSpans": [{"scopeSpans": {}}]}' + "\n"
    with pytest.raises(TraceDecodeError) as info:
        decode_traces_json(text.encode(), "export.jsonl")
    assert info.value.where.startswith("export.jsonl:2")
    assert "scopeSpans" in info.value.where


def test_read_paths_and_load_traces_on_a_directory(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(_line("00000000000000d1") + "\n" + _line("00000000000000d2") + "\n")
    sub = tmp_path / "nested"
    sub.mkdir()
    (sub / "b.json").write_text(_line("00000000000000d3", "e" * 32))
    (sub / "expected.json").write_text('{"not": "otlp"}')  # corpus sidecar, skipped
    (sub / "notes.txt").write_text("not a trace file")
    batch = read_paths([tmp_path])
    assert sorted(s.span_id for s in batch.spans) == ["00000000000000d1", "00000000000000d2", "00000000000000d3"]
    traces = load_traces(tmp_path)
    assert sorted(t.trace_id for t in traces) == sorted(["0" * 31 + "1", "e" * 32])
    assert sum(t.span_count for t in traces) == 3
    assert load_traces([tmp_path / "a.jsonl"])[0].span_count == 2


def test_read_paths_names_the_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": "nope"}')
    with pytest.raises(TraceDecodeError) as info:
        read_paths([tmp_path])
    assert str(bad) in info.value.where
    with pytest.raises(TraceDecodeError) as info:
        read_paths([tmp_path / "missing.pb"])
    assert "missing.pb" in info.value.where


def test_protobuf_and_json_of_same_stem_are_read_once(tmp_path: Path) -> None:
    request = build_request()
    (tmp_path / "traces_0001.pb").write_bytes(request.SerializeToString())
    (tmp_path / "traces_0001.json").write_text(otlp_json(request))
    assert len(read_paths([tmp_path]).spans) == 3


def test_load_traces_from_bytes() -> None:
    traces = load_traces(build_request().SerializeToString())
    assert sorted(t.span_count for t in traces) == [1, 2]


# --- logs exports and the join -----------------------------------------------------------------


def _logs_request() -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    sl = request.resource_logs.add().scope_logs.add()
    sl.scope.name = "logs.scope"
    rec = sl.log_records.add()
    rec.trace_id = TRACE_ID
    rec.span_id = CHILD_ID
    rec.time_unix_nano = 5
    rec.event_name = "gen_ai.user.message"
    rec.body.kvlist_value.values.extend([_kv("content", AnyValue(string_value="hello"))])
    rec2 = sl.log_records.add()
    rec2.trace_id = TRACE_ID
    rec2.span_id = CHILD_ID
    rec2.time_unix_nano = 4
    rec2.attributes.extend([_kv("event.name", AnyValue(string_value="gen_ai.system.message"))])
    rec2.body.kvlist_value.values.extend([_kv("content", AnyValue(string_value="be nice"))])
    orphan = sl.log_records.add()  # no ids: not joinable, dropped
    orphan.event_name = "gen_ai.user.message"
    return request


def test_logs_protobuf_and_json_decode_to_log_records() -> None:
    request = _logs_request()
    from_pb = decode_bytes(request.SerializeToString())
    from_json = decode_bytes(otlp_json(request).encode())
    assert from_pb.logs == from_json.logs
    assert decode_logs_protobuf(request.SerializeToString()).logs == from_pb.logs
    assert not from_pb.spans
    assert [r.event_name for r in from_pb.logs] == ["gen_ai.user.message", "gen_ai.system.message"]
    assert from_pb.logs[0].body == {"content": "hello"}
    assert from_pb.logs[0].span_id == CHILD_ID.hex() and from_pb.logs[0].scope_name == "logs.scope"


def test_logs_join_spans_in_time_order_and_feed_messages() -> None:
    spans = decode_traces_protobuf(build_request().SerializeToString()).spans
    logs = decode_bytes(_logs_request().SerializeToString()).logs
    assert join_logs(spans, logs) == 2
    child = next(s for s in spans if s.span_id == CHILD_ID.hex())
    assert [e.name for e in child.logs] == ["gen_ai.system.message", "gen_ai.user.message"]
    assert all(e.from_log for e in child.logs)
    batch = decode_traces_protobuf(build_request().SerializeToString())
    batch.extend(decode_bytes(_logs_request().SerializeToString()))
    from evaluators.traces import traces_from_batch

    trace = next(t for t in traces_from_batch(batch) if t.trace_id == TRACE_ID.hex())
    call = trace.get_llm_calls()[0]
    assert [(m.role, m.content) for m in call.messages] == [("system", "be nice"), ("user", "hello")]


@pytest.mark.skipif(not (CORPUS / "otel_genai__tool_agent_events").is_dir(), reason="recorded corpus missing")
def test_corpus_logs_export_joins_to_spans() -> None:
    folder = CORPUS / "otel_genai__tool_agent_events"
    expected = json.loads((folder / "expected.json").read_text())["traces"][0]
    logs = decode_bytes((folder / "logs_0001.pb").read_bytes())
    assert len(logs.logs) == 1 and logs.logs[0].event_name == "gen_ai.client.inference.operation.details"
    # traces alone carry no content; joined with the logs they do
    alone = load_traces(folder / "traces_0001.pb")[0]
    assert alone.input is None
    trace = load_traces([folder / "traces_0001.pb", folder / "logs_0001.pb"])[0]
    assert trace.trace_id == expected["trace_id"]
    llm = trace.get_llm_calls()[0]
    assert [e.name for e in llm.record.logs] == ["gen_ai.client.inference.operation.details"]
    assert llm.record.logs[0].from_log
    assert expected["input_contains"] in (trace.input or "")
    assert expected["output_contains"] in (trace.output or "")
    assert load_traces(folder)[0].input == trace.input  # directory: pb + logs, json twins skipped


# --- malformed input ----------------------------------------------------------------------------

MALFORMED_JSON: list[tuple[str, Any, str]] = [
    ("spans-object", span_doc({}), "spans"),  # type: ignore[arg-type]
    ("intValue-abc", attr_doc({"intValue": "abc"}), "attributes[0].value"),
    ("intValue-bool", attr_doc({"intValue": True}), "attributes[0].value"),
    ("boolValue-string", attr_doc({"boolValue": "yes"}), "attributes[0].value"),
    ("doubleValue-text", attr_doc({"doubleValue": "x"}), "attributes[0].value"),
    ("doubleValue-huge", attr_doc({"doubleValue": 10**400}), "attributes[0].value"),
    ("bytesValue-int", attr_doc({"bytesValue": 5}), "attributes[0].value"),
    ("bytesValue-padding", attr_doc({"bytesValue": "abc"}), "attributes[0].value"),
    ("unknown-anyvalue", attr_doc({"fooValue": 1}), "attributes[0].value"),
    ("unknown-anyvalue-null", attr_doc({"stringValue": None, "fooValue": None}), "attributes[0].value"),
    ("string-after-null-int", attr_doc({"intValue": None, "stringValue": 5}), "attributes[0].value"),
    ("value-list", attr_doc([1]), "attributes[0].value"),
    ("array-values-object", attr_doc({"arrayValue": {"values": {}}}), "attributes[0].value"),
    ("kvlist-list", attr_doc({"kvlistValue": []}), "attributes[0].value"),
    ("attributes-object", span_doc([good_span(attributes={})]), "attributes"),
    ("attribute-key-int", span_doc([good_span(attributes=[{"key": 1}])]), "attributes[0].key"),
    ("name-int", span_doc([good_span(name=5)]), "spans[0].name"),
    ("kind-unknown-name", span_doc([good_span(kind="SPAN_KIND_FOO")]), "spans[0].kind"),
    ("kind-float", span_doc([good_span(kind=1.5)]), "spans[0].kind"),
    ("status-string", span_doc([good_span(status="ok")]), "spans[0].status"),
    ("start-text", span_doc([good_span(startTimeUnixNano="soon")]), "spans[0].start"),
    ("events-object", span_doc([good_span(events={})]), "spans[0].events"),
    ("event-name-list", span_doc([good_span(events=[{"name": []}])]), "events[0].name"),
    ("span-id-int", span_doc([good_span(spanId=5)]), "spans[0].spanId"),
    ("resourceSpans-object", {"resourceSpans": {}}, "resourceSpans"),
    ("scopeSpans-string", {"resourceSpans": [{"scopeSpans": "x"}]}, "scopeSpans"),
    ("resource-list", {"resourceSpans": [{"resource": []}]}, "resource"),
    ("not-otlp", {"hello": "world"}, "json"),
    ("top-level-list", [], "json"),
    ("top-level-null", None, "json"),
    ("top-level-number", 3, "json"),
    ("resourceLogs-object", {"resourceLogs": {}}, "resourceLogs"),
    ("logRecord-int", {"resourceLogs": [{"scopeLogs": [{"logRecords": [5]}]}]}, "logRecords[0]"),
    (
        "log-body-string",
        {
            "resourceLogs": [
                {"scopeLogs": [{"logRecords": [{"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "body": "x"}]}]}
            ]
        },
        "body",
    ),
]


@pytest.mark.parametrize(("label", "document", "where"), MALFORMED_JSON, ids=[m[0] for m in MALFORMED_JSON])
def test_json_with_wrong_types_raises_trace_decode_error(label: str, document: Any, where: str) -> None:
    with pytest.raises(TraceDecodeError) as info:
        decode_traces_object(document)
    assert where in info.value.where, info.value
    # the same through the bytes entry point
    with pytest.raises(TraceDecodeError) as info:
        decode_traces_json(json.dumps(document).encode(), "req")
    assert info.value.where.startswith("req")


MALFORMED_BYTES: list[tuple[str, bytes]] = [
    ("invalid-json", b'{"resourceSpans": [}'),
    ("truncated-json", b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab'),
    ("json-lines-bad-second", b'{"resourceSpans": []}\n{nope}\n'),
    ("invalid-utf8-json", b'{"resourceSpans": [], "x": "\xff\xfe"}'),
    ("json-string", b'"just a string"'),
    ("json-null", b"null"),
    ("deep-json", b"[" * 50_000 + b"]" * 50_000),
    ("protobuf-corrupt", b"\x0a\xff\xff\xff\xff"),
    ("binary-garbage", bytes(range(256))),
]


@pytest.mark.parametrize(("label", "data"), MALFORMED_BYTES, ids=[m[0] for m in MALFORMED_BYTES])
def test_malformed_bytes_raise_trace_decode_error(label: str, data: bytes) -> None:
    with pytest.raises(TraceDecodeError) as info:
        decode_bytes(data, "upload.bin")
    assert info.value.where.startswith("upload.bin")
    assert info.value.reason


def test_truncated_protobuf_raises() -> None:
    data = build_request().SerializeToString()
    for cut in (len(data) - 1, len(data) - 7, len(data) // 2, 3):
        with pytest.raises(TraceDecodeError):
            decode_traces_protobuf(data[:cut])
        with pytest.raises(TraceDecodeError):
            decode_bytes(data[:cut])


def test_every_truncation_of_a_corpus_file_is_decode_error_or_batch() -> None:
    pairs = corpus_pairs("traces")
    data = pairs[0].read_bytes() if pairs else build_request().SerializeToString()
    for cut in range(0, len(data), max(1, len(data) // 400)):
        try:
            batch = decode_bytes(data[:cut])
        except TraceDecodeError:
            continue
        assert isinstance(batch, DecodedBatch)


def test_protobuf_string_with_invalid_utf8_raises() -> None:
    request = build_request()
    request.resource_spans[0].scope_spans[0].spans[0].name = "MARKER"
    data = request.SerializeToString().replace(b"MARKER", b"\xff\xfe\xfd\xfc\xfb\xfa")
    with pytest.raises(TraceDecodeError) as info:
        decode_bytes(data, "pb")
    assert info.value.where == "pb"


def test_random_garbage_only_raises_trace_decode_error() -> None:
    rng = random.Random(20240611)
    for _ in range(2000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        with contextlib.suppress(TraceDecodeError):
            decode_bytes(data)


def test_non_bytes_input_is_rejected() -> None:
    with pytest.raises(TraceDecodeError):
        decode_bytes("text")  # type: ignore[arg-type]


# --- spans with bad ids are rejected, the rest kept ---------------------------------------------


def test_json_spans_with_bad_ids_are_rejected_others_kept() -> None:
    spans = [
        good_span("00000000000000e1"),
        {"traceId": "0" * 31 + "1", "name": "no span id"},
        {"spanId": "00000000000000e3", "name": "no trace id"},
        good_span("abcd"),  # 2 bytes
        good_span("00000000000000e5", traceId="ab" * 15),  # 15 bytes
        good_span("0" * 16),  # all-zero span id
        good_span("00000000000000e7", traceId="0" * 32),  # all-zero trace id
        good_span("zz" * 8),  # not hex, not base64 of 8 bytes
        good_span("00000000000000e9", parentSpanId="0102"),  # bad parent size
        good_span("00000000000000ea", links=[{"traceId": "x", "spanId": "y"}]),  # bad link id
        good_span("00000000000000eb", parentSpanId="00000000000000e1"),
    ]
    batch = decode_traces_object(span_doc(spans), "req")
    assert [s.span_id for s in batch.spans] == ["00000000000000e1", "00000000000000eb"]
    assert len(batch.rejected) == 9
    assert all(r.reason == "invalid_id" for r in batch.rejected)
    wheres = [r.where for r in batch.rejected]
    for index in (1, 2, 3, 4, 5, 6, 7, 8, 9):
        assert any(f"spans[{index}]" in w for w in wheres), (index, wheres)
    assert all(w.startswith("req") for w in wheres)


def test_protobuf_spans_with_bad_ids_are_rejected_others_kept() -> None:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    cases = [
        (TRACE_ID, ROOT_ID, b""),  # good
        (TRACE_ID, b"\x01" * 7, b""),  # short span id
        (b"", ROOT_ID, b""),  # missing trace id
        (TRACE_ID, b"", b""),  # missing span id
        (b"\x00" * 16, ROOT_ID, b""),  # zero trace id
        (TRACE_ID, b"\x00" * 8, b""),  # zero span id
        (TRACE_ID, CHILD_ID, b"\x01\x02"),  # bad parent
        (TRACE_ID, CHILD_ID, ROOT_ID),  # good child
    ]
    for trace_id, span_id, parent in cases:
        span = ss.spans.add()
        span.trace_id, span.span_id, span.parent_span_id, span.name = trace_id, span_id, parent, "s"
    batch = decode_traces_protobuf(request.SerializeToString(), "grpc")
    assert [(s.span_id, s.parent_span_id) for s in batch.spans] == [
        (ROOT_ID.hex(), ""),
        (CHILD_ID.hex(), ROOT_ID.hex()),
    ]
    assert len(batch.rejected) == 6
    for index in range(1, 7):
        assert any(f"spans[{index}]" in r.where for r in batch.rejected)
    # and OTLP-JSON of the same request rejects the same spans
    from_json = decode_traces_json(otlp_json(request))
    assert from_json.spans == batch.spans
    assert len(from_json.rejected) == 6


def test_unnamed_spans_are_not_mistaken_for_a_logs_export() -> None:
    # an unnamed span whose last attribute is 16 bytes long also parses as a log record with a trace id
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = TRACE_ID, ROOT_ID, ""
    span.attributes.extend([_kv("a", AnyValue(string_value="abcdefghi"))])
    assert len(span.attributes[0].SerializeToString()) == 16
    batch = decode_bytes(request.SerializeToString())
    assert [s.span_id for s in batch.spans] == [ROOT_ID.hex()] and batch.logs == []
    assert batch.spans[0].attributes == {"a": "abcdefghi"}


def test_json_with_a_utf8_byte_order_mark_is_read_as_json():
    from evaluators.traces import decode_bytes

    data = (CORPUS / "oi_openai__tool_agent" / "traces_0001.json").read_bytes()
    batch = decode_bytes(b"\xef\xbb\xbf" + data)
    assert len(batch.spans) == 6
