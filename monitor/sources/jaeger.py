"""Jaeger as a poll-mode trace source: its API v3 over HTTP (OTLP JSON).

`GET /api/v3/traces?query.service_name=S&query.start_time_min=T&query.start_time_max=T&query.num_traces=N`
(+ `query.operation_name`) finds the traces with at least one span of service S (and operation) that started in
[start_time_min, start_time_max) (RFC 3339 with nanoseconds), whole, at most N of them (no order, no cursor),
and answers `{"result": {"resourceSpans": [...]}}`: one OTLP JSON TracesData with the spans of every trace found.
No trace: 404 `{"error": {"httpCode": 404, "message": "No traces found"}}` (Jaeger 1.65 / 2.2 on), 404 "trace
not found" from some storages, or `{"result": {}}` (before). Checked in jaegertracing/jaeger-idl
proto/api_v3/query_service.proto (TraceQueryParameters, GRPCGatewayWrapper) and jaegertracing/jaeger
cmd/jaeger/internal/extension/jaegerquery/internal/apiv3/{http_gateway,query_parser}.go (since 2.19 the names are
camelCase and `query.searchDepth`; the snake_case names and `query.num_traces` used here stay as aliases, and are
the only names older versions know).

Paging: a window that comes back with N traces may have lost some, so it is split in halves and each half asked
again, down to MIN_WINDOW_NS; a window that small and still full is asked with a larger N (up to MAX_NUM_TRACES).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from evaluators.traces.errors import TraceDecodeError
from evaluators.traces.otlp_json import decode_traces_object
from evaluators.traces.records import DecodedBatch, SpanRecord
from monitor.config.sources import JaegerSourceConfig
from monitor.sources.base import PolledTrace, SourceError, span_time_range
from monitor.sources.guard import RunGuard
from monitor.sources.http import HttpSource, SourceHttp

log = logging.getLogger(__name__)

PATH = "/api/v3/traces"
MIN_WINDOW_NS = 1_000_000  # 1 ms: a window this short is not split again
MAX_NUM_TRACES = 10_000  # the largest num_traces asked for when a minimal window is full
SLACK_NS = 1_000  # 1 µs either side of [since, until): float rounding, microsecond storages
NO_TRACES = re.compile(r"no traces found|trace not found", re.IGNORECASE)


def rfc3339(ns: int) -> str:
    """Unix nanoseconds as RFC 3339 UTC with nine fractional digits (Go's time.RFC3339Nano parses it)."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def group_traces(spans: list[SpanRecord], guard: RunGuard | None = None) -> list[PolledTrace]:
    """Spans grouped by trace id (at most the guard's spans_per_trace each); a trace starts at its earliest span."""
    guard = guard if guard is not None else RunGuard()
    by_id: dict[str, list[SpanRecord]] = {}
    for span in spans:
        guard.keep(span.trace_id, by_id.setdefault(span.trace_id, []), (span,))
    traces = []
    for trace_id, members in by_id.items():
        start, end = span_time_range(members)
        traces.append(PolledTrace(trace_id=trace_id, start=start, end=end, spans=members))
    return traces


class JaegerSource(HttpSource):
    """The traces of one Jaeger service (and operation) that started in a time range."""

    def __init__(self, config: JaegerSourceConfig, *, http: SourceHttp | None = None) -> None:
        super().__init__(config, http=http)
        self.config = config

    async def pages(
        self, since: float, until: float, guard: RunGuard | None = None
    ) -> AsyncIterator[list[PolledTrace]]:
        """The traces that started in [since, until): one page per window answered in full, each trace once.
        A store that answers `num_traces` traces whatever the window is split down to MIN_WINDOW_NS, until the
        guard's page bound stops the run."""
        if until <= since:
            return
        guard = guard if guard is not None else RunGuard()
        seen: set[str] = set()
        windows = [(math.floor(since * 1e9) - SLACK_NS, math.ceil(until * 1e9) + SLACK_NS)]
        while windows:
            lo, hi = windows.pop()
            limit = self.config.page_size
            traces = await self._find(lo, hi, limit, guard)
            if len(traces) >= limit and hi - lo > MIN_WINDOW_NS:
                middle = (lo + hi) // 2
                windows += [(middle, hi), (lo, middle)]  # the earlier half first
                continue
            while len(traces) >= limit and limit < MAX_NUM_TRACES:
                limit = min(limit * 4, MAX_NUM_TRACES)
                traces = await self._find(lo, hi, limit, guard)
            if len(traces) >= limit:
                guard.warn(log, "truncated", f"source {self.name}: {len(traces)} traces between {rfc3339(lo)} and "
                                             f"{rfc3339(hi)}, more may have been left out")  # fmt: skip
            page = [t for t in traces if since <= t.start < until and t.trace_id not in seen]
            seen.update(t.trace_id for t in page)
            if page:
                yield page

    async def _find(self, lo: int, hi: int, limit: int, guard: RunGuard) -> list[PolledTrace]:
        """The traces with a span of the service starting in [lo, hi) ns, at most `limit` of them."""
        params: list[tuple[str, str | int | float]] = [
            ("query.service_name", self.config.service),
            ("query.start_time_min", rfc3339(lo)),
            ("query.start_time_max", rfc3339(hi)),
            ("query.num_traces", limit),
        ]
        if self.config.operation:
            params.append(("query.operation_name", self.config.operation))
        what = f"GET {self.http.base}{PATH}"
        guard.page(what)
        try:
            document = await self.http.get_json(PATH, params, guard=guard)
        except SourceError as exc:
            if str(exc).startswith(f"{what}: 404") and NO_TRACES.search(str(exc)):  # "<what>: <status>: <body>"
                return []
            raise
        return group_traces(decode_result(document, what, guard).spans, guard)


def decode_result(document: Any, what: str, guard: RunGuard | None = None) -> DecodedBatch:
    """The DecodedBatch of a `{"result": TracesData}` answer (SourceError "decode" when it is not one)."""
    if not isinstance(document, dict) or not isinstance(document.get("result"), dict):
        raise SourceError("decode", f'{what}: expected {{"result": {{"resourceSpans": [...]}}}}, got {document!r:.100}')
    try:
        batch = decode_traces_object(document["result"], f"{what}: result")
    except TraceDecodeError as exc:
        raise SourceError("decode", str(exc)) from None
    if batch.rejected:
        message = f"{what}: {len(batch.rejected)} spans left out: {batch.rejected[0].where}"
        if guard is not None:
            guard.warn(log, "rejected", message)
        else:
            log.warning("%s", message)
    return batch
