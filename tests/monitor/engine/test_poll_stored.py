"""Polled traces (issue 39): `DaemonSink.evaluate`, after which a poller moves its checkpoint, returns only once
the traces are evaluated and their rows written by the result store, even when its writer thread is slow. The
evaluation worker here is the in-process thread, whose rows go through the daemon's store's own writer queue."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from evaluators.traces.records import SpanRecord
from monitor.config import StoreConfig
from monitor.consumer import PolledTrace
from monitor.engine.assembler import TraceAssembler
from monitor.engine.poll_intake import FEED_RECEIVER, DaemonSink
from monitor.engine.pool import EvaluationPool, thread_slot
from monitor.engine.trace_evaluation import TraceEvaluator
from monitor.metrics import MetricsExporter
from monitor.store.from_config import open_result_store
from monitor.store.health import StoreHealth

SLOW_WRITE_SECONDS = 0.5


def _trace(n: int) -> PolledTrace:
    now = time.time()
    span = SpanRecord(f"{n:032x}", f"{n:016x}", "", "root", start_time_unix_nano=int(now * 1e9),
                      end_time_unix_nano=int(now * 1e9) + 1000)  # fmt: skip
    return PolledTrace(f"{n:032x}", now, now + 1, [span])


def test_evaluate_returns_once_the_polled_traces_are_stored(tmp_path: Path) -> None:
    store = open_result_store(StoreConfig(path=str(tmp_path / "results.db")), health=StoreHealth())
    write = store._store

    def slow_store(packed):  # type: ignore[no-untyped-def]
        time.sleep(SLOW_WRITE_SECONDS)
        write(packed)

    store._store = slow_store  # type: ignore[method-assign]
    traces = [_trace(n) for n in range(1, 6)]

    async def scenario() -> set[str]:
        await store.start()
        pool = EvaluationPool(thread_slot(TraceEvaluator([]), store.write), lambda tally: None, lambda r, n: None)
        await pool.start()
        sink = DaemonSink(TraceAssembler(), pool, MetricsExporter().intake.receiver(FEED_RECEIVER),
                          stored=lambda: store.flush(30))  # fmt: skip
        try:
            handed = await sink.evaluate(traces)
            assert handed == traces
            return store.stored_trace_ids([t.trace_id for t in traces])  # read at once: what a checkpoint trusts
        finally:
            await pool.shutdown(1)
            await store.shutdown(1)

    assert asyncio.run(scenario()) == {t.trace_id for t in traces}
