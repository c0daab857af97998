"""One poller per source across replicas: the PostgreSQL leases (session advisory locks on a real server, freed when
the holder's session ends or it stops answering past the lease) and the runner with leases (a standby does
nothing, a replica that takes a source over reads its checkpoint again, a holder that loses it mid-run stops
without saving)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
from prometheus_client import CollectorRegistry

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.config.sources import OtlpFilesSourceConfig
from monitor.metrics.poll import PollMetrics
from monitor.sources.checkpoints import MemoryCheckpoints
from monitor.sources.runner import Poller
from monitor.store.postgres.leases import PollLeases, lock_key
from tests.monitor.sources.test_runner import T0, Clock, Sink, Store, config, trace, value


# --- the PostgreSQL leases ------------------------------------------------------------------------
def test_a_source_is_held_by_one_replica_until_it_gives_it_up(postgres_url: str) -> None:
    async def scenario() -> None:
        a, b = PollLeases(postgres_url, 30), PollLeases(postgres_url, 30)
        try:
            assert await a.hold("jaeger") and await a.hold("jaeger")  # taken, then confirmed
            assert not await b.hold("jaeger")
            assert await b.hold("tempo")  # each source on its own
            assert not await a.hold("tempo")
            await a.close()  # a replica that stops (or dies: its session ends) frees its sources
            assert await b.hold("jaeger")
        finally:
            await a.close()
            await b.close()

    assert lock_key("jaeger") != lock_key("tempo")
    asyncio.run(scenario())


def test_a_holder_that_stops_answering_loses_the_source_after_the_lease(postgres_url: str) -> None:
    stuck, other = PollLeases(postgres_url, 1.0), PollLeases(postgres_url, 1.0)
    try:
        assert stuck._hold("files")  # no heartbeat: like a process that is stopped with its connection open
        assert not other._hold("files")
        deadline = time.monotonic() + 15
        while not other._hold("files") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert other._hold("files")  # the server ended the stuck session after the lease
        assert not stuck._hold("files")  # its session is gone; on a new one, another replica holds the source
    finally:
        stuck._drop()
        other._drop()


def test_the_heartbeat_keeps_a_holder_past_the_lease(postgres_url: str) -> None:
    async def scenario() -> None:
        holder, other = PollLeases(postgres_url, 1.0), PollLeases(postgres_url, 1.0)
        try:
            assert await holder.hold("files")
            await asyncio.sleep(2.5)  # more than twice the lease: only the heartbeat keeps the session
            assert not await other.hold("files")
            assert await holder.hold("files")
        finally:
            await holder.close()
            await other.close()

    asyncio.run(scenario())


# --- the runner with leases -----------------------------------------------------------------------
class Holder:
    """Which replica holds the source (scripted); `fail`: the database cannot be asked."""

    def __init__(self) -> None:
        self.replica: str | None = None
        self.fail: Exception | None = None
        self.after: int | None = None  # the holder loses the source after this many more answers


class Leases:
    def __init__(self, holder: Holder, replica: str) -> None:
        self.holder = holder
        self.replica = replica

    async def hold(self, source: str) -> bool:
        if self.holder.fail is not None:
            raise self.holder.fail
        if self.holder.after is not None:
            if self.holder.after == 0:
                self.holder.replica = None
            self.holder.after -= 1
        return self.holder.replica == self.replica

    async def close(self) -> None:
        pass


class Feed:
    """A span feed over a list that grows: its state is the offset read so far."""

    def __init__(self) -> None:
        self.name = "files"
        self.spans: list[SpanRecord] = []

    async def read(self, state: Any, limit: int) -> tuple[list[SpanRecord], list[LogRecord], Any]:
        start = state or 0
        return self.spans[start:], [], len(self.spans)

    async def close(self) -> None:
        pass


def span(n: int) -> SpanRecord:
    return SpanRecord(f"{n:032x}", f"{n:016x}", "", "root", start_time_unix_nano=int(T0 * 1e9))


def test_a_replica_that_takes_a_feed_over_goes_on_from_the_shared_checkpoint() -> None:
    holder, feed, shared = Holder(), Feed(), MemoryCheckpoints()  # the checkpoints every replica shares
    files = OtlpFilesSourceConfig.model_validate({"type": "otlp_files", "name": "files", "directory": "/nonexistent"})
    sinks = {name: Sink() for name in "ab"}
    pollers = {
        name: Poller(files, feed, shared, sinks[name], PollMetrics(CollectorRegistry()), leases=Leases(holder, name))
        for name in "ab"
    }

    def run_both() -> None:
        for poller in pollers.values():
            asyncio.run(poller.run())

    holder.replica, feed.spans = "b", [span(n) for n in range(3)]
    run_both()
    holder.replica = "a"
    feed.spans += [span(n) for n in range(3, 6)]
    run_both()
    holder.replica = "b"  # b held it before: what it remembers of the checkpoint is stale
    feed.spans += [span(n) for n in range(6, 8)]
    run_both()
    fed = [s.span_id for sink in sinks.values() for s in sink.fed]
    assert sorted(fed) == [f"{n:016x}" for n in range(8)]  # each span once
    assert [s.span_id for s in sinks["a"].fed] == [f"{n:016x}" for n in range(3, 6)]
    assert value(pollers["b"], "leader") == 1 and value(pollers["a"], "leader") == 0
    assert value(pollers["a"], "runs", status="ok") == 1  # a standby's turns are not runs


def test_a_standby_reads_nothing_and_reports_no_lag() -> None:
    store, sink, holder = Store(), Sink(), Holder()
    store.traces = [trace(n, T0 - 600 + n) for n in range(5)]
    holder.replica = "other"
    poller = Poller(config(), store, MemoryCheckpoints(), sink, PollMetrics(CollectorRegistry()), Clock(T0),
                    leases=Leases(holder, "me"))  # fmt: skip
    report = asyncio.run(poller.run())
    assert report.standby and store.calls == [] and sink.evaluated == []
    assert value(poller, "leader") == 0 and value(poller, "runs", status="ok") == 0
    assert poller.metrics is not None
    assert "agent_monitor_poll_lag_seconds" not in {
        s.name for metric in poller.metrics.lag.collect() for s in metric.samples
    }


def test_a_holder_that_loses_the_source_mid_run_stops_without_saving() -> None:
    store, sink, holder, checkpoints = Store(page=2), Sink(), Holder(), MemoryCheckpoints()
    store.traces = [trace(n, T0 - 600 + n) for n in range(6)]
    holder.replica, holder.after = "me", 2  # the run's start and its first page; then another replica has it
    poller = Poller(config(), store, checkpoints, sink, PollMetrics(CollectorRegistry()), Clock(T0),
                    leases=Leases(holder, "me"))  # fmt: skip
    report = asyncio.run(poller.run())
    assert report.standby and len(sink.evaluated) == 2  # the first page only
    assert checkpoints.checkpoints == {}  # the new holder's checkpoint is not overwritten
    assert value(poller, "leader") == 0


def test_a_database_that_cannot_be_asked_is_a_failed_run_of_kind_lease() -> None:
    store, sink, holder = Store(), Sink(), Holder()
    holder.fail = psycopg.OperationalError("connection refused")
    poller = Poller(config(), store, MemoryCheckpoints(), sink, PollMetrics(CollectorRegistry()), Clock(T0),
                    leases=Leases(holder, "me"))  # fmt: skip
    asyncio.run(poller.run())
    assert store.calls == [] and value(poller, "errors", kind="lease") == 1
    assert value(poller, "runs", status="error") == 1 and value(poller, "leader") == 0


def test_without_leases_every_replica_polls() -> None:
    store, sink = Store(), Sink()
    store.traces = [trace(n, T0 - 600 + n) for n in range(3)]
    poller = Poller(config(), store, MemoryCheckpoints(), sink, PollMetrics(CollectorRegistry()), Clock(T0))
    assert not asyncio.run(poller.run()).standby and len(sink.evaluated) == 3
    assert value(poller, "leader") == 1
