"""Completed, evaluated sessions reach the result store through its writer thread: the tracker's hook
(`session_writer(store.write)`) queues them and never waits on the database; a store that fails drops and counts
them while evaluation goes on."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

from monitor.config.sessions import SessionsConfig
from monitor.metrics.tally import MetricsTally
from monitor.sessions.evaluation import SessionEvaluation
from monitor.sessions.storing import session_writer
from monitor.sessions.tracker import SessionTracker
from monitor.store.health import StoreHealth
from monitor.store.packing import Packed
from monitor.store.sqlite import ResultStore
from tests.monitor.sessions.test_session_tracker import IDLE, Clock, configured, turn, wire
from tests.support.session_evals import no_handoff

HANDOFF = ("request_human_agent",)


def tracked(store: ResultStore, clock: Clock, tallies: list[MetricsTally]) -> SessionTracker:
    settings = SessionsConfig.model_validate({"idle": IDLE})
    evaluation = SessionEvaluation(configured(no_handoff))
    return SessionTracker(settings, evaluation, tallies.append, clock=clock, on_evaluated=session_writer(store.write))


def conversations(track: SessionTracker, clock: Clock) -> None:
    track.add([wire("handoff", turn(1)), wire("clean", turn(2)), wire("handoff", turn(3, tools=HANDOFF))])
    clock.now += IDLE
    assert len(track.check()) == 2


def test_evaluated_sessions_are_queued_for_the_writer_thread_and_stored(tmp_path: Path) -> None:
    """The writer thread is held inside a write: evaluating the sessions does not wait for it; once it goes on,
    the failing conversation is stored (`results: failing`) with its result on its last turn's trace."""
    store = ResultStore(tmp_path / "r.db", results="failing")
    held, entered = threading.Event(), threading.Event()
    write = store._store

    def slow(packed: Packed) -> None:
        entered.set()
        held.wait(30)
        write(packed)

    clock, tallies = Clock(), []
    track = tracked(store, clock, tallies)

    async def scenario() -> None:
        await store.start()
        store._store = slow  # type: ignore[method-assign]
        conversations(track, clock)
        assert await asyncio.wait_for(track.evaluate_waiting(), 20) == 2  # while the writer is held
        assert entered.wait(20) and store.count("results") == 0
        held.set()
        store.flush()

    started = time.time()
    asyncio.run(scenario())
    assert len(tallies) == 1  # the metrics as before
    with store._lock:
        assert store._db is not None
        sessions = store._db.execute("SELECT session_id, failed, turn_count, completed_at, turns FROM sessions")
        [(session_id, failed, turn_count, completed_at, turns)] = sessions.fetchall()
        results = store._db.execute("SELECT evaluator, level, trace_id, session_id, passed FROM results").fetchall()
    assert (session_id, failed, turn_count) == ("handoff", 1, 2)
    assert started - 1 <= completed_at <= time.time()  # the wall-clock time the book completed it
    assert [t[0] for t in json.loads(turns)] == [turn(1).trace_id, turn(3).trace_id]
    assert results == [("no_handoff", "session", turn(3).trace_id, "handoff", 0)]
    store.close()


def test_a_store_that_fails_counts_the_lost_results_and_evaluation_goes_on(tmp_path: Path) -> None:
    lost: dict[str, int] = {}
    health = StoreHealth(on_lost=lambda reason, n: lost.__setitem__(reason, lost.get(reason, 0) + n))
    store = ResultStore(tmp_path / "r.db", results="all", health=health)
    with store._lock:
        assert store._db is not None
        store._db.execute("PRAGMA query_only=ON")  # read-only from here
    clock, tallies = Clock(), []
    track = tracked(store, clock, tallies)

    async def scenario() -> None:
        await store.start()
        conversations(track, clock)
        assert await track.evaluate_waiting() == 2
        store.flush()

    asyncio.run(scenario())
    assert track.evaluated == 2 and len(tallies) == 1
    assert lost == {"failed": 2} and "write" in health.failing()  # one result each, counted
    store.close()
