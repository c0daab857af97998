"""The result store: writes on its own thread in large transactions, `failing` mode, retention."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from monitor.results.rows import ResultRow, TraceFailure, TraceOutcome, from_wire, to_wire
from monitor.results.store import ResultStore


def row(evaluator: str, passed: bool | None, skip: str | None = None) -> ResultRow:
    score = None if passed is None else float(passed)
    return ResultRow(None, None, None, evaluator, "trace", score, passed, skip, "why", '{"k": 1}', 0.001)


def outcome(trace_id: str, *rows: ResultRow) -> TraceOutcome:
    return TraceOutcome(trace_id, "svc", 1.0, False, (), (), (), "in", "out", 3, 1000.0, 0.0, tuple(rows))


def count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute(sql).fetchone()[0])


def test_writes_happen_on_the_writer_thread_and_flush_waits_for_them(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.db")
    writers: set[str] = set()
    insert = store._insert_rows

    def spy(outcomes):
        writers.add(threading.current_thread().name)
        insert(outcomes)

    store._insert_rows = spy  # type: ignore[method-assign]

    async def scenario() -> None:
        await store.start()
        for n in range(50):
            store.write([outcome(f"{n:032x}", row("a", True), row("b", False))])
        store.flush()
        assert store.count("traces") == 50 and store.count("results") == 100
        await store.shutdown()
        await store.shutdown()

    asyncio.run(scenario())
    assert writers == {"result-store"}
    assert count(tmp_path / "r.db", "SELECT COUNT(*) FROM results WHERE passed = 0") == 50


def test_failing_mode_keeps_failures_and_skips_and_their_traces_only(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.db", results="failing")
    store.write(
        [
            outcome("1" * 32, row("a", True), row("b", True)),
            outcome("2" * 32, row("a", True), row("b", False)),
            outcome("3" * 32, row("a", True), row("gt", None, "needs_ground_truth")),
            outcome("4" * 32, row("a", True), row("s", None, "sampled_out")),
        ]
    )
    store.close()
    path = tmp_path / "r.db"
    assert count(path, "SELECT COUNT(*) FROM traces") == 2
    assert count(path, "SELECT COUNT(*) FROM results") == 2
    assert count(path, "SELECT COUNT(*) FROM results WHERE passed = 1") == 0


def test_prune_removes_rows_past_the_retention(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.db", retention_seconds=100)
    store.write([outcome("1" * 32, row("a", False))])
    with store._lock:
        store._db.execute("UPDATE results SET created_at = created_at - 1000")
        store._db.execute("UPDATE traces SET created_at = created_at - 1000")
    store.write([outcome("2" * 32, row("a", False))])
    assert store.prune() == 1
    assert [r["trace_id"] for r in store.failing()] == ["2" * 32]
    assert store.count("traces") == 1
    store.close()


def test_wire_form_round_trips() -> None:
    items = [outcome("1" * 32, row("a", True), row("b", None, "no_data")), TraceFailure("2" * 32, "boom")]
    back = from_wire(to_wire(items))
    assert back == items and isinstance(back[0].results[0], ResultRow)
