"""The intake log while the result store cannot write (issue 39): the daemon (in-process evaluation, its SQLite
store made read-only with `PRAGMA query_only=ON` on its own connection: SQLITE_READONLY on every write) goes on
evaluating, but no segment is released for traces whose rows were not written; the log fills up to `max_bytes`
(or the evaluated traces waiting for their rows reach their bound, rows_waits.UNWRITTEN_LIMIT) and intake is
answered throttled, nothing acknowledged dropped, nothing counted lost. Once the store writes again, the held
traces are written, each once, the segments released, and intake accepted again."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from monitor.config import MonitorConfig
from monitor.consumer import Outcome
from monitor.daemon import Daemon
from monitor.engine import rows_waits
from monitor.engine.ingest import Ingestor, trace_ids_of
from tests.monitor.engine.test_pool_rows_written import wait_until
from tests.monitor.store.test_degrade import set_pragma
from tests.support.completed_traces import metric_total, synthetic_requests

pytestmark = pytest.mark.integration  # each test starts a process or a server

LOST = "agent_monitor_store_results_lost_total"  # results the store could not write, for good


def stored_per_trace(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT trace_id, COUNT(*) FROM traces GROUP BY trace_id").fetchall())


def segment_files(directory: Path) -> int:
    return len(list(directory.glob("*.wal")))


@pytest.mark.parametrize("bound", ["max_bytes", "unwritten"])
def test_a_store_that_cannot_write_holds_the_log_until_it_can_and_nothing_acknowledged_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str
) -> None:
    wal: dict = {"enabled": True, "segment_bytes": "64KiB"}
    if bound == "max_bytes":
        wal["max_bytes"] = "1MiB"
        refusal = "intake log is full"
    else:
        monkeypatch.setattr(rows_waits, "UNWRITTEN_LIMIT", 60)
        refusal = "result store is behind"
    path = tmp_path / "results.db"
    config = MonitorConfig.model_validate(
        {
            "receivers": {"grpc": {"host": "127.0.0.1", "port": 0}, "http": {"host": "127.0.0.1", "port": 0}},
            "metrics": {"host": "127.0.0.1", "port": 0},
            "store": {"path": str(path)},
            "assembly": {"quiet_period": "0.2s"},
            "evaluation": {"workers": 0},
            "intake": {"wal": wal},
        }
    )
    d = Daemon(config)
    value = d.metrics.registry.get_sample_value
    requests = synthetic_requests(400, per_request=4)
    directory = tmp_path / "intake"

    async def scenario() -> None:
        await d.start()
        try:
            assert d.store is not None and d.intake.log is not None
            set_pragma(d.store, "query_only=ON")  # SQLITE_READONLY on every write from here
            accepted: list[str] = []
            full = False
            deadline = time.monotonic() + 30
            for payload in requests:
                while not full and time.monotonic() < deadline:
                    answer = d.intake.consumer.ingest(payload, receiver="grpc", encoding="protobuf")
                    if answer.outcome is Outcome.ACCEPTED:
                        accepted += trace_ids_of(Ingestor.decode(payload, "protobuf", "traces", "grpc"))
                        break
                    full = refusal in answer.message
                    await asyncio.sleep(0.05)  # throttled (evaluation is behind): retry
                if full:
                    break
                await asyncio.sleep(0.01)
            assert full, "intake was never throttled while the store could not write"
            assert value("agent_monitor_intake_log_full_total") >= (1 if bound == "max_bytes" else 0)
            await wait_until(lambda: d.pool.evaluated == len(accepted), 30, "the accepted traces were not evaluated")
            await asyncio.sleep(1.5)  # past the idle release, and several reports of the worker's store
            assert value("agent_monitor_intake_log_segments_released_total") == 0  # every segment held
            assert segment_files(directory) >= 2 and stored_per_trace(path) == {}
            assert metric_total(d, LOST) == 0 and not d.store.available  # kept, not lost; the store reported failing
            set_pragma(d.store, "query_only=OFF")  # the store writes again
            await wait_until(lambda: len(stored_per_trace(path)) == len(accepted), 30, "the held traces not written")
            await wait_until(lambda: segment_files(directory) == 0, 30, "the segments were not released")
            assert stored_per_trace(path) == dict.fromkeys(accepted, 1)  # every acknowledged trace, once
            assert metric_total(d, LOST) == 0 and d.store.available
            answer = d.intake.consumer.ingest(requests[-1], receiver="grpc", encoding="protobuf")
            assert answer.outcome is Outcome.ACCEPTED  # intake resumed
        finally:
            await d.shutdown(10)

    asyncio.run(scenario())
