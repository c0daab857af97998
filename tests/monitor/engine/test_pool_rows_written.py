"""With the intake log on, the pool tells a trace finished (the log's `done`) only once its rows are written: while
another process holds the SQLite database locked, batches still come back (evaluation never waits past the
worker's 2 s for the database) but their traces are not finished; once the lock is released their rows are
written and the pool finishes them, asking the idle workers for their stores' reports. In worker processes (their
own connections to the store) and on the in-process thread (the daemon's store). A worker that dies meanwhile
takes its rows with it: its traces are let go."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from monitor.config import MonitorConfig
from monitor.engine.pool import EvaluationPool, WorkerSlot, process_slots, route, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.preflight import preflight
from monitor.store.sqlite import ResultStore
from tests.monitor.engine.test_pool import stored_trace_ids
from tests.support.completed_traces import synthetic_traces

pytestmark = pytest.mark.integration  # each test starts a process or a server

TRACES = 40


def logged_config(path: Path) -> MonitorConfig:
    return MonitorConfig.model_validate({"store": {"path": str(path)}, "intake": {"wal": {"enabled": True}}})


async def wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("workers", ["processes", "thread"])
def test_traces_are_finished_only_once_their_rows_are_written(tmp_path: Path, workers: str) -> None:
    path = tmp_path / "results.db"
    config = logged_config(path)
    store: ResultStore | None = None
    slots: list[WorkerSlot]
    if workers == "processes":
        slots = process_slots(config, 2)
    else:
        store = ResultStore(path, prune=False)
        store.hold_unwritten()  # as the daemon's store is with the log on and one in-process worker
        slots = thread_slot(TraceEvaluator(preflight(config).evaluators), store.write, store.settlement)
    finished: list[str] = []
    traces = synthetic_traces(TRACES)
    expected = {completed.trace_id for completed in traces}

    async def scenario() -> None:
        pool = EvaluationPool(slots, lambda tally: None, lambda reason, n: None, queue_size=10_000)
        pool.on_finished = finished.extend
        if store is not None:
            await store.start()
        await pool.start()
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock: every write waits
            for completed in traces:
                assert pool.submit(completed)
            await wait_until(lambda: pool.evaluated == TRACES, 60, "the batches did not come back")
            await asyncio.sleep(1.0)  # the idle workers are asked for their reports meanwhile
            assert finished == []  # evaluated, not written: none finished
            assert stored_trace_ids(path) == set()
            holder.execute("COMMIT")
            await wait_until(lambda: set(finished) == expected, 60, "the traces were not finished once written")
            assert stored_trace_ids(path) == expected
            assert len(finished) == TRACES  # each told once
        finally:
            with contextlib.suppress(sqlite3.Error):
                holder.execute("ROLLBACK")
            holder.close()
            await pool.shutdown(5.0)
            if store is not None:
                await store.shutdown(5.0)

    asyncio.run(scenario())


def test_a_worker_that_dies_holding_unwritten_rows_lets_its_traces_go_and_the_others_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its rows died with it: nothing will write them in this run, so its traces are finished (logged), not held
    until a restart; the other worker's traces still wait for their rows."""
    path = tmp_path / "results.db"
    slots = process_slots(logged_config(path), 2)
    finished: list[str] = []
    traces = synthetic_traces(TRACES)
    by_slot = [{c.trace_id for c in traces if route(c.trace_id, 2) == n} for n in (0, 1)]

    async def scenario() -> None:
        pool = EvaluationPool(slots, lambda tally: None, lambda reason, n: None, queue_size=10_000)
        pool.on_finished = finished.extend
        await pool.start()
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            for completed in traces:
                assert pool.submit(completed)
            await wait_until(lambda: pool.evaluated == TRACES, 60, "the batches did not come back")
            assert finished == []
            assert pool.slots[0].pid is not None
            os.kill(pool.slots[0].pid, signal.SIGKILL)  # idle, its traces' rows queued in it
            await wait_until(lambda: set(finished) == by_slot[0], 30, "the dead worker's traces were not let go")
            await asyncio.sleep(1.0)
            assert set(finished) == by_slot[0]  # the other worker's traces still wait
            holder.execute("COMMIT")
            await wait_until(lambda: set(finished) == by_slot[0] | by_slot[1], 60, "the others were not finished")
            assert stored_trace_ids(path) == by_slot[1]  # the dead worker's rows were lost with it
        finally:
            with contextlib.suppress(sqlite3.Error):
                holder.execute("ROLLBACK")
            holder.close()
            await pool.shutdown(5.0)

    asyncio.run(scenario())
    assert any("died with the rows of" in r.getMessage() for r in caplog.records)
