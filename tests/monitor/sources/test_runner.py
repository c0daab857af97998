"""The poll runner against a scripted trace store: windows, settle delay, overlap, checkpoints on SQLite and
PostgreSQL, a restart in the middle of a backlog, traces that also arrive through the receivers, failures."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.config.sources import JaegerSourceConfig, OtlpFilesSourceConfig
from monitor.metrics.poll import PollMetrics
from monitor.sources.base import PolledTrace, SourceError
from monitor.sources.checkpoints import Checkpoint, CheckpointStore, MemoryCheckpoints, StoreCheckpoints
from monitor.sources.runner import Poller
from tests.support.backends import Backend

T0 = 1_700_000_000.0


def trace(n: int, start: float, end: float | None = None) -> PolledTrace:
    span = SpanRecord(f"{n:032x}", f"{n:016x}", "", "root", start_time_unix_nano=int(start * 1e9))
    return PolledTrace(f"{n:032x}", start, start + 1 if end is None else end, [span])


class Store:
    """A scripted trace store: the traces it holds now; pages of `page` traces, in a scrambled order."""

    def __init__(self, page: int = 3) -> None:
        self.name = "store"
        self.traces: list[PolledTrace] = []
        self.page = page
        self.calls: list[tuple[float, float]] = []
        self.fail: SourceError | None = None

    async def pages(self, since: float, until: float, guard: Any = None) -> AsyncIterator[list[PolledTrace]]:
        self.calls.append((since, until))
        if self.fail is not None:
            raise self.fail
        found = sorted((t for t in self.traces if since <= t.start < until), key=lambda t: (-t.start, t.trace_id))
        for i in range(0, len(found), self.page):
            yield found[i : i + self.page]

    async def close(self) -> None:
        pass


class Sink:
    def __init__(self) -> None:
        self.evaluated: list[str] = []
        self.received: set[str] = set()
        self.fail_after: int | None = None
        self.stop_after: int | None = None  # a stop after this many traces of a page were handed over
        self.fed: list[SpanRecord] = []

    def claim(self, trace_ids: list[str]) -> list[str]:
        return [t for t in trace_ids if t not in self.received]

    async def evaluate(self, traces: list[PolledTrace], stop: Any = lambda: False) -> list[PolledTrace]:
        if self.fail_after is not None and len(self.evaluated) + len(traces) > self.fail_after:
            raise RuntimeError("the daemon was killed")
        handed = traces[: self.stop_after] if self.stop_after is not None else traces
        self.evaluated += [t.trace_id for t in handed]
        return handed

    async def wait_for_room(self, stop: Any = lambda: False) -> None:
        return None

    def feed(self, spans: list[SpanRecord], logs: list[LogRecord]) -> None:
        self.fed += spans


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def config(**overrides: Any) -> JaegerSourceConfig:
    values: dict[str, Any] = {"type": "jaeger", "name": "store", "url": "http://127.0.0.1:1", "service": "s",
                              "settle_delay": 30, "overlap": 60, "backfill": 3600}  # fmt: skip
    values.update(overrides)
    return JaegerSourceConfig.model_validate(values)


def poller(store: Store, checkpoints: CheckpointStore, sink: Sink, clock: Clock, **overrides: Any) -> Poller:
    return Poller(config(**overrides), store, checkpoints, sink, PollMetrics(CollectorRegistry()), clock)


def value(p: Poller, metric: str, **labels: str) -> float:
    assert p.metrics is not None
    sample = getattr(p.metrics, metric).labels(source=p.name, **labels)
    return float(sample._value.get())


def test_runs_read_each_trace_once_as_the_window_moves() -> None:
    store, sink, clock = Store(), Sink(), Clock(T0)
    store.traces = [trace(n, T0 - 3000 + n * 100) for n in range(20)]  # the last ones within the settle delay
    p = poller(store, MemoryCheckpoints(), sink, clock)
    first = asyncio.run(p.run())
    assert store.calls == [(T0 - 3600 - 60, T0 - 30)]  # now - backfill - overlap .. now - settle
    assert sorted(sink.evaluated) == [f"{n:032x}" for n in range(20) if T0 - 3000 + n * 100 < T0 - 30]
    assert first.error is None and value(p, "lag") == 30
    clock.now += 60
    store.traces.append(trace(99, T0 - 10))  # arrived since (and settled by now)
    asyncio.run(p.run())
    assert store.calls[-1] == (T0 - 30 - 60, T0 + 30)  # from the mark, minus the overlap
    assert sorted(sink.evaluated) == sorted({*sink.evaluated})  # none twice
    assert f"{99:032x}" in sink.evaluated and len(sink.evaluated) == 21
    assert value(p, "runs", status="ok") == 2 and value(p, "traces") == 21


def test_a_trace_still_being_written_waits_and_holds_the_mark() -> None:
    store, sink, clock = Store(), Sink(), Clock(T0)
    store.traces = [trace(1, T0 - 600), trace(2, T0 - 500, end=T0 - 5)]  # 2 ended within the settle delay
    checkpoints = MemoryCheckpoints()
    p = poller(store, checkpoints, sink, clock)
    report = asyncio.run(p.run())
    assert sink.evaluated == [f"{1:032x}"] and report.unfinished == 1
    assert checkpoints.load("store") == Checkpoint(T0 - 500, None)  # held at the unfinished trace's start
    clock.now += 60
    asyncio.run(p.run())
    assert sink.evaluated == [f"{1:032x}", f"{2:032x}"]


def test_a_late_arrival_inside_the_overlap_is_read_and_the_seen_ones_are_not_read_again() -> None:
    store, sink, clock = Store(), Sink(), Clock(T0)
    store.traces = [trace(1, T0 - 70)]
    p = poller(store, MemoryCheckpoints(), sink, clock)
    asyncio.run(p.run())  # mark: T0 - 30; the next run reads from T0 - 80
    store.traces.append(trace(2, T0 - 50))  # indexed late: it started before the mark
    clock.now += 10
    report = asyncio.run(p.run())
    assert sink.evaluated == [f"{1:032x}", f"{2:032x}"] and report.already_seen == 1


def test_traces_the_receivers_have_are_left_to_them_and_not_read_again() -> None:
    store, sink, clock = Store(), Sink(), Clock(T0)
    store.traces = [trace(1, T0 - 100), trace(2, T0 - 90)]
    sink.received = {f"{2:032x}"}
    p = poller(store, MemoryCheckpoints(), sink, clock)
    report = asyncio.run(p.run())
    assert sink.evaluated == [f"{1:032x}"] and report.received == 1
    sink.received.clear()
    clock.now += 10
    asyncio.run(p.run())  # in the overlap: seen, so not evaluated here either
    assert sink.evaluated == [f"{1:032x}"]


def test_a_restart_in_the_middle_of_a_backlog_evaluates_every_trace_exactly_once(backend: Backend) -> None:
    store, clock = Store(page=4), Clock(T0)
    store.traces = [trace(n, T0 - 3000 + n) for n in range(50)]
    result_store = backend.store()
    sink = Sink()
    first = poller(store, StoreCheckpoints(result_store), sink, clock, max_traces_per_run=12)
    report = asyncio.run(first.run())
    assert report.stopped_early and len(sink.evaluated) == 12
    sink.fail_after = 20  # the next run dies in the middle of a page
    report = asyncio.run(first.run())
    assert report.error is None and value(first, "errors", kind="internal") == 1
    done_before_crash = list(sink.evaluated)
    result_store.close()

    restarted_store = backend.store()  # a new process: everything from the database
    sink2 = Sink()
    sink2.evaluated = []
    again = poller(store, StoreCheckpoints(restarted_store), sink2, clock, max_traces_per_run=1000)
    asyncio.run(again.run())
    everything = done_before_crash + sink2.evaluated
    assert sorted(everything) == sorted(t.trace_id for t in store.traces)  # each once across the runs
    restarted_store.close()


def test_a_failing_store_is_counted_logged_once_and_the_checkpoint_stays(caplog: pytest.LogCaptureFixture) -> None:
    store, sink, clock = Store(), Sink(), Clock(T0)
    store.traces = [trace(1, T0 - 100)]
    checkpoints = MemoryCheckpoints()
    p = poller(store, checkpoints, sink, clock)
    store.fail = SourceError("server", "GET http://jaeger/api/v3/traces: 503")
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            report = asyncio.run(p.run())
            assert report.error is store.fail
        store.fail = None
        asyncio.run(p.run())
    assert value(p, "errors", kind="server") == 3 and value(p, "runs", status="error") == 3
    assert value(p, "runs", status="ok") == 1 and sink.evaluated == [f"{1:032x}"]
    messages = [r.getMessage() for r in caplog.records if r.name == "monitor.sources.runner"]
    assert len([m for m in messages if "failed (server)" in m]) == 1 and "polling store works again" in messages


def test_a_checkpoint_store_that_fails_is_a_checkpoint_error_and_nothing_is_lost() -> None:
    class Broken(MemoryCheckpoints):
        def unseen(self, source: str, trace_ids: Any) -> set[str]:
            raise OSError("disk I/O error")

    store, sink, clock = Store(), Sink(), Clock(T0)
    store.traces = [trace(1, T0 - 100)]
    p = poller(store, Broken(), sink, clock)
    asyncio.run(p.run())
    assert value(p, "errors", kind="checkpoint") == 1 and sink.evaluated == []


def test_a_span_feed_hands_its_spans_to_the_assembler_and_keeps_its_state() -> None:
    class Feed:
        name = "files"

        def __init__(self) -> None:
            self.more = False
            self.reads: list[Any] = []

        async def read(self, state: Any, limit: int) -> tuple[list[SpanRecord], list[LogRecord], Any]:
            self.reads.append(state)
            offset = (state or {}).get("offset", 0)
            self.more = offset < 2
            return [trace(offset, T0).spans[0]], [], {"offset": offset + 1}

        async def close(self) -> None:
            pass

    sink, checkpoints = Sink(), MemoryCheckpoints()
    entry = OtlpFilesSourceConfig.model_validate({"type": "otlp_files", "name": "files", "directory": "/tmp"})
    feed = Feed()
    p = Poller(entry, feed, checkpoints, sink, PollMetrics(CollectorRegistry()))
    asyncio.run(p.run())
    assert feed.reads == [None, {"offset": 1}, {"offset": 2}] and len(sink.fed) == 3
    assert checkpoints.load("files") == Checkpoint(None, {"offset": 3})
    p2 = Poller(entry, feed, checkpoints, sink, PollMetrics(CollectorRegistry()))  # a restart resumes
    asyncio.run(p2.run())
    assert feed.reads[-1] == {"offset": 3}


def test_the_store_checkpoints_round_trip_and_forget_what_is_past_the_overlap(backend: Backend) -> None:
    result_store = backend.store()
    checkpoints = StoreCheckpoints(result_store)
    assert checkpoints.load("a") is None
    checkpoints.record("a", [("t1", 100.0), ("t2", 200.0)])
    checkpoints.record("a", [("t2", 200.0)])  # again: no error, no duplicate
    checkpoints.record("b", [("t1", 100.0)])
    assert checkpoints.unseen("a", ["t1", "t2", "t3"]) == {"t3"}
    checkpoints.save("a", Checkpoint(250.0, {"files": {"x": 3}}), forget_before=150.0)
    assert checkpoints.load("a") == Checkpoint(250.0, {"files": {"x": 3}})
    assert checkpoints.unseen("a", ["t1", "t2"]) == {"t1"} and checkpoints.unseen("b", ["t1"]) == set()
    checkpoints.save("a", Checkpoint(300.0, None))
    assert checkpoints.load("a") == Checkpoint(300.0, None)
    assert checkpoints.unseen("a", [f"{n}" for n in range(1200)]) == {f"{n}" for n in range(1200)}  # chunked
    result_store.close()


def test_a_stop_in_the_middle_of_a_page_remembers_what_was_handed_over_and_nothing_else() -> None:
    store, sink, clock = Store(page=10), Sink(), Clock(T0)
    store.traces = [trace(n, T0 - 1000 + n) for n in range(10)]
    checkpoints = MemoryCheckpoints()
    p = poller(store, checkpoints, sink, clock)
    sink.stop_after = 4  # the daemon stops after the pool took 4 of the page's 10 traces
    report = asyncio.run(p.run())
    assert report.evaluated == 4 and report.stopped_early
    assert checkpoints.load("store") == Checkpoint(T0 - 3600, None)  # the mark stays: a first run's start
    sink.stop_after = None
    again = poller(store, checkpoints, Sink(), clock)  # the next start
    asyncio.run(again.run())
    assert sorted(sink.evaluated + again.sink.evaluated) == sorted(t.trace_id for t in store.traces)  # type: ignore[attr-defined]


def test_the_lag_grows_while_a_source_fails() -> None:
    store, sink, clock = Store(), Sink(), Clock(T0)
    p = poller(store, MemoryCheckpoints(), sink, clock)
    store.fail = SourceError("connection", "GET http://jaeger/api/v3/traces: refused")
    asyncio.run(p.run())  # failing from the start: behind since the first run's start, now - backfill
    assert value(p, "lag") == 3600
    clock.now += 60
    asyncio.run(p.run())
    assert value(p, "lag") == 3660
    store.fail = None
    asyncio.run(p.run())
    assert value(p, "lag") == 30  # caught up: the settle delay
    store.fail = SourceError("server", "GET http://jaeger/api/v3/traces: 503")
    for _ in range(3):
        clock.now += 60
        asyncio.run(p.run())
    assert value(p, "lag") == 30 + 180  # since the last saved checkpoint


def test_the_lag_of_a_failing_span_feed_grows_from_its_last_good_read(tmp_path: Any) -> None:
    entry = OtlpFilesSourceConfig.model_validate({"type": "otlp_files", "name": "files", "directory": str(tmp_path)})
    clock = Clock(T0)
    from monitor.sources.otlp_files import OtlpFilesFeed

    p = Poller(entry, OtlpFilesFeed(entry), MemoryCheckpoints(), Sink(), PollMetrics(CollectorRegistry()), clock)
    asyncio.run(p.run())
    assert value(p, "lag") == 0
    tmp_path.rmdir()  # the directory is gone: every run fails (kind io)
    for _ in range(2):
        clock.now += 5
        asyncio.run(p.run())
    assert value(p, "errors", kind="io") == 2 and value(p, "lag") == 10


class OrderedStore(Store):
    """A store that pages in ascending start time, each page a page request of the run's guard."""

    ordered = True

    async def pages(self, since: float, until: float, guard: Any = None) -> AsyncIterator[list[PolledTrace]]:
        self.calls.append((since, until))
        found = sorted((t for t in self.traces if since <= t.start < until), key=lambda t: (t.start, t.trace_id))
        for i in range(0, len(found), self.page):
            if guard is not None:
                guard.page("GET store")
            yield found[i : i + self.page]


def test_a_run_stopped_at_its_page_bound_keeps_what_it_covered_and_the_next_run_goes_on() -> None:
    store, sink, clock = OrderedStore(page=4), Sink(), Clock(T0)
    store.traces = [trace(n, T0 - 3000 + 10 * n) for n in range(50)]
    checkpoints = MemoryCheckpoints()
    p = poller(store, checkpoints, sink, clock, max_pages_per_run=3)
    first = asyncio.run(p.run())
    assert first.error is not None and first.error.kind == "page_limit" and len(sink.evaluated) == 12
    mark = checkpoints.load("store")
    assert mark is not None and mark.mark == T0 - 3000 + 110  # the latest start it covered, not where it began
    for _ in range(20):  # each run re-reads the overlap (6 traces) and then moves on
        clock.now += 1
        if asyncio.run(p.run()).error is None:
            break
    assert sorted(sink.evaluated) == sorted(t.trace_id for t in store.traces)  # each once, none twice
    assert len(store.calls) <= 10 and store.calls[1][0] == T0 - 3000 + 110 - 60  # from the mark, less the overlap
