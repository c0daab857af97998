"""A PostgreSQL server that hangs (every one of its processes stopped with SIGSTOP: it accepts TCP connections
in the kernel and answers nothing, enforcing none of its own timeouts) while the daemon runs with two evaluation
worker processes writing to it: traces go on being evaluated and the metrics move, what could not be written is
counted, a review read answers (unavailable) in bounded time, and after SIGCONT the store works again."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from monitor.config import MonitorConfig
from monitor.daemon import Daemon
from monitor.review.models import ResultFilter
from monitor.store.health import StoreUnavailable
from tests.support.completed_traces import metric_total, synthetic_traces
from tests.support.pgserver import PostgresServer, running_server

pytestmark = pytest.mark.integration

STOPPED_SECONDS = 15.0  # past the client-side deadline (statement_timeout 1 s + 5 s) more than twice
BATCH_SECONDS = 10.0  # what a batch of traces may take to be evaluated while the server hangs

LOST = "agent_monitor_store_results_lost_total"  # results the store could not write, for good


def server_processes(server: PostgresServer) -> list[int]:
    """The postmaster and every process it started."""
    assert server.process is not None
    root = server.process.pid
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == root:
                children.append(int(entry))
    return [root, *children]


@contextmanager
def stopped(server: PostgresServer) -> Iterator[None]:
    """Every process of the server stopped (the postmaster first: it forks no more), continued at the end."""
    pids = server_processes(server)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in reversed(pids):
            os.kill(pid, signal.SIGCONT)


def stored_traces(url: str) -> int:
    with psycopg.connect(url, connect_timeout=5) as db:
        return int(db.execute("SELECT COUNT(*) FROM traces").fetchone()[0])  # type: ignore[index]


def test_a_hung_postgresql_never_stops_evaluation_and_the_store_recovers_after_it(tmp_path: Path) -> None:
    with running_server() as server:
        url = server.new_database()
        config = MonitorConfig.model_validate(
            {
                "receivers": {"grpc": {"host": "127.0.0.1", "port": 0}, "http": {"host": "127.0.0.1", "port": 0}},
                "metrics": {"host": "127.0.0.1", "port": 0},
                "store": {
                    "url": url,
                    **{"statement_timeout": "1s", "connect_timeout": "1s", "lock_timeout": "1s"},
                    "reopen_interval": "3s",  # the default 30 s would make this test wait for it
                },
                "intake": {"wal": {"enabled": False}},  # the degrade without the log (with it: test_kept_writes)
                "evaluation": {"workers": 2, "timeout": "5s"},
            }
        )
        d = Daemon(config)
        traces = synthetic_traces(300)
        value = d.metrics.registry.get_sample_value

        async def evaluate(batch: list, within: float) -> None:
            assert batch, "more traces needed"
            target = d.evaluated + len(batch)
            for completed in batch:
                assert d.pool.submit(completed)
            deadline = time.monotonic() + within
            while d.evaluated < target:
                assert time.monotonic() < deadline, f"{target - d.evaluated} traces not evaluated within {within}s"
                await asyncio.sleep(0.05)

        async def scenario() -> None:
            await d.start()
            try:
                await evaluate(traces[:20], 120)  # the workers start, and connect
                deadline = time.monotonic() + 30
                while stored_traces(url) < 20:
                    assert time.monotonic() < deadline, "the first traces were not stored"
                    await asyncio.sleep(0.2)
                assert value("agent_monitor_review_available") == 1
                assert d.review is not None
                with stopped(server):
                    started = time.monotonic()
                    sent = 20
                    while time.monotonic() - started < STOPPED_SECONDS:
                        await evaluate(traces[sent : sent + 5], BATCH_SECONDS)  # evaluation goes on
                        sent += 5
                        await asyncio.sleep(1.0)
                    assert value("agent_monitor_traces_evaluated_total") == sent  # and the metrics move
                    read_started = time.monotonic()
                    with pytest.raises(StoreUnavailable):  # a review read is answered, not held
                        await asyncio.wait_for(asyncio.to_thread(d.review.results, ResultFilter(), 10), STOPPED_SECONDS)
                    assert time.monotonic() - read_started < STOPPED_SECONDS
                    await evaluate(traces[sent : sent + 10], BATCH_SECONDS)  # the last reports come back
                    sent += 10
                    assert metric_total(d, LOST) > 0  # what could not be written is counted
                    assert value("agent_monitor_review_available") == 0
                # Continued: the stores reopen (every `reopen_interval` at most) and new traces are stored again.
                before = stored_traces(url)
                deadline = time.monotonic() + 90
                while True:
                    await evaluate(traces[sent : sent + 5], 60)
                    sent += 5
                    if stored_traces(url) > before and value("agent_monitor_review_available") == 1:
                        break
                    assert time.monotonic() < deadline and sent < len(traces), "the store did not recover"
                    await asyncio.sleep(1.0)
                assert len(d.review.results(ResultFilter(), 10).items) > 0
            finally:
                await d.shutdown(10)

        asyncio.run(scenario())
