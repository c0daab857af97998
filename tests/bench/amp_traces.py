"""The bench's OTLP trace files rewritten in amp-evaluation's input format (for tests/bench/bench_amp.py).

amp-evaluation (WSO2's trace-based evaluation framework) reads traces as its trace service's export: a JSON
document `{"traces": [...], "totalCount": n}` whose traces carry trace-level fields (ids, times, duration, token
usage, error count, input, output) and spans whose `ampAttributes` hold what the service already extracted from
the OTel attributes: the span's semantic `kind` (llm, tool, agent, retriever), its `input` and `output` (chat
messages, tool arguments and result, the query and the documents), its `status` and its `data` (model, vendor,
token usage, tool or agent name). Its `TraceLoader` reads one such file and its parser builds its `Trace` from
`ampAttributes` alone, so the raw `attributes` are left empty here (a real export carries them too, which only
makes the file bigger to read).

The spans come from decoding our own files (`evaluators.traces`), so both sides evaluate the same traces, ids
and all, in files of the same traces.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluators.traces import decode_bytes
from evaluators.traces.records import STATUS_ERROR, STATUS_OK, SpanRecord

KINDS = {"chat": "llm", "execute_tool": "tool", "invoke_agent": "agent", "retrieval": "retriever"}
SPAN_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
JsonDict = dict[str, Any]


def iso_time(unix_nano: int) -> str:
    """An OTel timestamp as the trace service writes it: ISO 8601 in UTC, microseconds, a trailing Z."""
    return datetime.fromtimestamp(unix_nano / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json_attr(attributes: dict[str, Any], key: str, default: Any = None) -> Any:
    value = attributes.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return default if value is None else value


def amp_messages(messages: Any) -> list[JsonDict]:
    """OTel GenAI messages (role and parts) as amp's chat messages: text as `content`, tool calls as an assistant's
    `toolCalls` (arguments as a JSON string), tool results as `tool` messages with their `tool_call_id`."""
    converted: list[JsonDict] = []
    for message in messages if isinstance(messages, list) else []:
        role = message.get("role", "user")
        parts = message.get("parts") or []
        text = "\n".join(p.get("content", "") for p in parts if p.get("type") == "text")
        calls = [
            {"id": p.get("id", ""), "name": p.get("name", ""), "arguments": json.dumps(p.get("arguments", {}))}
            for p in parts
            if p.get("type") == "tool_call"
        ]
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        for response in responses:
            converted.append(
                {"role": "tool", "content": json.dumps(response.get("response")), "tool_call_id": response.get("id")}
            )
        if responses:
            continue
        entry: JsonDict = {"role": role}
        if text:
            entry["content"] = text
        if calls:
            entry["toolCalls"] = calls
        converted.append(entry)
    return converted


def _text_of(messages: list[JsonDict]) -> str:
    return "\n".join(m["content"] for m in messages if isinstance(m.get("content"), str))


def _tokens(attributes: dict[str, Any]) -> JsonDict | None:
    given = attributes.get("gen_ai.usage.input_tokens"), attributes.get("gen_ai.usage.output_tokens")
    if given == (None, None):
        return None
    tokens_in, tokens_out = (int(n or 0) for n in given)
    return {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out}


def amp_attributes(span: SpanRecord) -> JsonDict:
    """What the trace service extracts from a span's GenAI attributes: kind, input, output, status, data."""
    attrs = span.attributes
    kind = KINDS.get(str(attrs.get("gen_ai.operation.name", "")), "unknown")
    status: JsonDict = {"error": span.status_code == STATUS_ERROR}
    if span.status_code == STATUS_ERROR:
        status["errorType"] = attrs.get("error.type") or "error"
    found: JsonDict = {"kind": kind, "status": status}
    if kind == "llm":
        found["input"] = amp_messages(_json_attr(attrs, "gen_ai.input.messages", []))
        found["output"] = amp_messages(_json_attr(attrs, "gen_ai.output.messages", []))
        found["data"] = {
            "model": attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model", ""),
            "vendor": attrs.get("gen_ai.provider.name", ""),
            "tokenUsage": _tokens(attrs),
        }
    elif kind == "tool":
        found["input"] = attrs.get("gen_ai.tool.call.arguments", "")
        found["output"] = attrs.get("gen_ai.tool.call.result", "")
        found["data"] = {"name": attrs.get("gen_ai.tool.name", "")}
    elif kind == "agent":
        found["input"] = _text_of(amp_messages(_json_attr(attrs, "gen_ai.input.messages", [])))
        found["output"] = _text_of(amp_messages(_json_attr(attrs, "gen_ai.output.messages", [])))
        found["data"] = {"name": attrs.get("gen_ai.agent.name", "")}
    elif kind == "retriever":
        found["input"] = attrs.get("gen_ai.retrieval.query.text", "")
        found["output"] = _json_attr(attrs, "gen_ai.retrieval.documents", [])
        found["data"] = {"vectorDB": attrs.get("gen_ai.data_source.id", "")}
    return found


def amp_span(span: SpanRecord) -> JsonDict:
    """One span of the trace service's export."""
    status = "Error" if span.status_code == STATUS_ERROR else "Ok" if span.status_code == STATUS_OK else "Unset"
    found: JsonDict = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "service": span.service_name,
        "kind": SPAN_KINDS[span.kind] if 0 <= span.kind < len(SPAN_KINDS) else "Unspecified",
        "startTime": iso_time(span.start_time_unix_nano),
        "endTime": iso_time(span.end_time_unix_nano),
        "durationInNanos": max(span.end_time_unix_nano - span.start_time_unix_nano, 0),
        "status": status,
        "attributes": {},
        "ampAttributes": amp_attributes(span),
    }
    if span.parent_span_id:
        found["parentSpanId"] = span.parent_span_id
    return found


def amp_trace(spans: Sequence[SpanRecord]) -> JsonDict:
    """One trace of the export (its spans, one root among them) with the trace-level fields the service adds."""
    root = next(s for s in spans if not s.parent_span_id)
    converted = [amp_span(s) for s in spans]
    usage = [u for s in converted if (u := s["ampAttributes"].get("data", {}).get("tokenUsage"))]
    root_amp = next(s["ampAttributes"] for s in converted if s["spanId"] == root.span_id)
    return {
        "traceId": root.trace_id,
        "rootSpanId": root.span_id,
        "rootSpanName": root.name,
        "rootSpanKind": root_amp["kind"],
        "startTime": iso_time(root.start_time_unix_nano),
        "endTime": iso_time(root.end_time_unix_nano),
        "durationInNanos": max(root.end_time_unix_nano - root.start_time_unix_nano, 0),
        "spanCount": len(spans),
        "tokenUsage": {key: sum(u[key] for u in usage) for key in ("inputTokens", "outputTokens", "totalTokens")},
        "status": {"errorCount": sum(1 for s in spans if s.status_code == STATUS_ERROR)},
        "input": root_amp.get("input", ""),
        "output": root_amp.get("output", ""),
        "spans": converted,
    }


def amp_export(spans: Iterable[SpanRecord]) -> JsonDict:
    """The export document of every trace the spans make up, in the order their first spans come."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    traces = [amp_trace(group) for group in by_trace.values()]
    return {"traces": traces, "totalCount": len(traces)}


def write_amp_files(otlp_files: Sequence[Path], folder: Path) -> list[Path]:
    """Each OTLP file (protobuf or OTLP-JSON) rewritten as an amp export file of the same traces in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for source in otlp_files:
        batch = decode_bytes(source.read_bytes(), str(source))
        target = folder / f"{source.stem}.json"
        target.write_text(json.dumps(amp_export(batch.spans)), encoding="utf-8")
        written.append(target)
    return written
