"""The evaluation pool: worker processes give what in-process evaluation gives, survive a crash, drain."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import math
import os
import signal
import sqlite3
import time

import pytest

from monitor.config import MonitorConfig
from monitor.engine.pool import EvaluationPool, process_slots, route, stall_limit, thread_slot
from monitor.engine.recorder import ResultRecorder
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.preflight import preflight
from monitor.store.sqlite import ResultStore
from tests.support.completed_traces import corpus_traces, synthetic_traces

TIMING = ("agent_monitor_evaluation_seconds", "agent_monitor_trace_delay_seconds")


def exposition_without_timings(metrics: MetricsExporter) -> dict[str, float]:
    """Every sample of the exposition but the timings, by its name and labels (sums compared to float precision:
    batches add them up in a different order)."""
    body = metrics.render(None)[0].decode()
    samples = {}
    for line in body.splitlines():
        if line and not line.startswith(("#", *TIMING)):
            name, _, number = line.rpartition(" ")
            samples[name] = float(number)
    return samples


def stored(path) -> tuple[list, list]:
    """The rows the workers wrote: results and traces, without the time they were written."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        results = db.execute(
            "SELECT trace_id, span_id, service, agent, model, evaluator, level, score, passed, skip_reason,"
            " explanation, details FROM results ORDER BY trace_id, evaluator, span_id"
        ).fetchall()
        traces = db.execute(
            "SELECT trace_id, service, input, output, span_count, duration_ms, has_errors FROM traces ORDER BY trace_id"
        ).fetchall()
    return results, traces


def stored_trace_ids(path) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {row[0] for row in db.execute("SELECT trace_id FROM traces")}


def store_config(path, evaluators: list | None = None) -> MonitorConfig:
    settings: dict = {"store": {"path": str(path)}}
    if evaluators is not None:
        settings["evaluators"] = evaluators
    return MonitorConfig.model_validate(settings)


async def run_pool(slots, traces, queue_size: int = 10_000):
    tallies, dropped = [], []
    pool = EvaluationPool(slots, tallies.append, lambda reason, n: dropped.append((reason, n)), queue_size=queue_size)
    await pool.start()
    try:
        for completed in traces:
            assert pool.submit(completed)
        left = await pool.drain(120)
    finally:
        await pool.shutdown(5.0)
    return tallies, dropped, left


@pytest.mark.integration
def test_two_worker_processes_store_and_export_what_in_process_evaluation_does(tmp_path) -> None:
    config = store_config(tmp_path / "workers.db")
    evaluators = preflight(config).evaluators
    traces = corpus_traces()
    assert len(traces) > 30

    local_store = ResultStore(tmp_path / "local.db")
    local, local_dropped, _ = asyncio.run(
        run_pool(thread_slot(TraceEvaluator(evaluators), local_store.write), corpus_traces())
    )
    local_store.close()
    remote, remote_dropped, left = asyncio.run(run_pool(process_slots(config, 2), traces))
    assert left == 0 and local_dropped == remote_dropped == []
    assert sum(t.evaluated for t in remote) == sum(t.evaluated for t in local) == len(traces)
    assert stored(tmp_path / "workers.db") == stored(tmp_path / "local.db")
    assert len(stored(tmp_path / "workers.db")[1]) == len(traces)

    exported = []
    for tallies in (local, remote):
        metrics = MetricsExporter()
        recorder = ResultRecorder(metrics.recording, metrics.results.apply_tally, metrics.evaluation.dropped)
        for tally in tallies:
            recorder.record(tally)
        exported.append(exposition_without_timings(metrics))
    assert exported[0].keys() == exported[1].keys()
    assert all(math.isclose(exported[0][k], exported[1][k], rel_tol=1e-9) for k in exported[0])
    assert any(name.startswith("agent_eval_results_total{") for name in exported[0])


def test_traces_are_routed_by_trace_id() -> None:
    ids = [f"{n:032x}" for n in range(1, 200)]
    assert {route(i, 2) for i in ids} == {0, 1}
    assert all(route(i, 3) == route(i, 3) for i in ids)
    assert route("not-hex", 4) == route("not-hex", 4)


def slow_config(store_path=None) -> MonitorConfig:
    settings: dict = {"evaluators": [{"module": "tests.monitor.engine.slow_evaluator:slow"}]}
    settings["store"] = {"path": str(store_path)} if store_path else {"enabled": False}
    return MonitorConfig.model_validate(settings)


@pytest.mark.integration
def test_a_worker_killed_mid_batch_is_replaced_and_its_traces_are_counted_dropped(tmp_path) -> None:
    async def scenario():
        tallies, dropped = [], []
        pool = EvaluationPool(
            process_slots(slow_config(tmp_path / "results.db"), 2),
            tallies.append,
            lambda reason, n: dropped.append((reason, n)),
            queue_size=10_000,
        )
        await pool.start()
        victim = pool.slots[0]
        old_pid = victim.pid
        first = synthetic_traces(120)
        for completed in first:
            pool.submit(completed)
        deadline = time.monotonic() + 10
        while victim.in_flight == 0 and time.monotonic() < deadline:  # the victim is busy with a batch
            await asyncio.sleep(0.01)
        os.kill(old_pid, signal.SIGKILL)
        left = await pool.drain(60)
        crashed = sum(n for reason, n in dropped if reason == "worker_crash")
        # The replacement evaluates what comes next.
        later = [t for t in synthetic_traces(300)[120:] if route(t.trace_id, 2) == 0][:5]
        for completed in later:
            pool.submit(completed)
        left_later = await pool.drain(60)
        await pool.shutdown(5.0)
        return tallies, crashed, left, left_later, old_pid, victim, pool, later

    tallies, crashed, left, left_later, old_pid, victim, pool, later = asyncio.run(scenario())
    assert left == 0 and left_later == 0
    assert crashed > 0 and pool.restarts >= 1
    assert victim.pid != old_pid
    assert sum(t.evaluated for t in tallies) + crashed == 120 + len(later)
    assert {t.trace_id for t in later} <= stored_trace_ids(tmp_path / "results.db")


@pytest.mark.integration
def test_drain_waits_for_every_worker_and_shutdown_is_idempotent() -> None:
    async def scenario():
        tallies = []
        never_started = EvaluationPool(process_slots(slow_config(), 2), tallies.append, lambda r, n: None)
        await never_started.shutdown(5.0)  # before start: nothing to stop
        pool = EvaluationPool(process_slots(slow_config(), 2), tallies.append, lambda r, n: None)
        await pool.start()
        pids = [slot.pid for slot in pool.slots]
        for completed in synthetic_traces(40):
            pool.submit(completed)
        left = await pool.drain(60)
        await pool.shutdown(5.0)
        await pool.shutdown(5.0)
        return tallies, left, pids

    tallies, left, pids = asyncio.run(scenario())
    assert left == 0 and sum(t.evaluated for t in tallies) == 40
    for pid in pids:  # the worker processes are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.integration
def test_a_worker_stuck_in_an_evaluator_is_killed_at_shutdown() -> None:
    config = MonitorConfig.model_validate(
        {"evaluators": [{"module": "tests.monitor.engine.slow_evaluator:stuck"}], "store": {"enabled": False}}
    )

    async def scenario():
        pool = EvaluationPool(process_slots(config, 1), lambda tally: None, lambda r, n: None)
        await pool.start()
        pid = pool.slots[0].pid
        pool.submit(synthetic_traces(1)[0])
        assert await pool.drain(0.5) == 1  # still evaluating
        started = time.monotonic()
        await pool.shutdown(grace=1.0)
        return pid, time.monotonic() - started

    pid, took = asyncio.run(scenario())
    assert took < 15
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.integration
def test_a_worker_that_returns_nothing_for_too_long_is_killed_replaced_and_its_traces_counted() -> None:
    config = MonitorConfig.model_validate(
        {"evaluators": [{"module": "tests.monitor.engine.slow_evaluator:stuck"}], "store": {"enabled": False}}
    )

    async def scenario():
        dropped: list[tuple[str, int]] = []
        pool = EvaluationPool(
            process_slots(config, 1), lambda tally: None, lambda r, n: dropped.append((r, n)), stall_seconds=1.0
        )
        await pool.start()
        first_pid = pool.slots[0].pid
        for completed in synthetic_traces(3):
            pool.submit(completed)
        assert pool.check_stalled() == 0  # busy for less than stall_seconds: left alone
        deadline = time.monotonic() + 30
        killed = 0
        while sum(n for _, n in dropped) < 2 and time.monotonic() < deadline:
            killed += pool.check_stalled()
            await asyncio.sleep(0.1)
        restarts, held = pool.restarts, pool.held
        await pool.shutdown(grace=1.0)
        return dropped, killed, restarts, held, first_pid

    dropped, killed, restarts, held, first_pid = asyncio.run(scenario())
    assert killed == 1 and restarts == 1
    # The two batches in flight (one trace each) are dropped; the queued third goes to the replacement.
    assert {reason for reason, _ in dropped} == {"worker_stalled"} and sum(n for _, n in dropped) == 2
    assert held == 1
    with pytest.raises(ProcessLookupError):
        os.kill(first_pid, 0)


def test_the_stall_limit_is_four_evaluator_timeouts_and_at_least_a_minute() -> None:
    assert stall_limit(30.0) == 120.0 and stall_limit(5.0) == 60.0


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are a Linux fcntl")
def test_a_worker_process_pipes_hold_two_batches_out_and_a_result_back() -> None:
    """A batch of 64 agent traces is about 470 KiB and its result about 65 KiB: in the kernel's 64 KiB pipes the
    worker waited for this process to hand a batch over, and to take its result."""
    [slot] = process_slots(MonitorConfig(), 1)
    executor = slot._make_executor()
    try:
        for queue in (executor._call_queue, executor._result_queue):  # type: ignore[attr-defined]
            assert fcntl.fcntl(queue._writer.fileno(), fcntl.F_GETPIPE_SZ) >= 1 << 20
    finally:
        executor.shutdown()
