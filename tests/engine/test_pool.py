"""The evaluation pool: worker processes give what in-process evaluation gives, survive a crash, drain."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from monitor.config import MonitorConfig
from monitor.engine.pool import EvaluationPool, process_slots, route, thread_slot
from monitor.engine.recorder import ResultRecorder
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.preflight import preflight
from tests.engine.helpers import corpus_traces, synthetic_traces

TIMING = ("agent_monitor_evaluation_seconds", "agent_monitor_trace_delay_seconds")


def exposition_without_timings(metrics: MetricsExporter) -> list[str]:
    body = metrics.render(None)[0].decode()
    return sorted(line for line in body.splitlines() if not line.startswith(TIMING))


def without_durations(outcomes) -> dict:
    return {o.trace_id: [r._replace(duration_seconds=0.0) for r in o.results] for o in outcomes}


async def run_pool(slots, traces, queue_size: int = 10_000):
    outcomes, dropped = [], []
    pool = EvaluationPool(slots, outcomes.extend, lambda reason, n: dropped.append((reason, n)), queue_size=queue_size)
    await pool.start()
    try:
        for completed in traces:
            assert pool.submit(completed)
        left = await pool.drain(120)
    finally:
        await pool.shutdown()
    return outcomes, dropped, left


def test_two_worker_processes_give_the_records_and_metrics_of_in_process_evaluation() -> None:
    config = MonitorConfig()
    evaluators = preflight(config).evaluators
    traces = corpus_traces()
    assert len(traces) > 30

    local, local_dropped, _ = asyncio.run(run_pool(thread_slot(TraceEvaluator(evaluators)), corpus_traces()))
    remote, remote_dropped, left = asyncio.run(run_pool(process_slots(config, 2), traces))
    assert left == 0 and local_dropped == remote_dropped == []
    assert len(remote) == len(local) == len(traces)
    assert without_durations(remote) == without_durations(local)

    exported = []
    for outcomes in (local, remote):
        metrics = MetricsExporter()
        ResultRecorder(metrics, None).record(sorted(outcomes, key=lambda o: o.trace_id))
        exported.append(exposition_without_timings(metrics))
    assert exported[0] == exported[1]
    assert any(line.startswith("agent_eval_results_total{") for line in exported[0])


def test_traces_are_routed_by_trace_id() -> None:
    ids = [f"{n:032x}" for n in range(1, 200)]
    assert {route(i, 2) for i in ids} == {0, 1}
    assert all(route(i, 3) == route(i, 3) for i in ids)
    assert route("not-hex", 4) == route("not-hex", 4)


def slow_config() -> MonitorConfig:
    return MonitorConfig.model_validate({"evaluators": [{"module": "tests.engine.slow_evaluator:slow"}]})


def test_a_worker_killed_mid_batch_is_replaced_and_its_traces_are_counted_dropped() -> None:
    async def scenario():
        outcomes, dropped = [], []
        pool = EvaluationPool(
            process_slots(slow_config(), 2),
            outcomes.extend,
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
        await pool.shutdown()
        return outcomes, crashed, left, left_later, old_pid, victim, pool, later

    outcomes, crashed, left, left_later, old_pid, victim, pool, later = asyncio.run(scenario())
    assert left == 0 and left_later == 0
    assert crashed > 0 and pool.restarts >= 1
    assert victim.pid != old_pid
    assert len(outcomes) + crashed == 120 + len(later)
    evaluated = {o.trace_id for o in outcomes}
    assert {t.trace_id for t in later} <= evaluated


def test_drain_waits_for_every_worker_and_shutdown_is_idempotent() -> None:
    async def scenario():
        outcomes = []
        never_started = EvaluationPool(process_slots(slow_config(), 2), outcomes.extend, lambda r, n: None)
        await never_started.shutdown()  # before start: nothing to stop
        pool = EvaluationPool(process_slots(slow_config(), 2), outcomes.extend, lambda r, n: None)
        await pool.start()
        pids = [slot.pid for slot in pool.slots]
        for completed in synthetic_traces(40):
            pool.submit(completed)
        left = await pool.drain(60)
        await pool.shutdown()
        await pool.shutdown()
        return outcomes, left, pids

    outcomes, left, pids = asyncio.run(scenario())
    assert left == 0 and len(outcomes) == 40
    for pid in pids:  # the worker processes are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_worker_stuck_in_an_evaluator_is_killed_at_shutdown() -> None:
    config = MonitorConfig.model_validate({"evaluators": [{"module": "tests.engine.slow_evaluator:stuck"}]})

    async def scenario():
        pool = EvaluationPool(process_slots(config, 1), lambda outcomes: None, lambda r, n: None)
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
