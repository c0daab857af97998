"""SpanRecords → OTLP JSON (the `resourceSpans` document of the OTLP/HTTP JSON encoding), for the fake trace
stores of the source tests: what Jaeger's API v3 and Tempo return, built from the project's recorded corpus."""

from __future__ import annotations

import base64
from typing import Any

from evaluators.traces import read_paths
from evaluators.traces.records import SpanRecord
from tests.conftest import CORPUS


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": key_values(value)}}
    return {"stringValue": "" if value is None else str(value)}


def key_values(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in attributes.items()]


def span_json(span: SpanRecord) -> dict[str, Any]:
    return {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentSpanId": span.parent_span_id,
        "name": span.name,
        "kind": span.kind,
        "startTimeUnixNano": str(span.start_time_unix_nano),
        "endTimeUnixNano": str(span.end_time_unix_nano),
        "attributes": key_values(span.attributes),
        "events": [
            {"name": e.name, "timeUnixNano": str(e.time_unix_nano), "attributes": key_values(e.attributes)}
            for e in span.events
        ],
        "status": {"code": span.status_code, "message": span.status_message},
    }


def otlp_document(spans: list[SpanRecord]) -> dict[str, Any]:
    """One resourceSpans entry per (resource, scope) of `spans`, in their order."""
    groups: dict[tuple, list[SpanRecord]] = {}
    for span in spans:
        key = (tuple(sorted(map(str, span.resource_attributes.items()))), span.scope_name, span.scope_version)
        groups.setdefault(key, []).append(span)
    resource_spans = []
    for members in groups.values():
        first = members[0]
        resource_spans.append(
            {
                "resource": {"attributes": key_values(first.resource_attributes)},
                "scopeSpans": [
                    {
                        "scope": {"name": first.scope_name, "version": first.scope_version},
                        "spans": [span_json(s) for s in members],
                    }
                ],
            }
        )
    return {"resourceSpans": resource_spans}


def corpus_traces(*scenarios: str) -> dict[str, list[SpanRecord]]:
    """The spans of the corpus scenarios (tests/fixtures/corpus), by trace id."""
    traces: dict[str, list[SpanRecord]] = {}
    for scenario in scenarios:
        for span in read_paths([CORPUS / scenario]).spans:
            traces.setdefault(span.trace_id, []).append(span)
    return traces
