"""Grafana Tempo as a poll-mode trace source: a TraceQL search, then each trace by id (OTLP protobuf).

- `GET /api/search?q=<TraceQL>&start=<unix s>&end=<unix s>&limit=N` answers
  `{"traces": [{"traceID", "rootServiceName", "rootTraceName", "startTimeUnixNano": "<ns>", "durationMs"}...],
  "metrics": {...}}` ("traces" left out when none): at most N traces (default 20), whichever the shards found
  first, newest first. A trace matches when it overlaps [start, end] (trace start <= end and trace end >= start,
  both inclusive, whole seconds; start < end is required). traceID is hex without its leading zeros unless the
  tenant pads them (left-padded to 32 here).
- `GET /api/v2/traces/<traceID>` with `Accept: application/protobuf` answers a `tempopb.TraceByIDResponse`
  {trace = 1 (tempopb.Trace: resourceSpans = 1, the wire shape of OTLP TracesData), metrics = 2,
  status = 3 (PARTIAL = 1: the trace is larger than the server's limit and was cut), message = 4}; in JSON
  `{"trace": {"resourceSpans": [...]}, "status": "PARTIAL", ...}` (read too, should a proxy answer JSON).
  A trace no longer there: 404 (skipped).

Checked in grafana/tempo: docs/sources/tempo/api_docs/_index.md, pkg/api/http.go (ParseSearchRequest),
pkg/tempopb/tempo.proto, modules/frontend/combiner/{search,trace_by_id_v2,common}.go and
tempodb/encoding/vparquet5/block_traceql.go (createTraceIterator: the overlap test).

Paging: a search that comes back with N traces may have left some out, so its window is split in halves and
each half searched again, down to one second; a one-second window still full is searched with a larger N (up to
MAX_LIMIT, or the server's max_limit). Ranges longer than MAX_SEARCH_SECONDS are searched a day at a time
(Tempo refuses searches longer than its max_duration, 168 h by default).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import AsyncIterator
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from evaluators.traces.errors import TraceDecodeError
from evaluators.traces.otlp_json import decode_traces_object, parse_json_text
from evaluators.traces.otlp_proto import decode_traces_protobuf
from evaluators.traces.records import DecodedBatch, SpanRecord
from monitor.config.sources import TempoSourceConfig
from monitor.sources.base import PolledTrace, SourceError, span_time_range
from monitor.sources.guard import RunGuard
from monitor.sources.http import HttpSource, SourceHttp

log = logging.getLogger(__name__)

SEARCH_PATH = "/api/search"
TRACE_PATH = "/api/v2/traces/"
MAX_LIMIT = 10_000  # the largest limit asked for when a one-second window is full
MAX_SEARCH_SECONDS = 86_400
FETCH_CONCURRENCY = 4  # trace bodies fetched at once
PARTIAL = 1  # tempopb.PartialStatus
HEX = re.compile(r"[0-9a-fA-F]{1,32}")


def _trace_by_id_response() -> Any:
    """tempopb.TraceByIDResponse with `trace` kept as bytes (a serialised TracesData) and `metrics` skipped."""
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="agent_monitor/tempo.proto", package="agent_monitor", syntax="proto3"
    )
    message = file.message_type.add(name="TraceByIDResponse")
    message.field.add(name="trace", number=1, type=field.TYPE_BYTES, label=field.LABEL_OPTIONAL)
    message.field.add(name="status", number=3, type=field.TYPE_INT32, label=field.LABEL_OPTIONAL)
    message.field.add(name="message", number=4, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("agent_monitor.TraceByIDResponse"))


TraceByIDResponse = _trace_by_id_response()


def search_hits(document: Any, what: str) -> list[tuple[str, int]]:
    """(trace id as 32 lowercase hex digits, start in Unix ns) of each trace in a search answer."""
    traces = document.get("traces") if isinstance(document, dict) else None
    if not isinstance(document, dict) or not isinstance(traces, list | None):
        raise SourceError("decode", f'{what}: expected {{"traces": [...]}}, got {document!r:.100}')
    hits = []
    for i, trace in enumerate(traces or []):
        trace_id = trace.get("traceID") if isinstance(trace, dict) else None
        start = trace.get("startTimeUnixNano", 0) if isinstance(trace, dict) else None
        if isinstance(start, str) and start.isdigit():
            start = int(start)
        if not isinstance(trace_id, str) or not HEX.fullmatch(trace_id) or type(start) is not int:
            raise SourceError(
                "decode", f"{what}: traces[{i}]: expected a traceID and a startTimeUnixNano: {trace!r:.100}"
            )
        hits.append((trace_id.lower().rjust(32, "0"), start))
    return hits


class TempoSource(HttpSource):
    """The traces a TraceQL query finds in Tempo that started in a time range."""

    def __init__(self, config: TempoSourceConfig, *, http: SourceHttp | None = None) -> None:
        super().__init__(config, http=http)
        self.config = config

    async def pages(
        self, since: float, until: float, guard: RunGuard | None = None
    ) -> AsyncIterator[list[PolledTrace]]:
        """The traces that started in [since, until): one page per search answered in full, each trace once.
        Each search is a page of the guard; the fetch of a trace by id is not (its bytes count)."""
        if until <= since:
            return
        guard = guard if guard is not None else RunGuard()
        first, last = max(math.floor(since), 0), math.ceil(until)
        starts = range(first, last, MAX_SEARCH_SECONDS)
        windows = [(lo, min(lo + MAX_SEARCH_SECONDS, last)) for lo in reversed(starts)]  # popped earliest first
        seen: set[str] = set()
        while windows:
            lo, hi = windows.pop()
            limit = self.config.page_size
            hits = await self._search(lo, hi, limit, guard)
            if len(hits) >= limit and hi - lo > 1:
                middle = (lo + hi) // 2
                windows += [(middle, hi), (lo, middle)]
                continue
            while len(hits) >= limit and limit < MAX_LIMIT:
                try:
                    more = await self._search(lo, hi, min(limit * 4, MAX_LIMIT), guard)
                except SourceError as exc:
                    if exc.kind != "client":  # over the server's max_limit: keep what came back
                        raise
                    break
                hits, limit = more, min(limit * 4, MAX_LIMIT)
            if len(hits) >= limit:
                guard.warn(log, "truncated", f"source {self.name}: {len(hits)} traces between {lo} and {hi} s, "
                                             "more may have been left out")  # fmt: skip
            fresh = {i: start for i, start in hits if since <= start / 1e9 < until and i not in seen}
            seen.update(fresh)
            page = await self._fetch_all(fresh, guard)
            if page:
                yield page

    async def _search(self, lo: int, hi: int, limit: int, guard: RunGuard) -> list[tuple[str, int]]:
        params: list[tuple[str, str | int | float]] = [
            ("q", self.config.query), ("start", lo), ("end", hi), ("limit", limit),
        ]  # fmt: skip
        what = f"GET {self.http.base}{SEARCH_PATH}"
        guard.page(what)
        document = await self.http.get_json(SEARCH_PATH, params, guard=guard)
        return search_hits(document, what)

    async def _fetch_all(self, starts: dict[str, int], guard: RunGuard) -> list[PolledTrace]:
        """The traces by id, FETCH_CONCURRENCY at a time (the first failure cancels the rest)."""
        gate = asyncio.Semaphore(FETCH_CONCURRENCY)

        async def fetch(trace_id: str) -> list[SpanRecord]:
            async with gate:
                return await self._fetch(trace_id, guard)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = {trace_id: group.create_task(fetch(trace_id)) for trace_id in starts}
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        traces = []
        for trace_id, task in tasks.items():
            spans = task.result()
            if spans:
                traces.append(PolledTrace(trace_id, starts[trace_id] / 1e9, span_time_range(spans)[1], spans))
        return traces

    async def _fetch(self, trace_id: str, guard: RunGuard) -> list[SpanRecord]:
        """One trace's spans ([] when Tempo no longer has it), at most the guard's spans_per_trace."""
        path = TRACE_PATH + trace_id
        what = f"GET {self.http.base}{path}"
        try:
            body = await self.http.get_bytes(path, accept="application/protobuf", guard=guard)
        except SourceError as exc:
            if str(exc).startswith(f"{what}: 404"):  # SourceHttp's message: "<what>: <status>: <body>"
                log.info("source %s: trace %s is gone (404)", self.name, trace_id)
                return []
            raise
        try:
            batch, status, message = decode_trace(body, what)
        except TraceDecodeError as exc:
            raise SourceError("decode", str(exc)) from None
        if status in (PARTIAL, "PARTIAL"):
            guard.warn(log, "partial", f"source {self.name}: trace {trace_id} is partial: {message}")
        if batch.rejected:
            guard.warn(log, "rejected", f"{what}: {len(batch.rejected)} spans left out: {batch.rejected[0].where}")
        return guard.keep(trace_id, [], batch.spans)


def decode_trace(body: bytes, what: str) -> tuple[DecodedBatch, Any, str]:
    """(spans, status, message) of a TraceByIDResponse, protobuf or (first byte "{") JSON; TraceDecodeError."""
    if body[:1] == b"{":
        document = parse_json_text(body, what)
        if not isinstance(document, dict):
            raise TraceDecodeError(f'expected {{"trace": {{...}}}}, got {type(document).__name__}', what)
        batch = decode_traces_object(document.get("trace") or {}, f"{what}: trace")
        return batch, document.get("status"), str(document.get("message", ""))
    response = TraceByIDResponse()
    try:
        response.ParseFromString(body)
    except DecodeError as exc:
        raise TraceDecodeError(f"not a TraceByIDResponse: {exc}", what) from None
    return decode_traces_protobuf(response.trace, f"{what}: trace"), response.status, response.message
