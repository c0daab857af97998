"""One nesting limit for OTLP attribute values, whatever the encoding, and the pruning that enforces it.

An attribute value (an AnyValue) nests through `arrayValue` and `kvlistValue`: a scalar is 1 level, a
list of scalars 2, and so on. Past MAX_VALUE_DEPTH levels the whole attribute is dropped and counted
(`DecodedBatch.dropped_attributes`); the span keeps its other attributes and the request its other spans.

32 levels is what the protobuf parser (upb, a message depth limit of 100) always accepts: 32 levels of
`kvlistValue` nested in an event or link attribute fit, 33 do not. A request the parser refuses for
depth is pruned on the wire (`prune_protobuf`: the over-deep attributes are cut out) and parsed again;
a JSON document too deep for Python's parser is pruned as text (`prune_json_text`) and parsed again.
"""

from __future__ import annotations

import re

MAX_VALUE_DEPTH = 32

# JSON containers nested deeper than this are cut from a document the parser refused: an AnyValue of level
# MAX_VALUE_DEPTH + 1 starts at a JSON depth of at most 12 + 4 × MAX_VALUE_DEPTH (140), so whatever is cut
# belongs to an attribute that is dropped anyway.
MAX_JSON_DEPTH = 200


class TooDeep(Exception):
    """An attribute value nests past MAX_VALUE_DEPTH levels (the attribute is dropped)."""


class MalformedWire(Exception):
    """Bytes that are not protobuf wire format (the caller reports its own parse error)."""


# --- protobuf -------------------------------------------------------------------------------------

# Each nesting level takes at least 4 bytes on the wire (two tags, two lengths), so a value shorter than
# this cannot be too deep and is not walked.
_MIN_TOO_DEEP_BYTES = 4 * MAX_VALUE_DEPTH

_KEY_VALUE = "key_value"  # a KeyValue field: dropped whole when its value is too deep
_BODY = "body"  # a log record's body (an AnyValue): dropped (left unset) when too deep

# For each message on the way to attributes: field number → what the field holds (wire type 2 only).
_SCHEMAS: dict[str, dict[int, str]] = {
    "traces": {1: "resource_spans"},  # ExportTraceServiceRequest / TracesData
    "logs": {1: "resource_logs"},  # ExportLogsServiceRequest / LogsData
    "resource_spans": {1: "resource", 2: "scope_spans"},
    "resource_logs": {1: "resource", 2: "scope_logs"},
    "resource": {1: _KEY_VALUE},
    "scope": {3: _KEY_VALUE},
    "scope_spans": {1: "scope", 2: "span"},
    "scope_logs": {1: "scope", 2: "log_record"},
    "span": {9: _KEY_VALUE, 11: "event", 13: "link"},
    "event": {3: _KEY_VALUE},
    "link": {4: _KEY_VALUE},
    "log_record": {5: _BODY, 6: _KEY_VALUE},
}


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise MalformedWire("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: bytes, start: int, end: int):
    """(field number, wire type, field start, value start, field end) of each field in buf[start:end]."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise MalformedWire("field number 0")
        value_start = pos
        if wire == 0:
            _, pos = _varint(buf, pos, end)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, value_start = _varint(buf, pos, end)
            pos = value_start + length
        else:
            raise MalformedWire(f"unsupported wire type {wire}")
        if pos > end:
            raise MalformedWire("field runs past its message")
        yield number, wire, field_start, value_start, pos


def _any_value_too_deep(buf: bytes, start: int, end: int, level: int) -> bool:
    """True when the AnyValue in buf[start:end], at nesting `level`, holds a value past MAX_VALUE_DEPTH."""
    if level > MAX_VALUE_DEPTH:
        return True
    for number, wire, _, value_start, value_end in _fields(buf, start, end):
        if wire != 2 or number not in (5, 6):  # 5: arrayValue {1: AnyValue}, 6: kvlistValue {1: KeyValue}
            continue
        for inner, inner_wire, _, inner_start, inner_end in _fields(buf, value_start, value_end):
            if inner != 1 or inner_wire != 2:
                continue
            if number == 5 and _any_value_too_deep(buf, inner_start, inner_end, level + 1):
                return True
            if number == 6 and _key_value_too_deep(buf, inner_start, inner_end, level + 1):
                return True
    return False


def _key_value_too_deep(buf: bytes, start: int, end: int, level: int = 1) -> bool:
    """True when the KeyValue in buf[start:end] holds a value (at `level`) nesting past MAX_VALUE_DEPTH."""
    for number, wire, _, value_start, value_end in _fields(buf, start, end):
        if number == 2 and wire == 2 and _any_value_too_deep(buf, value_start, value_end, level):
            return True
    return False


def _too_deep(buf: bytes, start: int, end: int, holds: str) -> bool:
    if holds == _KEY_VALUE:
        return _key_value_too_deep(buf, start, end)
    return _any_value_too_deep(buf, start, end, 1)


def _rewrite(buf: bytes, start: int, end: int, schema: str) -> tuple[bytes | None, int]:
    """(the message without its over-deep attributes, or None when nothing changed; attributes dropped)."""
    pieces: list[bytes] = []
    kept_from, dropped = start, 0
    for number, wire, field_start, value_start, field_end in _fields(buf, start, end):
        holds = _SCHEMAS[schema].get(number) if wire == 2 else None
        if holds is None:
            continue
        if holds in (_KEY_VALUE, _BODY):
            if field_end - value_start >= _MIN_TOO_DEEP_BYTES and _too_deep(buf, value_start, field_end, holds):
                pieces.append(buf[kept_from:field_start])  # cut the whole field out
                kept_from = field_end
                dropped += 1
            continue
        inner, inner_dropped = _rewrite(buf, value_start, field_end, holds)
        if inner is not None:  # re-encode the field around its shortened message
            pieces.append(buf[kept_from:field_start])
            pieces.append(_encode_varint((number << 3) | 2) + _encode_varint(len(inner)) + inner)
            kept_from = field_end
            dropped += inner_dropped
    if kept_from == start:
        return None, dropped
    pieces.append(buf[kept_from:end])
    return b"".join(pieces), dropped


def prune_protobuf(data: bytes, logs: bool = False) -> tuple[bytes, int]:
    """An OTLP trace (or, with logs=True, logs) export without its over-deep attributes, and how many.

    Raises MalformedWire for bytes that are not protobuf wire format.
    """
    pruned, dropped = _rewrite(data, 0, len(data), "logs" if logs else "traces")
    return (data if pruned is None else pruned), dropped


# --- JSON -----------------------------------------------------------------------------------------

_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def prune_json_text(text: str, max_depth: int = MAX_JSON_DEPTH) -> str:
    """`text` with every JSON container nested deeper than `max_depth` replaced by an empty one.

    For a document too deep for the JSON parser: what is cut lies inside an over-deep attribute value,
    which the decoder then drops and counts. Strings are skipped whole, so brackets inside them are kept.
    """
    pieces: list[str] = []
    depth, kept_from = 0, 0
    cut_at: int | None = None  # where the container being cut starts
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == max_depth + 1 and cut_at is None:
                cut_at = match.start()
            continue
        depth -= 1
        if depth == max_depth and cut_at is not None:
            pieces += [text[kept_from:cut_at], "[]" if token == "]" else "{}"]
            kept_from, cut_at = match.end(), None
    if not pieces:
        return text
    pieces.append(text[kept_from:])
    return "".join(pieces)


__all__ = ["MAX_JSON_DEPTH", "MAX_VALUE_DEPTH"]
