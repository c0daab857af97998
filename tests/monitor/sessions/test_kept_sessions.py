"""Conversations kept in a real SQLite result store (monitor/store/open_sessions_sqlite.py, the tracker of
monitor/sessions/shared.py): open sessions and their turns are written as they arrive and read back by the next
start, so a restart (a shutdown, or a process that dies without one) neither cuts nor splits a conversation; one
whose idle time passed while the daemon was down is completed at the first check; late turns, `max_turns` and
`max_open_sessions` hold in the file; the turns are masked. Idle time runs on the wall clock (a short `idle`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import time
from pathlib import Path

from monitor.config.models import MonitorConfig
from monitor.config.sessions import SessionsConfig
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.sessions.evaluation import SessionEvaluation
from monitor.sessions.from_config import tracker_of
from monitor.sessions.shared import StoredSessionTracker
from monitor.sessions.tracker import SessionTracker
from monitor.store import open_sessions_sqlite as tables
from monitor.store.health import StoreHealth
from monitor.store.sqlite import ResultStore
from tests.monitor.sessions.test_session_tracker import configured, sample, turn, wire
from tests.support.session_evals import no_handoff

IDLE = 0.4
HANDOFF = ("request_human_agent",)
SESSIONS = "SELECT session_id, ended, turn_count, turns FROM sessions"


class Daemon:
    """What one daemon run holds of conversations: its store on the file, its tracker, its metrics."""

    def __init__(self, path: Path, **config: object) -> None:
        self.metrics = MetricsExporter()
        self.store = ResultStore(path, health=StoreHealth(self.metrics.store.error))
        settings = SessionsConfig.model_validate({"idle": IDLE, **config})
        self.tracker = StoredSessionTracker(
            settings, SessionEvaluation(configured(no_handoff)), self.apply, self.store, self.metrics.sessions
        )

    def apply(self, tally: MetricsTally) -> None:
        self.metrics.results.apply_tally(tally)

    def value(self, name: str, **labels: str) -> float:
        return sample(self.metrics, name, **labels)

    def sync_until(self, done, timeout: float = 20.0) -> None:
        async def loop() -> None:
            deadline = time.monotonic() + timeout
            while not done():
                assert time.monotonic() < deadline, "not done in time"
                await self.tracker.sync()
                await asyncio.sleep(0.05)

        asyncio.run(loop())

    def write(self) -> None:
        asyncio.run(self.tracker.sync(claim=False))

    def stop(self) -> None:
        asyncio.run(self.tracker.shutdown(5.0))
        self.store.close()


def rows(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def trace_ids(turns: str) -> list[str]:
    return [t[0] for t in json.loads(turns)]


def test_open_sessions_are_written_and_read_back_by_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = ResultStore(path)
    wires = [wire("s", turn(1)), wire("s", turn(2, tools=HANDOFF)), wire("t", turn(3)), wire("s", turn(1))]
    arrived = store.transaction(lambda db: tables.arrive(db, wires, "here", 10))
    assert (arrived.kept, arrived.duplicate, arrived.late, arrived.cut) == (3, 1, 0, 0)
    store.close()
    again = ResultStore(path)  # the next start
    try:
        assert again.transaction(tables.open_count) == 2
        claimed = again.transaction(lambda db: tables.claim(db, 0.0, 10, 100))
        by_id = {c.session_id: c for c in claimed.sessions}
        assert set(by_id) == {"s", "t"} and {c.ended for c in claimed.sessions} == {"idle"}
        assert sorted(t[0] for t in by_id["s"].turns) == [turn(1).trace_id, turn(2).trace_id]
        assert by_id["s"].source == "session.id" and by_id["s"].turns[1][5] == list(HANDOFF)
        assert again.transaction(lambda db: tables.claim(db, 60.0, 10, 100)).sessions == []  # not idle that long
    finally:
        again.close()


def test_a_conversation_continues_across_a_shutdown_and_is_evaluated_once_with_all_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    first = Daemon(path)
    first.tracker.add([wire("s", turn(1)), wire("s", turn(2))])
    first.stop()  # SIGTERM: the turns written, the session left open, not cut
    assert first.value("agent_monitor_sessions_cut_total", reason="shutdown") == 0
    assert rows(path, "SELECT session_id, turns, completed_at FROM open_sessions") == [("s", 2, None)]
    assert rows(path, SESSIONS) == []

    second = Daemon(path)
    try:
        second.tracker.add([wire("s", turn(3, tools=HANDOFF))])
        second.sync_until(lambda: second.tracker.evaluated == 1)
        [(session_id, ended, count, turns)] = rows(path, SESSIONS)
        assert (session_id, ended, count) == ("s", "idle", 3)
        assert trace_ids(turns) == [turn(1).trace_id, turn(2).trace_id, turn(3).trace_id]
        assert second.value(
            "agent_eval_results_total", evaluator="no_handoff", level="session", service="shop", agent="",
            variant="", outcome="fail",
        ) == 1  # fmt: skip
        assert rows(path, "SELECT count(*) FROM session_turns") == [(0,)]
    finally:
        second.stop()


def test_turns_written_before_a_crash_are_read_by_the_next_start(tmp_path: Path) -> None:
    """No shutdown at all (SIGKILL): what was written is there; the session completes after the restart."""
    path = tmp_path / "r.db"
    dying = Daemon(path)
    dying.tracker.add([wire("s", turn(1))])
    dying.write()
    dying.store._db.close()  # type: ignore[union-attr]  # the process is gone: no shutdown, nothing flushed after
    later = Daemon(path)
    try:
        later.tracker.add([wire("s", turn(2))])
        later.sync_until(lambda: later.tracker.evaluated == 1)
        [(_, ended, count, turns)] = rows(path, SESSIONS)
        assert (ended, count, trace_ids(turns)) == ("idle", 2, [turn(1).trace_id, turn(2).trace_id])
    finally:
        later.stop()


def test_a_session_whose_idle_time_passed_while_down_completes_at_the_first_check(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    first = Daemon(path, idle=30)
    first.tracker.add([wire("s", turn(1))])
    first.stop()
    with sqlite3.connect(path) as db:  # 31 s later, by the wall clock the file keeps
        db.execute("UPDATE open_sessions SET last_arrival = last_arrival - 31")
    later = Daemon(path, idle=30)
    try:
        assert asyncio.run(later.tracker.sync()) == 1
        assert [r[:3] for r in rows(path, SESSIONS)] == [("s", "idle", 1)]
        assert later.value("agent_sessions_completed_total", service="shop", ended="idle") == 1
    finally:
        later.stop()


def test_a_turn_after_completion_is_counted_late_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    first = Daemon(path)
    first.tracker.add([wire("s", turn(1))])
    first.sync_until(lambda: first.tracker.evaluated == 1)
    first.stop()
    later = Daemon(path)
    try:
        later.tracker.add([wire("s", turn(2))])
        later.write()
        time.sleep(IDLE)
        asyncio.run(later.tracker.sync())
        assert later.value("agent_monitor_session_turns_late_total") == 1 and later.tracker.evaluated == 0
        assert len(rows(path, SESSIONS)) == 1
    finally:
        later.stop()


def test_the_limits_hold_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    d = Daemon(path, max_turns=2, max_open_sessions=2, idle=600)
    try:
        d.tracker.add([wire("a", turn(1)), wire("a", turn(2)), wire("a", turn(3))])
        d.write()
        for n, session_id in enumerate(("b", "c"), 4):
            d.tracker.add([wire(session_id, turn(n))])
            d.write()
        asyncio.run(d.tracker.sync())
        assert rows(path, "SELECT session_id, ended, turn_count, turns_cut FROM sessions") == [("a", "cut", 2, 1)]
        assert d.value("agent_monitor_session_turns_cut_total") == 1
        assert d.value("agent_monitor_sessions_cut_total", reason="max_open_sessions") == 1
        assert d.value("agent_monitor_sessions_open") == 2
    finally:
        d.stop()


def test_kept_turns_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    d = Daemon(path)
    try:
        message = "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD, mail me at ann@example.com"
        d.tracker.add([wire("s", dataclasses.replace(turn(1), user_message=message))])
        d.write()
        [(stored,)] = rows(path, "SELECT turn FROM session_turns")
        assert "ann@example.com" not in stored and "sk-proj-abcdef" not in stored
    finally:
        d.stop()


def test_the_daemon_keeps_sessions_in_its_sqlite_store_and_in_memory_without_one(tmp_path: Path) -> None:
    config = MonitorConfig.model_validate({"store": {"path": str(tmp_path / "r.db")}})
    metrics = MetricsExporter()
    store = ResultStore(config.store.path)
    try:
        kept = tracker_of(config, [], metrics.sessions, lambda tally: None, store=store)
        assert isinstance(kept, StoredSessionTracker)
    finally:
        store.close()
    in_memory = tracker_of(config, [], MetricsExporter().sessions, lambda tally: None, store=None)
    assert type(in_memory) is SessionTracker


def test_a_running_tracker_writes_each_turn_soon_after_it_arrives_and_completes_it_when_idle(tmp_path: Path) -> None:
    """Started (the daemon's lifecycle), no one calls `sync`: the turns reach the file within a bounded wait, long
    before `idle`, and the session completes after it."""
    path = tmp_path / "r.db"
    d = Daemon(path, idle=3.0)

    async def run() -> None:
        await d.tracker.start()
        d.tracker.add([wire("s", turn(1))])
        deadline = time.monotonic() + 5
        while rows(path, "SELECT count(*) FROM session_turns") != [(1,)]:
            assert time.monotonic() < deadline, "the turn was not written"
            await asyncio.sleep(0.01)
        assert rows(path, SESSIONS) == []  # written, still open
        while d.tracker.evaluated == 0:
            assert time.monotonic() < deadline + 10, "not completed"
            await asyncio.sleep(0.05)
        await d.tracker.shutdown(5.0)

    try:
        asyncio.run(run())
        assert [r[:3] for r in rows(path, SESSIONS)] == [("s", "idle", 1)]
    finally:
        d.stop()


def test_flush_turns_waits_from_another_thread_until_the_turns_added_are_in_the_file(tmp_path: Path) -> None:
    """The hook for the intake log's release: once `flush_turns` returns True the turns added before are kept."""
    path = tmp_path / "r.db"
    d = Daemon(path, idle=60)
    assert d.tracker.flush_turns(0.1)  # nothing added: nothing to wait for

    async def run() -> bool:
        await d.tracker.start()
        d.tracker.add([wire("s", turn(1)), wire("s", turn(2))])
        flushed = await asyncio.to_thread(d.tracker.flush_turns, 10.0)
        kept = rows(path, "SELECT count(*) FROM session_turns") == [(2,)]
        await d.tracker.shutdown(5.0)
        return flushed and kept

    try:
        assert asyncio.run(run())
    finally:
        d.stop()
    idle = Daemon(tmp_path / "other.db")
    try:
        idle.tracker.add([wire("s", turn(3))])
        assert not idle.tracker.flush_turns(0.1)  # not started: no write is coming
    finally:
        idle.stop()
