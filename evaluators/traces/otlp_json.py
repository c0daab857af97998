"""Decode OTLP-JSON (the official JSON mapping) into span and log records.

Accepts lowerCamelCase and original snake_case keys, ids as hex (base64 tolerated), int64 as
strings or numbers, enums as ints or names. Anything of the wrong shape raises TraceDecodeError
with a JSON path; spans with bad ids are left out and listed in `DecodedBatch.rejected`. An attribute
value nested past MAX_VALUE_DEPTH levels drops that attribute (counted in
`DecodedBatch.dropped_attributes`), as in protobuf: see `otlp_depth`.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from .errors import InvalidIdError, TraceDecodeError
from .otlp_depth import MAX_VALUE_DEPTH, TooDeep, prune_json_text
from .records import Attributes, DecodedBatch, LogRecord, RejectedSpan, SpanEvent, SpanLink, SpanRecord

_SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_NOT_ONE_DOCUMENT = object()
_ANY_VALUE_FIELDS = frozenset(
    f"{kind}{suffix}"
    for kind in ("string", "bool", "int", "double", "bytes", "array", "kvlist")
    for suffix in ("Value", "_value")
)


def _get(obj: dict, camel: str, snake: str | None = None, default: Any = None) -> Any:
    if camel in obj:
        return obj[camel]
    if snake is not None and snake in obj:
        return obj[snake]
    return default


def json_object(value: Any, where: str) -> dict:
    """`value` as a JSON object ({} for null); TraceDecodeError for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceDecodeError(f"expected an object, got {type(value).__name__}", where)
    return value


def _list(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceDecodeError(f"expected an array, got {type(value).__name__}", where)
    return value


def _int(value: Any, where: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise TraceDecodeError("expected an integer, got a boolean", where)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value, 10)
        except ValueError:
            pass
    raise TraceDecodeError(f"expected an integer, got {value!r:.60}", where)


def _enum(value: Any, names: dict[str, int], where: str) -> int:
    if isinstance(value, str) and value in names:
        return names[value]
    return _int(value, where)


def json_string(value: Any, where: str) -> str:
    """`value` as a string ("" for null); TraceDecodeError for anything else."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TraceDecodeError(f"expected a string, got {type(value).__name__}", where)
    return value


def decode_id(value: Any, size: int, where: str) -> str:
    """A hex id of `size` bytes; base64 accepted for producers that use the protobuf default."""
    text = json_string(value, where)
    if not text:
        return ""
    if len(text) == size * 2:
        try:
            return bytes.fromhex(text).hex()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex()
    raise InvalidIdError(f"expected a {size}-byte id as {size * 2} hex digits, got {text!r:.60}", where)


def _any_value(value: Any, where: str, level: int = 1) -> Any:
    """The Python value of an AnyValue at nesting `level`; TooDeep past MAX_VALUE_DEPTH levels."""
    if level > MAX_VALUE_DEPTH:
        raise TooDeep
    if value is None:
        return None
    value = json_object(value, where)
    # Some producers (Arize Phoenix's otlpv1 spans) write every member with null siblings:
    # {"array_value": null, "string_value": "x", ...}. A null member is unset; a non-null one wins.
    members = [(k, v) for k, v in value.items() if v is not None or k not in _ANY_VALUE_FIELDS]
    if not members:
        return None
    key, inner = members[0]
    if key in ("stringValue", "string_value"):
        return json_string(inner, where)
    if key in ("boolValue", "bool_value"):
        if not isinstance(inner, bool):
            raise TraceDecodeError("boolValue must be true or false", where)
        return inner
    if key in ("intValue", "int_value"):
        return _int(inner, where)
    if key in ("doubleValue", "double_value"):
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            try:
                return float(inner)
            except OverflowError:
                raise TraceDecodeError("doubleValue out of range", where) from None
        if isinstance(inner, str):
            try:
                return float(inner)
            except ValueError:
                pass
        raise TraceDecodeError(f"expected a number, got {inner!r:.60}", where)
    if key in ("bytesValue", "bytes_value"):
        try:
            return base64.b64decode(json_string(inner, where))
        except (binascii.Error, ValueError):
            raise TraceDecodeError("bytesValue is not base64", where) from None
    if key in ("arrayValue", "array_value"):
        values = _list(json_object(inner, where).get("values"), where)
        return [_any_value(v, f"{where}[{i}]", level + 1) for i, v in enumerate(values)]
    if key in ("kvlistValue", "kvlist_value"):
        return _key_values(json_object(inner, where).get("values"), where, level + 1)
    raise TraceDecodeError(f"unknown AnyValue field {key!r:.40}", where)


def _key_values(key_values: Any, where: str, level: int) -> Attributes:
    """A KeyValue list whose values sit at nesting `level` (TooDeep propagates to the attribute)."""
    result: Attributes = {}
    for i, kv in enumerate(_list(key_values, where)):
        kv = json_object(kv, f"{where}[{i}]")
        key = json_string(kv.get("key"), f"{where}[{i}].key")
        result[key] = _any_value(kv.get("value"), f"{where}[{i}].value", level)
    return result


def attributes_from_json(key_values: Any, where: str, batch: DecodedBatch | None = None) -> Attributes:
    """A JSON KeyValue list to a dict; a repeated key keeps its last value.

    An attribute whose value nests too deep is left out and counted in `batch.dropped_attributes`.
    """
    result: Attributes = {}
    for i, kv in enumerate(_list(key_values, where)):
        if type(kv) is dict:  # the common shape first, {"key": k, "value": {"stringValue": s}}, with no `where`
            key, value = kv.get("key"), kv.get("value")
            if type(key) is str and type(value) is dict and len(value) == 1:
                text = value.get("stringValue")
                if type(text) is str:
                    result[key] = text
                    continue
        kv = json_object(kv, f"{where}[{i}]")
        key = json_string(kv.get("key"), f"{where}[{i}].key")
        try:
            result[key] = _any_value(kv.get("value"), f"{where}[{i}].value")
        except TooDeep:
            if batch is not None:
                batch.dropped_attributes += 1
    return result


def _span(raw: Any, where: str, resource: Attributes, scope: tuple[str, str], batch: DecodedBatch) -> SpanRecord:
    raw = json_object(raw, where)
    status = json_object(raw.get("status"), f"{where}.status")
    events = []
    for i, e in enumerate(_list(raw.get("events"), f"{where}.events")):
        e = json_object(e, f"{where}.events[{i}]")
        events.append(
            SpanEvent(
                json_string(e.get("name"), f"{where}.events[{i}].name"),
                _int(_get(e, "timeUnixNano", "time_unix_nano"), f"{where}.events[{i}].timeUnixNano"),
                attributes_from_json(e.get("attributes"), f"{where}.events[{i}].attributes", batch),
            )
        )
    links = []
    for i, link in enumerate(_list(raw.get("links"), f"{where}.links")):
        link = json_object(link, f"{where}.links[{i}]")
        links.append(
            SpanLink(
                decode_id(_get(link, "traceId", "trace_id"), 16, f"{where}.links[{i}].traceId"),
                decode_id(_get(link, "spanId", "span_id"), 8, f"{where}.links[{i}].spanId"),
                attributes_from_json(link.get("attributes"), f"{where}.links[{i}].attributes", batch),
            )
        )
    return SpanRecord(
        trace_id=decode_id(_get(raw, "traceId", "trace_id"), 16, f"{where}.traceId"),
        span_id=decode_id(_get(raw, "spanId", "span_id"), 8, f"{where}.spanId"),
        parent_span_id=decode_id(_get(raw, "parentSpanId", "parent_span_id"), 8, f"{where}.parentSpanId"),
        name=json_string(raw.get("name"), f"{where}.name"),
        kind=_enum(raw.get("kind"), _SPAN_KINDS, f"{where}.kind"),
        start_time_unix_nano=_int(_get(raw, "startTimeUnixNano", "start_time_unix_nano"), f"{where}.start"),
        end_time_unix_nano=_int(_get(raw, "endTimeUnixNano", "end_time_unix_nano"), f"{where}.end"),
        status_code=_enum(status.get("code"), _STATUS_CODES, f"{where}.status.code"),
        status_message=json_string(status.get("message"), f"{where}.status.message"),
        attributes=attributes_from_json(raw.get("attributes"), f"{where}.attributes", batch),
        events=events,
        links=links,
        resource_attributes=resource,
        scope_name=scope[0],
        scope_version=scope[1],
    )


def _scope(raw: Any, where: str) -> tuple[str, str]:
    scope = json_object(raw, where)
    return json_string(scope.get("name"), f"{where}.name"), json_string(scope.get("version"), f"{where}.version")


def _resource(raw: Any, where: str, batch: DecodedBatch) -> Attributes:
    return attributes_from_json(json_object(raw, where).get("attributes"), f"{where}.attributes", batch)


def decode_traces_object(document: Any, where: str = "json") -> DecodedBatch:
    """A parsed ExportTraceServiceRequest / TracesData / ExportLogsServiceRequest JSON object."""
    if not isinstance(document, dict):
        raise TraceDecodeError(f"expected an OTLP export object, got {type(document).__name__}", where)
    if "resourceLogs" in document or "resource_logs" in document:
        return _decode_logs_object(document, where)
    batch = DecodedBatch()
    resource_spans = _get(document, "resourceSpans", "resource_spans")
    if resource_spans is None and document:
        raise TraceDecodeError("no resourceSpans or resourceLogs: not an OTLP export", where)
    for r, rs in enumerate(_list(resource_spans, f"{where}.resourceSpans")):
        rw = f"{where}.resourceSpans[{r}]"
        rs = json_object(rs, rw)
        resource = _resource(rs.get("resource"), f"{rw}.resource", batch)
        for s, ss in enumerate(_list(_get(rs, "scopeSpans", "scope_spans"), f"{rw}.scopeSpans")):
            sw = f"{rw}.scopeSpans[{s}]"
            ss = json_object(ss, sw)
            scope = _scope(ss.get("scope"), f"{sw}.scope")
            for i, raw in enumerate(_list(ss.get("spans"), f"{sw}.spans")):
                span_where = f"{sw}.spans[{i}]"
                try:
                    span = _span(raw, span_where, resource, scope, batch)
                except InvalidIdError as exc:
                    batch.rejected.append(RejectedSpan("invalid_id", str(exc)))
                    continue
                if not span.trace_id or not span.span_id or not int(span.trace_id, 16) or not int(span.span_id, 16):
                    batch.rejected.append(RejectedSpan("invalid_id", f"{span_where}: missing trace or span id"))
                    continue
                batch.spans.append(span)
    return batch


def _decode_logs_object(document: dict, where: str) -> DecodedBatch:
    batch = DecodedBatch()
    for r, rl in enumerate(_list(_get(document, "resourceLogs", "resource_logs"), f"{where}.resourceLogs")):
        rw = f"{where}.resourceLogs[{r}]"
        rl = json_object(rl, rw)
        resource = _resource(rl.get("resource"), f"{rw}.resource", batch)
        for s, sl in enumerate(_list(_get(rl, "scopeLogs", "scope_logs"), f"{rw}.scopeLogs")):
            sw = f"{rw}.scopeLogs[{s}]"
            sl = json_object(sl, sw)
            scope_name, _ = _scope(sl.get("scope"), f"{sw}.scope")
            for i, rec in enumerate(_list(_get(sl, "logRecords", "log_records"), f"{sw}.logRecords")):
                lw = f"{sw}.logRecords[{i}]"
                rec = json_object(rec, lw)
                try:
                    trace_id = decode_id(_get(rec, "traceId", "trace_id"), 16, f"{lw}.traceId")
                    span_id = decode_id(_get(rec, "spanId", "span_id"), 8, f"{lw}.spanId")
                except InvalidIdError:
                    continue
                if not trace_id or not span_id:
                    continue
                attrs = attributes_from_json(rec.get("attributes"), f"{lw}.attributes", batch)
                event_name = json_string(_get(rec, "eventName", "event_name"), f"{lw}.eventName")
                time_ns = _int(_get(rec, "timeUnixNano", "time_unix_nano"), f"{lw}.timeUnixNano")
                observed = _int(_get(rec, "observedTimeUnixNano", "observed_time_unix_nano"), lw)
                batch.logs.append(
                    LogRecord(
                        trace_id=trace_id,
                        span_id=span_id,
                        event_name=event_name or str(attrs.get("event.name") or ""),
                        time_unix_nano=time_ns or observed,
                        body=_body(rec.get("body"), f"{lw}.body", batch),
                        attributes=attrs,
                        resource_attributes=resource,
                        scope_name=scope_name,
                    )
                )
    return batch


def _body(value: Any, where: str, batch: DecodedBatch) -> Any:
    """A log record's body; None (counted as a dropped attribute) when it nests too deep."""
    try:
        return _any_value(value, where)
    except TooDeep:
        batch.dropped_attributes += 1
        return None


def _loads(text: str | bytes, where: str) -> Any:
    """json.loads; a document too deep for the parser is parsed again with its deepest containers cut
    (they lie inside attribute values the decoder drops anyway)."""
    try:
        return json.loads(text)
    except RecursionError:
        pass
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(prune_json_text(text))
    except RecursionError:
        raise TraceDecodeError("JSON nested too deeply", where) from None


def parse_json_text(data: bytes | str, where: str) -> Any:
    try:
        return _loads(data, where)
    except UnicodeDecodeError as exc:
        raise TraceDecodeError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", where) from None
    except json.JSONDecodeError as exc:
        raise TraceDecodeError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", where) from None


def decode_traces_json(data: bytes | str, where: str = "json") -> DecodedBatch:
    """One OTLP-JSON document, or JSON lines (the collector file exporter: one TracesData a line)."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceDecodeError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", where) from None
    else:
        text = data
    stripped = text.strip()
    if not stripped:
        return DecodedBatch()
    try:
        document = _loads(stripped, where)
    except json.JSONDecodeError:
        document = _NOT_ONE_DOCUMENT
    if document is not _NOT_ONE_DOCUMENT:
        return decode_traces_object(document, where)
    batch = DecodedBatch()
    for number, line in enumerate(stripped.splitlines(), start=1):
        if line.strip():
            line_where = f"{where}:{number}"
            batch.extend(decode_traces_object(parse_json_text(line, line_where), line_where))
    return batch


__all__ = ["decode_id", "decode_traces_json", "decode_traces_object", "json_object", "json_string", "parse_json_text"]
