"""AmpSource: the traces of the WSO2 Agent Manager (AMP), read from its trace export API.

Two routes, both `GET`, both answering `{"traces": [FullTrace], "totalCount": N}` (checked in
github.com/wso2/agent-manager: agent-manager-service/docs/api_v1_openapi.yaml and
controllers/observability_controller.go, traces-observer-service/openapi.yaml, opensearch/types.go and
controllers/controller.go):

- with `organization`, `project` and `agent` set, the Agent Manager API that takes a bearer token:
  `/api/v1/orgs/{organization}/projects/{project}/agents/{agent}/traces/export?environment=...`;
- otherwise `/api/v1/traces/export` with `organization`, `project`, `agent`, `environment` as query parameters
  (those set).

Both take `startTime`/`endTime` (RFC 3339; fractional seconds accepted, both ends inclusive), `limit` (at most
1000), `offset` and `sortOrder` (`asc`|`desc`). A FullTrace has `traceId`, `startTime` (its root span's start,
RFC 3339 with nanoseconds) and `spans`; a span has `traceId`, `spanId`, `parentSpanId`, `name`, `service`,
`kind` (`SPAN_KIND_INTERNAL` or `INTERNAL`), `startTime`, `endTime`, `status` (`0`/`1`/`2` or
`UNSET`/`OK`/`ERROR`), `attributes` and `resource` (JSON objects). AMP keeps no span events, links, scope or
status message.

There is no cursor: pages are read in ascending start time, each from the start time of the last page's latest
trace, skipping the trace ids already seen; past a full page of traces that all start at one instant, `offset`
steps over them (SourceError when the service ignores it).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

from evaluators.traces.errors import TraceDecodeError
from evaluators.traces.otlp_json import decode_id, json_object, json_string
from evaluators.traces.records import SPAN_KIND_NAMES, STATUS_NAMES, SpanRecord
from monitor.config.sources import AmpSourceConfig
from monitor.sources.base import PolledTrace, SourceError
from monitor.sources.guard import RunGuard
from monitor.sources.http import HttpSource, SourceHttp

MAX_LIMIT = 1000  # the service's cap on `limit` (MaxTracesPerRequest)
MARGIN_NS = 1_000  # asked for beyond [since, until): a float of Unix seconds is exact to well under 1 µs
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d\d):(\d\d))")


def rfc3339_ns(value: Any, where: str) -> int:
    """Unix nanoseconds of an RFC 3339 time (or of an integer already in nanoseconds); 0 when absent or
    before 1970 (Go's zero time, `0001-01-01T00:00:00Z`, is what an unset time looks like)."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    match = _RFC3339.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise TraceDecodeError(f"expected an RFC 3339 time, got {value!r:.60}", where)
    year, month, day, hour, minute, second, fraction, sign, off_h, off_m = match.groups()
    offset = timedelta(hours=int(off_h or 0), minutes=int(off_m or 0)) * (-1 if sign == "-" else 1)
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=timezone(offset))
    except ValueError as exc:
        raise TraceDecodeError(f"{exc}: {value!r:.60}", where) from None
    seconds = (moment - _EPOCH) // timedelta(seconds=1)
    return max(seconds * 10**9 + int((fraction or "").ljust(9, "0")), 0)


def format_time(ns: int) -> str:
    """RFC 3339 in UTC with nanoseconds, as the service's Go `time.Parse(time.RFC3339, ...)` reads it."""
    seconds, fraction = divmod(max(ns, 0), 10**9)
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"


def _enum(value: Any, names: tuple[str, ...], prefix: str, where: str) -> int:
    """An OTLP enum given as a number, a digit string or a name with or without its prefix; 0 when unknown."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < len(names) else 0
    if not isinstance(value, str):
        raise TraceDecodeError(f"expected a string, got {type(value).__name__}", where)
    name = value.strip().upper().removeprefix(prefix)
    if name.isdigit():
        return int(name) if int(name) < len(names) else 0
    return names.index(name) if name in names else 0


def amp_span(raw: Any, trace_id: str, where: str) -> SpanRecord:
    """One AMP span as a SpanRecord: the `resource` object becomes its resource attributes, with `service`
    as `service.name` when the resource has none."""
    raw = json_object(raw, where)
    status = raw.get("status")
    message = ""
    if isinstance(status, dict):  # tolerated: an OTLP-like {"code", "message"}
        message = json_string(status.get("message"), f"{where}.status.message")
        status = status.get("code")
    resource = dict(json_object(raw.get("resource"), f"{where}.resource"))
    service = json_string(raw.get("service"), f"{where}.service")
    if service and not isinstance(resource.get("service.name"), str):
        resource["service.name"] = service
    span_trace_id = decode_id(raw.get("traceId"), 16, f"{where}.traceId") or trace_id
    if span_trace_id != trace_id:
        raise TraceDecodeError(f"a span of trace {trace_id} has trace id {span_trace_id}", where)
    span_id = decode_id(raw.get("spanId"), 8, f"{where}.spanId")
    if not span_id:
        raise TraceDecodeError("a span without spanId", where)
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=decode_id(raw.get("parentSpanId"), 8, f"{where}.parentSpanId"),
        name=json_string(raw.get("name"), f"{where}.name"),
        kind=_enum(raw.get("kind"), SPAN_KIND_NAMES, "SPAN_KIND_", f"{where}.kind"),
        start_time_unix_nano=rfc3339_ns(raw.get("startTime"), f"{where}.startTime"),
        end_time_unix_nano=rfc3339_ns(raw.get("endTime"), f"{where}.endTime"),
        status_code=_enum(status, STATUS_NAMES, "STATUS_CODE_", f"{where}.status"),
        status_message=message,
        attributes=dict(json_object(raw.get("attributes"), f"{where}.attributes")),
        resource_attributes=resource,
    )


def amp_trace(raw: Any, where: str, guard: RunGuard | None = None) -> tuple[int, PolledTrace]:
    """(start in Unix nanoseconds, the trace) of one FullTrace: its start is the service's `startTime`, else its
    earliest span start; at most the guard's spans_per_trace spans."""
    raw = json_object(raw, where)
    trace_id = decode_id(raw.get("traceId"), 16, f"{where}.traceId")
    if not trace_id:
        raise TraceDecodeError("a trace without traceId", where)
    spans_raw = raw.get("spans")
    if not isinstance(spans_raw, list):
        raise TraceDecodeError("expected an array of spans", f"{where}.spans")
    spans = [amp_span(s, trace_id, f"{where}.spans[{i}]") for i, s in enumerate(spans_raw)]
    if guard is not None:
        spans = guard.keep(trace_id, [], spans)
    starts = [s.start_time_unix_nano for s in spans if s.start_time_unix_nano > 0]
    ends = [s.end_time_unix_nano for s in spans if s.end_time_unix_nano > 0]
    start = rfc3339_ns(raw.get("startTime"), f"{where}.startTime") or min(starts, default=0)
    if start <= 0:
        raise TraceDecodeError("a trace without a start time", where)
    end = max(ends, default=0) or rfc3339_ns(raw.get("endTime"), f"{where}.endTime")
    return start, PolledTrace(trace_id, start / 1e9, end / 1e9 if end else None, spans)


class AmpSource(HttpSource):
    """The traces that started in [since, until), from one AMP agent (or whatever the filters select)."""

    def __init__(self, config: AmpSourceConfig, *, http: SourceHttp | None = None) -> None:
        super().__init__(config, http=http)
        self.config = config
        self.limit = min(config.page_size, MAX_LIMIT)
        scope = (config.organization, config.project, config.agent)
        if all(scope):
            org, project, agent = (quote(str(part), safe="") for part in scope)
            self.path = f"/api/v1/orgs/{org}/projects/{project}/agents/{agent}/traces/export"
            self.filters = [("environment", config.environment)] if config.environment else []
        else:
            self.path = "/api/v1/traces/export"
            names = ("organization", "project", "agent", "environment")
            self.filters = [(key, value) for key in names if (value := getattr(config, key))]

    async def pages(
        self, since: float, until: float, guard: RunGuard | None = None
    ) -> AsyncIterator[list[PolledTrace]]:
        guard = guard if guard is not None else RunGuard()
        known: dict[str, int] = {}  # every trace id the service returned in this call: its start
        cursor = max(int(since * 1e9) - MARGIN_NS, 0)
        end = format_time(int(until * 1e9) + MARGIN_NS)
        offset = 0
        guard.start("export", (cursor, offset))
        while True:
            page = await self._page(cursor, end, offset, guard)
            new = [(start, trace) for start, trace in page if trace.trace_id not in known]
            known.update((trace.trace_id, start) for start, trace in new)
            fresh = [trace for _, trace in new if since <= trace.start < until]
            if fresh:
                yield fresh
            if len(page) < self.limit:
                return
            latest = max(start for start, _ in page)
            if latest > until * 1e9 + MARGIN_NS:  # past the range (a service that ignores endTime): done
                return
            if latest > cursor:
                cursor, offset = latest, 0
                guard.advance(self._describe(), "export", (cursor, offset), len(page))
            else:  # a full page at one instant: step over the traces seen there, if that moves on
                step = sum(1 for start in known.values() if start == cursor)
                if step > offset:
                    offset = step
                    guard.advance(self._describe(), "export", (cursor, offset), len(page))
                    continue
                raise SourceError(
                    "client",
                    f"{self._describe()}: more than {self.limit} traces start at {format_time(cursor)} and the "
                    f"service does not page past them with offset (sources.{self.name}.page_size: raise it, at "
                    f"most {MAX_LIMIT})",
                )

    async def _page(self, cursor: int, end: str, offset: int, guard: RunGuard) -> list[tuple[int, PolledTrace]]:
        params: list[tuple[str, str | int | float]] = [
            *self.filters,
            ("startTime", format_time(cursor)),
            ("endTime", end),
            ("limit", self.limit),
            ("sortOrder", "asc"),
        ]
        if offset:
            params.append(("offset", offset))
        guard.page(self._describe())
        document = await self.http.get_json(self.path, params, guard=guard)
        try:
            traces = json_object(document, "response").get("traces")
            if not isinstance(traces, list):
                raise TraceDecodeError("expected an array of traces", "traces")
            return [amp_trace(raw, f"traces[{i}]", guard) for i, raw in enumerate(traces)]
        except TraceDecodeError as exc:
            raise SourceError("decode", f"{self._describe()}: unexpected response: {exc}") from None

    def _describe(self) -> str:
        return f"GET {self.http.base}{self.path}"
