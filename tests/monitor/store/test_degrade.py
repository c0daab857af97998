"""A failing result store degrades: rows are dropped, failures counted, one log line per state change.

Tests run as root, so file permissions do not stop SQLite here: a store is made read-only with
`PRAGMA query_only=ON` on its connection, full with `PRAGMA max_page_count`, broken with a file that is not a
database, and removed with os.unlink.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from pathlib import Path

import pytest

from monitor.engine.batch_run import BatchRun
from monitor.engine.recorder import ResultRecorder
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.review.models import ResultFilter
from monitor.review.of_store import reader_of
from monitor.review.sqlite_reader import SQLiteReviewReader
from monitor.store.health import StoreHealth, StoreReport, StoreUnavailable
from monitor.store.sqlite import ResultStore
from tests.support.completed_traces import synthetic_traces
from tests.support.store_builders import failing, outcome, row


class Recorded:
    """StoreHealth callbacks that remember what they were told."""

    def __init__(self) -> None:
        self.errors: dict[str, int] = {}
        self.changes: list[bool] = []

    def health(self) -> StoreHealth:
        return StoreHealth(self.error, self.changes.append)

    def error(self, operation: str, count: int) -> None:
        self.errors[operation] = self.errors.get(operation, 0) + count


def set_pragma(store: ResultStore, pragma: str) -> None:
    with store._lock:
        assert store._db is not None
        store._db.execute(f"PRAGMA {pragma}")


def store_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "monitor.store.sqlite" and r.levelno >= logging.WARNING]


def test_a_read_only_store_counts_each_failed_batch_and_logs_once_each_way(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen = Recorded()
    store = ResultStore(tmp_path / "r.db", health=seen.health())

    async def scenario() -> None:
        await store.start()
        store.write([outcome("1" * 32, row("a", False))])
        store.flush()
        set_pragma(store, "query_only=ON")  # SQLITE_READONLY on every write from here
        for n in range(2, 7):
            store.write([outcome(f"{n:032x}", row("a", False))])
            store.flush()  # one batch each
        assert not store.available and seen.errors == {"write": 5} and seen.changes == [False]
        set_pragma(store, "query_only=OFF")
        store.write([outcome("9" * 32, row("a", False))])
        store.flush()
        await store.shutdown(5.0)

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert seen.changes == [False, True] and store.available
    lines = store_lines(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("result store unavailable: write failed in the daemon: OperationalError: attempt to")
    assert lines[1].startswith("result store available again")
    with sqlite3.connect(tmp_path / "r.db") as db:
        assert {t for (t,) in db.execute("SELECT trace_id FROM traces")} == {"1" * 32, "9" * 32}


def test_a_full_store_drops_the_rows_and_goes_on(tmp_path: Path) -> None:
    seen = Recorded()
    store = ResultStore(tmp_path / "r.db", health=seen.health())
    store.write([outcome("1" * 32, row("a", False))])
    with store._lock:
        assert store._db is not None
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL past what is there
    store.write([outcome(f"{n:032x}", row("a", False), given="x" * 4000) for n in range(2, 40)])
    assert seen.errors == {"write": 1} and not store.available
    assert store.count("traces") == 1
    store.close()


def test_a_store_that_cannot_be_opened_starts_unavailable_and_is_opened_once_it_can_be(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    path.write_bytes(b"this is not a database, " * 200)
    seen = Recorded()
    store = ResultStore(path, health=seen.health())  # no exception: the daemon starts all the same
    assert not store.available and seen.errors == {"open": 1}
    store.write([outcome("1" * 32, row("a", False))])  # dropped (a reopen is not due yet)
    assert seen.errors == {"open": 1, "write": 1}
    with pytest.raises(StoreUnavailable):
        failing(store)
    path.unlink()  # the operator moves the broken file away
    store.reopen_seconds = 0.0
    store._next_open = 0.0
    store.write([outcome("2" * 32, row("a", False))])
    assert store.available and seen.changes == [False, True]
    assert [r["trace_id"] for r in failing(store)] == ["2" * 32]
    store.close()


@pytest.mark.parametrize("leftovers", [False, True], ids=["all-files-removed", "wal-and-shm-left"])
def test_a_store_removed_while_open_is_created_again(tmp_path: Path, leftovers: bool) -> None:
    path = tmp_path / "r.db"
    seen = Recorded()
    store = ResultStore(path, health=seen.health())
    store.write([outcome("1" * 32, row("a", False))])
    for name in (path, *([] if leftovers else [Path(f"{path}-wal"), Path(f"{path}-shm")])):
        os.unlink(name)  # SQLite would go on writing to the removed file, silently
    store.write([outcome("2" * 32, row("a", False))])
    assert seen.errors == {"open": 1} and seen.changes == [False, True] and store.available
    assert store.count("traces") == 1  # a new, empty store took the row
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [t for (t,) in db.execute("SELECT trace_id FROM traces")] == ["2" * 32]


def test_reads_that_fail_are_counted_and_raise_store_unavailable(tmp_path: Path) -> None:
    seen = Recorded()
    path = tmp_path / "r.db"
    store = ResultStore(path, health=seen.health())
    reader = reader_of(store)
    assert reader.results(ResultFilter(), 10).items == []
    store.close()
    path.unlink()
    with pytest.raises(StoreUnavailable):
        reader.results(ResultFilter(), 10)  # no file: counted; the state is the store's (open, write) to tell
    assert seen.errors == {"read": 1} and seen.changes == []
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"garbage " * 1000)
    with pytest.raises(StoreUnavailable, match="file is not a database"):
        SQLiteReviewReader(garbage, health=seen.health()).trace("1" * 32)
    assert seen.errors == {"read": 2} and seen.changes == [False]  # a read that failed: failing until one works


def test_a_worker_whose_store_fails_still_returns_its_batch_metrics(tmp_path: Path) -> None:
    """What a worker process runs (BatchRun over its own store): its result carries the metrics tally and the
    store's health report side by side; the report reaches the daemon's StoreHealth (as the pool hands it over),
    the tally the metrics."""
    health = StoreHealth(quiet=True)
    store = ResultStore(tmp_path / "r.db", prune=False, health=health)
    run = BatchRun(TraceEvaluator([], store_results="all"), store.write, health.take_report)
    metrics = MetricsExporter()
    daemon_health = StoreHealth(metrics.store.error, on_lost=metrics.store.lost)
    metrics.store.observe(daemon_health)  # as the daemon wires it: availability read at scrape time
    recorder = ResultRecorder(metrics.recording, metrics.results.apply_tally, metrics.evaluation.dropped)

    def batch(count: int) -> tuple[MetricsTally, StoreReport | None]:
        result = run(synthetic_traces(count))
        tally = MetricsTally.from_wire(result.tally)
        recorder.record(tally)
        assert result.store is not None
        daemon_health.apply_report(result.store)
        return tally, result.store

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert batch(3)[1] == ({}, {}, {}) and sample("agent_monitor_review_available") == 1
    set_pragma(store, "query_only=ON")
    failed, report = batch(4)
    assert failed.evaluated == 4 and failed.traces  # the batch's metrics are all there
    assert report is not None
    errors, failing, _ = report
    assert errors == {"write": 1} and "readonly" in failing["write"]
    assert sample("agent_monitor_store_errors_total", operation="write") == 1
    assert sample("agent_monitor_review_available") == 0
    assert sample("agent_monitor_traces_evaluated_total") == 7
    batch(2)
    assert sample("agent_monitor_store_errors_total", operation="write") == 2
    set_pragma(store, "query_only=OFF")
    recovered_at = time.time()
    assert batch(1)[1] == ({}, {}, {})
    assert sample("agent_monitor_review_available") == 1
    with sqlite3.connect(tmp_path / "r.db") as db:  # the batch after the recovery is stored
        assert db.execute("SELECT COUNT(*) FROM traces WHERE created_at >= ?", (recovered_at,)).fetchone()[0] == 1
    daemon_health.failed("read", "the daemon's own failure")
    batch(1)  # a worker's success clears only its own
    assert sample("agent_monitor_review_available") == 0
    store.close()
