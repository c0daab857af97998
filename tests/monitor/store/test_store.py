"""The result store, on SQLite and PostgreSQL: writes on its own thread in large transactions, `failing` mode,
late results, retention."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

from monitor.outcomes import LateResults, ResultRow, TraceOutcome
from monitor.store.sqlite import ResultStore
from tests.support.backends import Backend
from tests.support.store_builders import failing


def row(evaluator: str, passed: bool | None, skip: str | None = None) -> ResultRow:
    score = None if passed is None else float(passed)
    return ResultRow(None, None, None, evaluator, "trace", score, passed, skip, "why", '{"k": 1}', 0.001)


def outcome(trace_id: str, *rows: ResultRow) -> TraceOutcome:
    return TraceOutcome(trace_id, "svc", 1.0, False, (), (), "in", "out", 3, 1000.0, 0.0, tuple(rows))


def test_writes_happen_on_the_writer_thread_and_flush_waits_for_them(backend: Backend) -> None:
    store = backend.store()
    writers: set[str] = set()
    insert = store._store

    def spy(packed):
        writers.add(threading.current_thread().name)
        insert(packed)

    store._store = spy  # type: ignore[method-assign]

    async def scenario() -> None:
        await store.start()
        for n in range(50):
            store.write([outcome(f"{n:032x}", row("a", True), row("b", False))])
        store.flush()
        assert store.count("traces") == 50 and store.count("results") == 50
        await store.shutdown(5.0)
        await store.shutdown(5.0)

    asyncio.run(scenario())
    assert writers == {"result-store"}
    assert backend.scalar("SELECT COUNT(*) FROM results WHERE passed = 0") == 50


def test_failing_mode_keeps_failures_and_stored_skips_and_their_traces_only(backend: Backend) -> None:
    store = backend.store(results="failing")
    store.write(
        [
            outcome("1" * 32, row("a", True), row("b", True)),
            outcome("2" * 32, row("a", True), row("b", False)),
            outcome("3" * 32, row("a", True), row("gt", None, "needs_ground_truth")),
            outcome("4" * 32, row("a", True), row("s", None, "sampled_out")),
            outcome("5" * 32, row("a", True), row("n", None, "no_data")),  # nothing to measure: not kept either
        ]
    )
    store.close()
    count = backend.scalar
    assert count("SELECT COUNT(*) FROM traces") == 2
    assert count("SELECT COUNT(*) FROM results") == 2
    assert count("SELECT COUNT(*) FROM results WHERE passed = 1") == 0
    assert count("SELECT COUNT(*) FROM traces WHERE passed IS NOT NULL") == 0


def test_all_mode_packs_passing_results_in_their_trace_and_keeps_a_row_per_failure_and_skip(backend: Backend) -> None:
    store = backend.store()
    passing = row("a", True)._replace(span_id="ab" * 8, agent="planner", model="gpt-4o", score=0.75)
    store.write(
        [
            outcome("1" * 32, passing, row("b", True), row("c", False), row("gt", None, "needs_ground_truth")),
            outcome("2" * 32, row("s", None, "sampled_out"), row("n", None, "no_data")),
        ]
    )
    assert store.passed("1" * 32) == [
        {"evaluator": "a", "level": "trace", "span_id": "ab" * 8, "agent": "planner", "model": "gpt-4o",
         "score": 0.75, "explanation": "why", "details": '{"k": 1}'},
        {"evaluator": "b", "level": "trace", "span_id": None, "agent": None, "model": None,
         "score": 1.0, "explanation": "why", "details": '{"k": 1}'},
    ]  # fmt: skip
    assert store.passed("2" * 32) == [] and store.passed("9" * 32) == []
    assert store.count("traces") == 2
    store.close()
    count = backend.scalar
    assert count("SELECT COUNT(*) FROM results WHERE evaluator = 'c' AND passed = 0") == 1
    assert count("SELECT COUNT(*) FROM results WHERE skip_reason = 'needs_ground_truth'") == 1
    assert count("SELECT COUNT(*) FROM results") == 2  # no row per passing result, none for sampled out or no data


def test_late_judge_results_join_their_stored_trace(backend: Backend) -> None:
    store = backend.store()
    store.write([outcome("1" * 32, row("a", True)), outcome("2" * 32)])
    judged = row("hallucination", True)._replace(score=0.9, details='{"verdict": "pass"}')
    store.write([LateResults("1" * 32, "svc", (judged, row("safety", False)))])
    store.write([LateResults("2" * 32, "svc", (row("safety", None, "judge_unavailable"), judged))])
    assert [p["evaluator"] for p in store.passed("1" * 32)] == ["a", "hallucination"]
    assert store.passed("1" * 32)[1]["score"] == 0.9
    assert [p["evaluator"] for p in store.passed("2" * 32)] == ["hallucination"]  # a trace with none before
    store.close()
    count = backend.scalar
    assert count("SELECT COUNT(*) FROM results WHERE evaluator = 'safety' AND passed = 0") == 1
    assert count("SELECT COUNT(*) FROM results WHERE skip_reason = 'judge_unavailable'") == 1
    assert count("SELECT COUNT(*) FROM traces") == 2  # late results add no trace rows


def test_a_database_from_before_packing_gains_the_passed_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE traces (trace_id TEXT PRIMARY KEY, created_at REAL NOT NULL, service TEXT, input TEXT,"
            " output TEXT, span_count INTEGER, duration_ms REAL, has_errors INTEGER)"
        )
        db.execute("INSERT INTO traces VALUES ('old', ?, 'svc', NULL, NULL, 1, 1.0, 0)", (time.time(),))
    store = ResultStore(path)
    store.write([outcome("1" * 32, row("a", True))])
    assert store.passed("1" * 32)[0]["evaluator"] == "a" and store.count("traces") == 2
    store.close()


def test_prune_removes_rows_past_the_retention(backend: Backend) -> None:
    store = backend.store(retention_seconds=100)
    store.write([outcome("1" * 32, row("a", False))])
    backend.execute("UPDATE results SET created_at = created_at - 1000")
    backend.execute("UPDATE traces SET created_at = created_at - 1000")
    store.write([outcome("2" * 32, row("a", False))])
    assert store.prune() == 1
    assert [r["trace_id"] for r in failing(store)] == ["2" * 32]
    assert store.count("traces") == 1
    store.close()


def test_a_trace_stored_again_replaces_its_row_and_nul_characters_are_kept_as_replacement_characters(
    backend: Backend,
) -> None:
    """A trace evaluated again (or by two replicas) is one row; text with NUL (which PostgreSQL refuses) is kept."""
    store = backend.store()
    store.write([outcome("1" * 32, row("a", True))])
    nul = row("a", False)._replace(explanation="bad\x00byte", details='{"k": "\x00"}')
    store.write([outcome("1" * 32, nul, row("b", True)._replace(explanation="x\x00y"))])
    assert store.count("traces") == 1
    assert [p["evaluator"] for p in store.passed("1" * 32)] == ["b"]
    explanation = failing(store)[0]["explanation"]
    assert explanation in ("bad\x00byte", "bad\ufffdbyte")  # SQLite keeps NUL, PostgreSQL cannot
    assert store.passed("1" * 32)[0]["explanation"] in ("x\x00y", "x\ufffdy")
    assert store.health.available and store.write_errors == 0
    store.close()
