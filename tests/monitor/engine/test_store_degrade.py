"""The daemon with a failing result store: evaluation and metrics go on, the failure is counted and visible.

Tests run as root (file permissions do not stop SQLite): the store is made read-only with `PRAGMA
query_only=ON` on the daemon store's connection, and broken with a file that is not a database (which the
worker processes, with their own connections, cannot open either).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from monitor.config import MonitorConfig
from monitor.daemon import Daemon
from monitor.engine.pool import EvaluationPool, process_slots
from monitor.engine.recorder import ResultRecorder
from monitor.metrics import MetricsExporter
from monitor.review.models import ResultFilter
from monitor.store.health import StoreHealth
from tests.support.completed_traces import metric_total, synthetic_traces


def daemon(store_path: Path, workers: int = 1) -> Daemon:
    config = MonitorConfig.model_validate(
        {
            "receivers": {"grpc": {"host": "127.0.0.1", "port": 0}, "http": {"host": "127.0.0.1", "port": 0}},
            "metrics": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(store_path)},
            "intake": {"wal": {"enabled": False}},  # the degrade without the log (with it: test_kept_writes)
            "evaluation": {"workers": workers},
        }
    )
    return Daemon(config)


def sample(d: Daemon, name: str, **labels: str) -> float | None:
    return d.metrics.registry.get_sample_value(name, labels)


async def evaluate(d: Daemon, traces: list) -> None:
    """Submit, wait until evaluated and what the writer thread was given is written."""
    target = d.evaluated + len(traces)
    for completed in traces:
        assert d.pool.submit(completed)
    deadline = time.monotonic() + 60
    while d.evaluated < target:
        assert time.monotonic() < deadline, "traces not evaluated"
        await asyncio.sleep(0.02)
    assert d.store is not None
    await asyncio.to_thread(d.store.flush)


def set_query_only(d: Daemon, on: bool) -> None:
    assert d.store is not None
    with d.store._lock:
        assert d.store._db is not None
        d.store._db.execute(f"PRAGMA query_only={'ON' if on else 'OFF'}")


@pytest.mark.integration
def test_a_store_made_read_only_mid_run_is_counted_and_recovers(tmp_path: Path) -> None:
    d = daemon(tmp_path / "results.db")
    traces = synthetic_traces(40)

    async def scenario() -> None:
        await d.start()
        try:
            await evaluate(d, traces[:10])
            assert sample(d, "agent_monitor_review_available") == 1
            assert sample(d, "agent_monitor_store_errors_total", operation="write") == 0
            set_query_only(d, True)
            await evaluate(d, traces[10:20])
            await evaluate(d, traces[20:30])
            assert sample(d, "agent_monitor_traces_evaluated_total") == 30  # evaluation went on
            assert metric_total(d, "agent_eval_results_total", evaluator="latency") == 30
            assert (sample(d, "agent_monitor_store_errors_total", operation="write") or 0) >= 2
            assert sample(d, "agent_monitor_review_available") == 0
            set_query_only(d, False)
            await evaluate(d, traces[30:])
            # Every store operation that failed must succeed again: the results' writes at once, the open
            # conversations' (kept in the store too) at the tracker's next check, within a second.
            for _ in range(100):
                if sample(d, "agent_monitor_review_available") == 1:
                    break
                await asyncio.sleep(0.05)
            assert sample(d, "agent_monitor_review_available") == 1
            assert d.review is not None
            stored = {i.trace_id for i in d.review.results(ResultFilter(evaluator="latency"), 100).items}
            assert stored == {t.trace_id for t in traces[:10] + traces[30:]}  # the read-only time's rows are lost
        finally:
            await d.shutdown(5)

    asyncio.run(scenario())


@pytest.mark.integration
def test_the_daemon_starts_with_a_store_that_cannot_be_opened(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.write_bytes(b"not a database " * 500)
    d = daemon(path)
    assert d.store is not None and not d.store.available

    async def scenario() -> None:
        await d.start()
        try:
            await evaluate(d, synthetic_traces(5))
            assert sample(d, "agent_monitor_traces_evaluated_total") == 5
            assert sample(d, "agent_monitor_review_available") == 0
            assert sample(d, "agent_monitor_store_errors_total", operation="open") == 1
            assert (sample(d, "agent_monitor_store_errors_total", operation="write") or 0) >= 1  # each batch
        finally:
            await d.shutdown(5)

    asyncio.run(scenario())


@pytest.mark.integration
def test_the_daemon_counts_the_store_failures_its_worker_processes_report(tmp_path: Path) -> None:
    """With worker processes the daemon writes no rows itself: every write error it counts is one a worker's store
    reported, through the pool's own store report path (`on_store_report`), not the metrics tally."""
    path = tmp_path / "results.db"
    path.write_bytes(b"not a database " * 500)
    d = daemon(path, workers=2)
    assert d.store is not None and not d.store.available

    async def scenario() -> None:
        await d.start()
        try:
            await evaluate(d, synthetic_traces(20))
            assert sample(d, "agent_monitor_traces_evaluated_total") == 20
            assert (sample(d, "agent_monitor_store_errors_total", operation="write") or 0) >= 1
            assert (sample(d, "agent_monitor_store_errors_total", operation="open") or 0) >= 3  # the daemon + 2 workers
            assert sample(d, "agent_monitor_review_available") == 0
            assert d.store_health.failing().get("write")  # the workers' failing write, beside the daemon's open
        finally:
            await d.shutdown(5)

    asyncio.run(scenario())


def test_a_disabled_store_means_no_review(tmp_path: Path) -> None:
    config = MonitorConfig.model_validate({"store": {"enabled": False}, "evaluation": {"workers": 1}})
    d = Daemon(config)
    assert d.store is None and d.review is None
    assert d.metrics.registry.get_sample_value("agent_monitor_review_available") == 0


@pytest.mark.integration
def test_worker_processes_report_a_store_they_cannot_open_and_evaluate_all_the_same(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.write_bytes(b"not a database " * 500)
    config = MonitorConfig.model_validate({"store": {"path": str(path)}})
    metrics = MetricsExporter()
    health = StoreHealth(metrics.store.error, on_lost=metrics.store.lost)
    metrics.store.observe(health)  # as the daemon wires it: availability read at scrape time
    recorder = ResultRecorder(metrics.recording, metrics.results.apply_tally, metrics.evaluation.dropped)

    async def scenario() -> int:
        pool = EvaluationPool(
            process_slots(config, 2), recorder.record, lambda reason, n: None, on_store_report=health.apply_report
        )
        await pool.start()
        try:
            for completed in synthetic_traces(60):
                assert pool.submit(completed)
            return await pool.drain(120)
        finally:
            await pool.shutdown(5.0)

    assert asyncio.run(scenario()) == 0
    value = metrics.registry.get_sample_value
    assert value("agent_monitor_traces_evaluated_total") == 60
    assert value("agent_monitor_store_errors_total", {"operation": "open"}) == 2  # one per worker process
    assert (value("agent_monitor_store_errors_total", {"operation": "write"}) or 0) >= 2
    assert value("agent_monitor_review_available") == 0
