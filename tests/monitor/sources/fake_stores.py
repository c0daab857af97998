"""Fake Jaeger (API v3) and Tempo (search, trace by id v2) servers on 127.0.0.1 for the source tests.

They answer as the real servers do (checked in jaegertracing/jaeger apiv3/{http_gateway,query_parser}.go and
grafana/tempo pkg/api/http.go, modules/frontend/combiner, pkg/tempopb/tempo.proto): they filter by the query
parameters, keep the newest `num_traces` / `limit` traces, and record every request. `failures` are answered, in
order, before anything else; with `token` set a request without that bearer token gets a 401.
"""

from __future__ import annotations

import asyncio
import base64
import calendar
import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from evaluators.traces.records import SpanRecord
from tests.support.otlp_json import otlp_document

RFC3339 = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def clone(spans: list[SpanRecord], trace_id: str, start_ns: int, service: str | None = None) -> list[SpanRecord]:
    """`spans` as trace `trace_id` starting at `start_ns` (every time shifted alike), optionally of `service`."""
    shift = start_ns - min(s.start_time_unix_nano for s in spans)
    out = []
    for span in spans:
        resource = dict(span.resource_attributes)
        if service is not None:
            resource["service.name"] = service
        out.append(
            replace(
                span,
                trace_id=trace_id,
                start_time_unix_nano=span.start_time_unix_nano + shift,
                end_time_unix_nano=span.end_time_unix_nano + shift if span.end_time_unix_nano else 0,
                events=[replace(e, time_unix_nano=e.time_unix_nano + shift) for e in span.events],
                resource_attributes=resource,
            )
        )
    return out


def trace_start(spans: list[SpanRecord]) -> int:
    return min(s.start_time_unix_nano for s in spans)


def parse_rfc3339(text: str) -> int:
    """RFC 3339 (Go's RFC3339Nano) to Unix nanoseconds; ValueError when it is not one."""
    match = RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not RFC 3339: {text!r}")
    seconds = calendar.timegm(time.strptime(match[1], "%Y-%m-%dT%H:%M:%S"))
    if match[3] != "Z":
        sign = 1 if match[3][0] == "+" else -1
        seconds -= sign * (int(match[3][1:3]) * 3600 + int(match[3][4:6]) * 60)
    return seconds * 1_000_000_000 + int((match[2] or "").ljust(9, "0"))


@dataclass
class Seen:
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]


@dataclass
class FakeStore:
    traces: dict[str, list[SpanRecord]] = field(default_factory=dict)
    token: str | None = None
    failures: list[tuple[int, str]] = field(default_factory=list)  # (status, body) for the next requests
    requests: list[Seen] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    def routes(self) -> list[web.RouteDef]:
        raise NotImplementedError

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(Seen(request.path, list(request.query.items()), dict(request.headers)))
        if self.failures:
            status, body = self.failures.pop(0)
            return web.Response(status=status, text=body)
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(status=401, text="Unauthorized")
        response: web.StreamResponse = await handler(request)
        return response

    async def __aenter__(self) -> FakeStore:
        app = web.Application(middlewares=[self._middleware])
        app.add_routes(self.routes())
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def query(self, path: str) -> list[dict[str, str]]:
        """The query parameters of every request for `path`."""
        return [dict(r.query) for r in self.requests if r.path == path]


def go_error(status: int, message: str) -> web.Response:
    """Jaeger's error answer: GRPCGatewayError JSON written by Go's http.Error (text/plain)."""
    body = json.dumps({"error": {"httpCode": status, "message": message}}) + "\n"
    return web.Response(status=status, text=body, content_type="text/plain")


@dataclass
class FakeJaeger(FakeStore):
    """GET /api/v3/traces: traces with a span of the service (and operation) starting in [min, max)."""

    old_empty_answer: bool = False  # before Jaeger 2.2 no trace was {"result": {}}, since then a 404

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v3/traces", self.find_traces)]

    async def find_traces(self, request: web.Request) -> web.Response:
        q = request.query

        def param(canonical: str, deprecated: str) -> str:
            return q.get(canonical) or q.get(deprecated, "")

        service = param("query.serviceName", "query.service_name")
        operation = param("query.operationName", "query.operation_name")
        low, high = (
            param("query.startTimeMin", "query.start_time_min"),
            param("query.startTimeMax", "query.start_time_max"),
        )
        if not low or not high:
            return go_error(400, "query.startTimeMin and query.startTimeMax are required")
        try:
            lo, hi = parse_rfc3339(low), parse_rfc3339(high)
        except ValueError as exc:
            return go_error(400, f"malformed parameter query.startTimeMin: {exc}")
        if lo >= hi:
            return go_error(400, "query.startTimeMin must be before query.startTimeMax")
        if not service:
            return go_error(400, "service name must be set")
        depth = int(param("query.searchDepth", "query.search_depth") or q.get("query.num_traces") or 100)

        def matches(span: SpanRecord) -> bool:
            return (
                span.resource_attributes.get("service.name") == service
                and (not operation or span.name == operation)
                and lo <= span.start_time_unix_nano < hi
            )

        found = [trace_id for trace_id, spans in self.traces.items() if any(map(matches, spans))]
        found = sorted(found, key=lambda trace_id: trace_start(self.traces[trace_id]), reverse=True)[:depth]
        if not found:
            return web.json_response({"result": {}}) if self.old_empty_answer else go_error(404, "No traces found")
        resource_spans = [rs for trace_id in found for rs in otlp_document(self.traces[trace_id])["resourceSpans"]]
        return web.json_response({"result": {"resourceSpans": resource_spans}})


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def length_delimited(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def traces_data(spans: list[SpanRecord]) -> bytes:
    """OTLP TracesData protobuf (the wire shape of tempopb.Trace) of `spans`."""
    document = otlp_document(spans)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:  # OTLP JSON ids are hex, proto3 JSON bytes are base64
                for key in ("traceId", "spanId", "parentSpanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode("ascii")
    message: Any = ParseDict(document, TracesData())
    return bytes(message.SerializeToString())


@dataclass
class FakeTempo(FakeStore):
    """GET /api/search (TraceQL `{}` or `{ resource.service.name = "x" }`) and GET /api/v2/traces/<id>."""

    pad_ids: bool = False  # Tempo drops the leading zeros of trace ids unless the tenant pads them
    answer_json: bool = False  # trace by id in JSON whatever the Accept header
    partial: set[str] = field(default_factory=set)  # trace ids answered with status PARTIAL
    gone: set[str] = field(default_factory=set)  # found by search, 404 by id
    max_limit: int = 0  # search limits above it are refused (0: no maximum)
    fetch_delay: float = 0.0
    in_flight: int = 0
    most_in_flight: int = 0

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/search", self.search), web.get("/api/v2/traces/{trace_id}", self.trace_by_id)]

    async def search(self, request: web.Request) -> web.Response:
        q = request.query
        try:
            start, end, limit = int(q.get("start", 0)), int(q.get("end", 0)), int(q.get("limit", 20))
        except ValueError as exc:
            return web.Response(status=400, text=f"invalid parameter: {exc}")
        if limit <= 0:
            return web.Response(status=400, text="invalid limit: must be a positive number")
        if (start or end) and end <= start:
            text = f"http parameter start must be before end. received start={start} end={end}"
            return web.Response(status=400, text=text)
        if self.max_limit and limit > self.max_limit:
            return web.Response(status=400, text=f"limit {limit} exceeds max limit {self.max_limit}")
        query = q.get("q", "{}")
        service = re.fullmatch(r'\{\s*(?:resource)?\.service\.name\s*=\s*"([^"]*)"\s*\}', query)
        if service is None and re.fullmatch(r"\{\s*\}", query) is None:
            return web.Response(status=400, text=f"invalid TraceQL query: {query}")

        def matches(spans: list[SpanRecord]) -> bool:
            first, last = trace_start(spans), max(s.end_time_unix_nano for s in spans)
            overlaps = not (start or end) or (first <= end * 1_000_000_000 and last >= start * 1_000_000_000)
            return overlaps and (service is None or any(s.service_name == service[1] for s in spans))

        found = sorted((i for i, s in self.traces.items() if matches(s)), key=lambda i: trace_start(self.traces[i]))
        answer: dict[str, Any] = {"metrics": {"inspectedTraces": len(self.traces), "totalBlocks": 1}}
        if found:
            answer["traces"] = [self.metadata(trace_id) for trace_id in reversed(found)][:limit]
        return web.json_response(answer)

    def metadata(self, trace_id: str) -> dict[str, Any]:
        spans = self.traces[trace_id]
        root = next((s for s in spans if not s.parent_span_id), spans[0])
        start = trace_start(spans)
        return {
            "traceID": trace_id if self.pad_ids else trace_id.lstrip("0"),
            "rootServiceName": root.service_name,
            "rootTraceName": root.name,
            "startTimeUnixNano": str(start),
            "durationMs": (max(s.end_time_unix_nano for s in spans) - start) // 1_000_000,
        }

    async def trace_by_id(self, request: web.Request) -> web.Response:
        trace_id = request.match_info["trace_id"].lower().rjust(32, "0")
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.fetch_delay)
        finally:
            self.in_flight -= 1
        if trace_id not in self.traces or trace_id in self.gone:
            return web.Response(status=404, text="trace not found")
        spans = self.traces[trace_id]
        partial = trace_id in self.partial
        message = "Trace exceeds maximum size of 100 bytes, a partial trace is returned"
        if request.headers.get("Accept") == "application/protobuf" and not self.answer_json:
            data = traces_data(spans)
            body = length_delimited(1, data) + length_delimited(2, b"\x08" + varint(len(data)))
            if partial:
                body += b"\x18\x01" + length_delimited(4, message.encode())
            return web.Response(body=body, content_type="application/protobuf")
        answer: dict[str, Any] = {"trace": otlp_document(spans), "metrics": {"inspectedBytes": "100"}}
        if partial:
            answer |= {"status": "PARTIAL", "message": message}
        return web.json_response(answer)


SCENARIOS = (
    "oi_openai__tool_agent",
    "otel_genai__tool_error",
    "adk_native__tool_agent",
    "strands__tool_agent",
    "vercel_ai__tool_agent",
    "pydantic_ai__tool_agent",
)


def span_key(span: SpanRecord) -> tuple:
    """What a source must give back unchanged."""
    events = [(e.name, e.time_unix_nano, e.attributes) for e in span.events]
    return (span.trace_id, span.span_id, span.parent_span_id, span.name, span.kind, span.start_time_unix_nano,
            span.end_time_unix_nano, span.status_code, span.status_message, span.attributes, events,
            span.resource_attributes, span.scope_name, span.scope_version)  # fmt: skip


async def collect(source: Any, since: float, until: float) -> list[list[Any]]:
    """Every page of source.pages(since, until)."""
    return [page async for page in source.pages(since, until)]


async def no_sleep(_: float) -> None:
    return None


async def read_from(store: Any, make_source: Any, since: float, until: float, **settings: Any) -> list[list]:
    """Every page a source made by `make_source(store.url, **settings)` yields for [since, until) while `store`
    serves."""
    async with store:
        src = make_source(store.url, **settings)
        try:
            return await collect(src, since, until)
        finally:
            await src.close()


def ids(pages: list[list]) -> list[str]:
    return [trace.trace_id for page in pages for trace in page]
