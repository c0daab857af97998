"""Every source type against a trace store that misbehaves without failing (issue 23, defect 4), through the real
Poller, sources, HTTP client and metrics: a cursor that repeats, an endless stream of fresh cursors or full
answers, one huge answer, a trace whose spans never end. Each run must stop on its own (bounded by the run's pages,
response bytes and spans per trace), be counted once per run and logged once, and keep the memory it used
bounded. The fakes stop misbehaving after a fixed number of requests, so that code without the bounds ends too
(and fails the request-count assertions) instead of hanging."""

from __future__ import annotations

import asyncio
import json
import logging
import tracemalloc
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry
from pydantic import TypeAdapter

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.config.sources import AnySourceConfig, OtlpFilesSourceConfig
from monitor.metrics.poll import PollMetrics
from monitor.sources.base import PolledTrace
from monitor.sources.checkpoints import MemoryCheckpoints
from monitor.sources.factory import make_source
from monitor.sources.runner import Poller, RunReport
from tests.monitor.sources.fake_stores import length_delimited, traces_data
from tests.monitor.sources.serving import answering, serving
from tests.support.otlp_json import otlp_document, span_json

T0 = 1_700_000_000.0  # now, for every poller here
SINCE = T0 - 3600  # backfill: 1h
RUN_TIMEOUT = 60.0  # a run that has not ended by then is endless
LOOP_CAP = 1500  # a fake stops misbehaving after this many requests
NS = 1_000_000_000
ENTRY: TypeAdapter[AnySourceConfig] = TypeAdapter(AnySourceConfig)


class Sink:
    """Records what each run hands to evaluation (trace id, span count)."""

    def __init__(self) -> None:
        self.evaluated: list[tuple[str, int]] = []
        self.fed = 0

    def claim(self, trace_ids: list[str]) -> list[str]:
        return trace_ids

    async def evaluate(self, traces: list[PolledTrace], stop: Any = lambda: False) -> list[PolledTrace]:
        self.evaluated += [(t.trace_id, len(t.spans)) for t in traces]
        return traces

    async def wait_for_room(self, stop: Any = lambda: False) -> None:
        return None

    def feed(self, spans: list[SpanRecord], logs: list[LogRecord]) -> None:
        self.fed += len(spans)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def span(trace_id: str, n: int, start_ns: int, parent: str = "") -> SpanRecord:
    return SpanRecord(
        trace_id, f"{n + 1:016x}", parent, f"step {n}", start_time_unix_nano=start_ns, end_time_unix_nano=start_ns + NS,
        attributes={"input.value": "x" * 100}, resource_attributes={"service.name": "agent"},
    )  # fmt: skip


def iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / NS, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def poller(entry: dict[str, Any], **kwargs: Any) -> Poller:
    config = ENTRY.validate_python({"backfill": "1h", "settle_delay": 0, **entry})
    sink, clock = Sink(), Clock()
    return Poller(config, make_source(config), MemoryCheckpoints(), sink, PollMetrics(CollectorRegistry()), clock,
                  **kwargs)  # fmt: skip


def value(p: Poller, metric: str, **labels: str) -> float:
    assert p.metrics is not None
    return float(getattr(p.metrics, metric).labels(source=p.name, **labels)._value.get())


def sink_of(p: Poller) -> Sink:
    assert isinstance(p.sink, Sink)
    return p.sink


async def runs(p: Poller, count: int = 1) -> list[RunReport]:
    """`count` runs of `p`, each bounded in time; the source closed after."""
    reports = []
    try:
        for _ in range(count):
            reports.append(await asyncio.wait_for(p.run(), RUN_TIMEOUT))
            assert isinstance(p.clock, Clock)
            p.clock.now += 60
    finally:
        await p.source.close()
    return reports


def run_against(handler: Callable[[web.Request], Awaitable[web.StreamResponse]], entry: dict[str, Any],
                count: int = 1, **kwargs: Any) -> tuple[Poller, list[RunReport]]:  # fmt: skip
    async def main() -> tuple[Poller, list[RunReport]]:
        async with serving(answering(handler)) as url:
            p = poller({**entry, "url": url}, **kwargs)
            return p, await runs(p, count)

    return asyncio.run(main())


def failures_logged(caplog: pytest.LogCaptureFixture, kind: str) -> int:
    return sum(1 for r in caplog.records if r.name == "monitor.sources.runner" and f"failed ({kind})" in r.getMessage())


# --- Phoenix ---------------------------------------------------------------------------------------


class SickPhoenix:
    """Phoenix's traces and spans/otlpv1 endpoints; `traces_cursor`: the next_cursor of every traces page (a
    repeating one); `span_pages`: how many pages of `spans_per_page` fresh spans the spans of a trace take (each
    with a fresh cursor); `spans_cursor`: a repeating cursor of the spans pages instead."""

    def __init__(self, traces: int = 1, traces_cursor: str | None = None, span_pages: int = 1,
                 spans_per_page: int = 10, spans_cursor: str | None = None) -> None:  # fmt: skip
        self.ids = [f"{n + 1:032x}" for n in range(traces)]
        self.start = int((T0 - 600) * NS)
        self.traces_cursor, self.spans_cursor = traces_cursor, spans_cursor
        self.span_pages, self.spans_per_page = span_pages, spans_per_page
        self.requests = {"traces": 0, "spans": 0}

    async def handle(self, request: web.Request) -> web.Response:
        if request.path.endswith("/traces"):
            self.requests["traces"] += 1
            done = self.requests["traces"] >= LOOP_CAP
            rows = [{"trace_id": t, "start_time": iso(self.start), "end_time": iso(self.start + NS)} for t in self.ids]
            return web.json_response({"data": rows, "next_cursor": None if done else self.traces_cursor})
        self.requests["spans"] += 1
        page = int(request.query.get("cursor", "0").lstrip("s") or 0) if not self.spans_cursor else 0
        first = self.requests["spans"] * self.spans_per_page
        rows = [
            span_json(span(trace_id, first + i, self.start + i))
            for trace_id in request.query.getall("trace_id")
            for i in range(self.spans_per_page)
        ]
        more = page + 1 < self.span_pages and self.requests["spans"] < LOOP_CAP
        cursor = (self.spans_cursor or f"s{page + 1}") if more else None
        return web.json_response({"data": rows, "next_cursor": cursor})


PHOENIX = {"type": "phoenix", "name": "px", "project": "p"}


@pytest.mark.integration
def test_a_phoenix_cursor_that_repeats_ends_the_run_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    store = SickPhoenix(traces_cursor="c1")
    with caplog.at_level(logging.INFO):
        p, reports = run_against(store.handle, PHOENIX, count=3)
    assert [r.error.kind if r.error else None for r in reports] == ["cursor_loop"] * 3
    assert store.requests["traces"] == 2 * 3  # the first page, then its cursor once more: stopped
    assert value(p, "errors", kind="cursor_loop") == 3 and value(p, "runs", status="error") == 3  # once a run
    assert failures_logged(caplog, "cursor_loop") == 1  # once while it lasts, never per request
    assert sink_of(p).evaluated == [(store.ids[0], 10)]  # the page before the loop was kept, and only once


@pytest.mark.integration
def test_a_phoenix_spans_endpoint_that_never_ends_stops_at_the_byte_bound_in_bounded_memory() -> None:
    store = SickPhoenix(span_pages=LOOP_CAP, spans_per_page=500)  # ~120 kB a page, a new cursor every time
    tracemalloc.start()
    try:
        p, (report,) = run_against(store.handle, {**PHOENIX, "max_bytes_per_run": "4MiB"}, max_spans_per_trace=2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.error is not None and report.error.kind == "byte_limit"
    assert store.requests["spans"] <= 4 * 1024 * 1024 // 100_000 + 1  # stopped at the bound, not at the fake's cap
    assert report.bytes <= 4 * 1024 * 1024 + 65536 and value(p, "errors", kind="byte_limit") == 1
    assert sink_of(p).evaluated == []  # an unfinished trace is not evaluated half-read
    assert peak < 64 * 1024 * 1024  # what the run held: bounded by the byte bound, not the store


@pytest.mark.integration
def test_a_phoenix_trace_over_max_spans_per_trace_is_cut_and_counted_once_per_run() -> None:
    store = SickPhoenix(traces=2, span_pages=3, spans_per_page=400)  # 1200 spans each, in 3 pages
    p, (report,) = run_against(store.handle, PHOENIX, max_spans_per_trace=1000)
    assert report.error is None
    assert sorted(sink_of(p).evaluated) == [(store.ids[0], 1000), (store.ids[1], 1000)]
    assert report.dropped_spans == 2 * 200 and value(p, "errors", kind="span_limit") == 1


@pytest.mark.integration
def test_a_phoenix_spans_cursor_that_repeats_is_a_cursor_loop() -> None:
    store = SickPhoenix(span_pages=LOOP_CAP, spans_cursor="same")
    p, (report,) = run_against(store.handle, PHOENIX)
    assert report.error is not None and report.error.kind == "cursor_loop"
    assert store.requests["spans"] == 2 and sink_of(p).evaluated == []


# --- Jaeger ----------------------------------------------------------------------------------------


@pytest.mark.integration
def test_jaeger_answering_num_traces_every_time_stops_at_the_page_bound_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    requests = 0

    async def full(request: web.Request) -> web.Response:
        """Always `num_traces` traces, fresh ones, whatever the window (within it)."""
        nonlocal requests
        requests += 1
        if requests > LOOP_CAP:
            return web.json_response({"result": {}})
        start = int((T0 - 1) * NS)
        spans = [
            SpanRecord(f"{requests:016x}{n:016x}", "1" * 16, "", "s", start_time_unix_nano=start + n,
                       end_time_unix_nano=start + n + 1, resource_attributes={"service.name": "agent"})
            for n in range(int(request.query["query.num_traces"]))
        ]  # fmt: skip
        return web.json_response({"result": otlp_document(spans)})

    entry = {"type": "jaeger", "name": "jg", "service": "agent", "page_size": 10, "max_pages_per_run": 30,
             "backfill": "60s", "overlap": 0, "max_traces_per_run": 10**6}  # fmt: skip
    with caplog.at_level(logging.WARNING):
        p, reports = run_against(full, entry, count=2)
    assert [r.error.kind if r.error else None for r in reports] == ["page_limit"] * 2
    assert requests == 2 * 30 and value(p, "errors", kind="page_limit") == 2
    warned = [r.getMessage() for r in caplog.records if r.name == "monitor.sources.jaeger"]
    assert len(warned) == 2 and all("more may have been left out" in m for m in warned)  # one per run
    assert failures_logged(caplog, "page_limit") == 1


# --- Tempo -----------------------------------------------------------------------------------------


@pytest.mark.integration
def test_tempo_answering_limit_hits_every_time_stops_at_the_page_bound() -> None:
    searches = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal searches
        if request.path.startswith("/api/v2/traces/"):
            trace_id = request.path.rsplit("/", 1)[1]
            return web.Response(body=_tempo_trace(trace_id, 3), content_type="application/protobuf")
        searches += 1
        limit = min(int(request.query["limit"]), 200) if searches <= LOOP_CAP else 0
        start = int(request.query["start"])
        hits = [{"traceID": f"{searches:016x}{n:016x}", "startTimeUnixNano": str(start * NS + n)} for n in range(limit)]
        return web.json_response({"traces": hits})

    entry = {"type": "tempo", "name": "tp", "page_size": 5, "max_pages_per_run": 40}
    p, (report,) = run_against(handler, entry)
    assert report.error is not None and report.error.kind == "page_limit"
    assert searches == 40 and value(p, "errors", kind="page_limit") == 1


def _tempo_trace(trace_id: str, spans: int, size: int = 0) -> bytes:
    """A TraceByIDResponse of `spans` spans (each with `size` bytes of attribute)."""
    start = int((T0 - 900) * NS)
    records = [span(trace_id, n, start + n) for n in range(spans)]
    for record in records:
        record.attributes["input.value"] = "x" * size if size else "x"
    return length_delimited(1, traces_data(records))


@pytest.mark.integration
def test_one_huge_tempo_trace_is_read_only_up_to_the_byte_bound() -> None:
    body = _tempo_trace(f"{7:032x}", 40, size=200_000)  # 8 MB

    async def handler(request: web.Request) -> web.Response:
        if request.path.startswith("/api/v2/traces/"):
            return web.Response(body=body, content_type="application/protobuf")
        return web.json_response({"traces": [{"traceID": f"{7:032x}", "startTimeUnixNano": str(int(T0 - 900) * NS)}]})

    entry = {"type": "tempo", "name": "tp", "max_bytes_per_run": "1MiB"}
    p, (report,) = run_against(handler, entry)
    assert report.error is not None and report.error.kind == "byte_limit"
    assert report.bytes <= 1024 * 1024 and sink_of(p).evaluated == []  # refused on its Content-Length, unread


@pytest.mark.integration
def test_a_tempo_trace_over_max_spans_per_trace_is_cut() -> None:
    async def handler(request: web.Request) -> web.Response:
        if request.path.startswith("/api/v2/traces/"):
            return web.Response(body=_tempo_trace(f"{7:032x}", 30), content_type="application/protobuf")
        return web.json_response({"traces": [{"traceID": f"{7:032x}", "startTimeUnixNano": str(int(T0 - 900) * NS)}]})

    p, (report,) = run_against(handler, {"type": "tempo", "name": "tp"}, max_spans_per_trace=20)
    assert report.error is None and sink_of(p).evaluated == [(f"{7:032x}", 20)]
    assert value(p, "errors", kind="span_limit") == 1


# --- AMP -------------------------------------------------------------------------------------------


def _amp_answer(request: web.Request, number: int, start_ns: int) -> web.Response:
    limit = int(request.query["limit"])
    traces = []
    for n in range(limit):
        trace_id = f"{number:016x}{n:016x}"
        begin = datetime.fromtimestamp((start_ns + n) / NS, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        one = {"traceId": trace_id, "spanId": f"{n + 1:016x}", "name": "root", "startTime": begin, "endTime": begin}
        traces.append({"traceId": trace_id, "startTime": begin, "spans": [one]})
    return web.json_response({"traces": traces, "totalCount": limit * 10})


@pytest.mark.integration
def test_amp_full_pages_without_end_stop_at_the_page_bound() -> None:
    requests = 0

    async def endless(request: web.Request) -> web.Response:
        """Full pages, each a millisecond later than the last, within the range."""
        nonlocal requests
        requests += 1
        if requests > LOOP_CAP:
            return web.json_response({"traces": [], "totalCount": 0})
        return _amp_answer(request, requests, int(SINCE * NS) + requests * 1_000_000)

    entry = {"type": "amp", "name": "amp", "page_size": 5, "max_pages_per_run": 50}
    p, (report,) = run_against(endless, entry)
    assert report.error is not None and report.error.kind == "page_limit"
    assert requests == 50 and value(p, "errors", kind="page_limit") == 1
    assert len(sink_of(p).evaluated) == 50 * 5  # what was read before the bound was evaluated


@pytest.mark.integration
def test_amp_that_ignores_end_time_stops_past_the_range() -> None:
    requests = 0

    async def past(request: web.Request) -> web.Response:
        """Full pages, each an hour later than the last: past `until` after the first."""
        nonlocal requests
        requests += 1
        if requests > LOOP_CAP:
            return web.json_response({"traces": [], "totalCount": 0})
        return _amp_answer(request, requests, int(SINCE * NS) + requests * 3000 * NS)

    p, (report,) = run_against(past, {"type": "amp", "name": "amp", "page_size": 5})
    assert report.error is None and requests == 2 and len(sink_of(p).evaluated) == 5


# --- otlp_files ------------------------------------------------------------------------------------


class StuckFeed:
    """A span feed that always says there is more and never moves on (its state stays the same)."""

    name = "files"
    more = True

    def __init__(self) -> None:
        self.reads = 0

    async def read(self, state: Any, limit: int) -> tuple[list[SpanRecord], list[LogRecord], Any]:
        self.reads += 1
        self.more = self.reads < LOOP_CAP
        return [span(f"{1:032x}", self.reads, int(T0 * NS))], [], {"offset": 7}

    async def close(self) -> None:
        return None


def test_a_span_feed_that_does_not_move_on_is_a_cursor_loop(tmp_path: Path) -> None:
    entry = OtlpFilesSourceConfig.model_validate({"type": "otlp_files", "name": "files", "directory": str(tmp_path)})
    feed = StuckFeed()
    p = Poller(entry, feed, MemoryCheckpoints(), Sink(), PollMetrics(CollectorRegistry()))
    report = asyncio.run(asyncio.wait_for(p.run(), RUN_TIMEOUT))
    assert report.error is not None and report.error.kind == "cursor_loop"
    assert feed.reads == 2 and value(p, "errors", kind="cursor_loop") == 1


def test_otlp_files_reads_are_bounded_per_run_and_the_next_run_goes_on(tmp_path: Path) -> None:
    lines = [otlp_document([span(f"{n + 1:032x}", 0, int(T0 * NS))]) for n in range(12)]

    (tmp_path / "traces.json").write_text("".join(json.dumps(line) + "\n" for line in lines))
    entry = OtlpFilesSourceConfig.model_validate({"type": "otlp_files", "name": "files", "directory": str(tmp_path),
                                                  "max_traces_per_run": 2, "max_pages_per_run": 3})  # fmt: skip
    sink = Sink()
    p = Poller(entry, make_source(entry), MemoryCheckpoints(), sink, PollMetrics(CollectorRegistry()))
    first = asyncio.run(p.run())
    assert first.error is not None and first.error.kind == "page_limit" and sink.fed == 6  # 3 reads of 2 spans
    for _ in range(3):
        asyncio.run(p.run())
    assert sink.fed == 12 and value(p, "errors", kind="page_limit") == 2  # each span once; the last run was short
