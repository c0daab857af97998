"""Conversations shared by replicas through one real PostgreSQL store (monitor/sessions/shared.py): turns of one
conversation written by different replicas make one session, evaluated, stored and counted exactly once, even
when the replicas claim at the same moment or one dies holding a claim; the limits hold across replicas; a store
that cannot be reached keeps the turns (bounded) and counts its failures; texts are masked before they are shared.
Idle time runs on the database's clock (a short `idle`, bounded waits)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Iterator

import psycopg
import pytest

from monitor.config.sessions import SessionsConfig
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.sessions.evaluation import SessionEvaluation
from monitor.sessions.shared import SharedSessionTracker
from monitor.store.health import StoreHealth
from monitor.store.postgres import open_sessions
from monitor.store.postgres.connection import Connection
from monitor.store.postgres.store import PostgresResultStore
from tests.monitor.sessions.test_session_tracker import configured, sample, turn, wire
from tests.support.pgserver import PostgresServer
from tests.support.session_evals import no_handoff

IDLE = 0.4
SESSIONS = "SELECT session_id, ended, turn_count, turns FROM sessions"
HANDOFF = ("request_human_agent",)


class Replica:
    """One replica's tracker on its own store object (its own pool), with its metrics and tallies."""

    def __init__(self, url: str, name: str, **config: object) -> None:
        self.metrics = MetricsExporter()
        self.store = PostgresResultStore(url, health=StoreHealth(self.metrics.store.error))
        self.tallies: list[MetricsTally] = []
        settings = SessionsConfig.model_validate({"idle": IDLE, **config})
        self.tracker = SharedSessionTracker(
            settings, SessionEvaluation(configured(no_handoff)), self.apply, self.store, self.metrics.sessions,
            replica=name,
        )  # fmt: skip

    def apply(self, tally: MetricsTally) -> None:
        self.tallies.append(tally)
        self.metrics.results.apply_tally(tally)

    def results(self, outcome: str) -> float:
        return sample(
            self.metrics, "agent_eval_results_total", evaluator="no_handoff", level="session", service="shop",
            agent="", variant="", outcome=outcome,
        )  # fmt: skip

    def value(self, name: str, **labels: str) -> float:
        return sample(self.metrics, name, **labels)


@pytest.fixture
def replicas(postgres_url: str) -> Iterator[tuple[Replica, Replica]]:
    made = (Replica(postgres_url, "a"), Replica(postgres_url, "b"))
    yield made
    for replica in made:
        replica.store.close()


def rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url) as db:
        return db.execute(sql, params).fetchall()


def run_until(done, *trackers: SharedSessionTracker, timeout: float = 20.0) -> None:
    """Sync every tracker (together) until `done()`, within `timeout` seconds."""

    async def loop() -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "not done in time"
            await asyncio.gather(*(t.sync() for t in trackers))
            await asyncio.sleep(0.05)

    asyncio.run(loop())


def evaluated(*replicas: Replica) -> int:
    return sum(r.tracker.evaluated for r in replicas)


def test_turns_written_by_two_replicas_make_one_session_evaluated_once(replicas, postgres_url: str) -> None:
    a, b = replicas
    a.tracker.add([wire("handoff", turn(1)), wire("clean", turn(2)), wire("handoff", turn(5, tools=HANDOFF))])
    b.tracker.add([wire("handoff", turn(3)), wire("clean", turn(4)), wire("clean", turn(6))])
    run_until(lambda: evaluated(a, b) == 2, a.tracker, b.tracker)
    time.sleep(IDLE)
    asyncio.run(_sync_all(a, b))  # another check of each: nothing more to claim
    assert evaluated(a, b) == 2
    stored = {
        session_id: (ended, count, [t[0] for t in json.loads(turns)])
        for session_id, ended, count, turns in rows(postgres_url, SESSIONS)
    }
    assert stored == {
        "handoff": ("idle", 3, [turn(1).trace_id, turn(3).trace_id, turn(5).trace_id]),  # both replicas' turns
        "clean": ("idle", 3, [turn(2).trace_id, turn(4).trace_id, turn(6).trace_id]),
    }
    results = rows(postgres_url, "SELECT session_id, trace_id, passed FROM results WHERE level = 'session'")
    assert sorted(results) == [("clean", turn(6).trace_id, 1), ("handoff", turn(5).trace_id, 0)]
    assert (a.results("fail") + b.results("fail"), a.results("pass") + b.results("pass")) == (1, 1)
    completed = sum(r.value("agent_sessions_completed_total", service="shop", ended="idle") for r in (a, b))
    assert completed == 2
    assert rows(postgres_url, "SELECT count(*) FROM session_turns") == [(0,)]  # dropped with the claim


def test_replicas_claiming_together_evaluate_every_session_once(replicas, postgres_url: str) -> None:
    a, b = replicas
    sessions = [f"s{i:03d}" for i in range(160)]  # more than a claim's batch: several transactions each
    for i, session_id in enumerate(sessions):
        (a if i % 2 else b).tracker.add([wire(session_id, turn(2 * i))])
        (b if i % 2 else a).tracker.add([wire(session_id, turn(2 * i + 1))])
    asyncio.run(_write_only(a, b))
    time.sleep(IDLE)
    run_until(lambda: evaluated(a, b) == len(sessions), a.tracker, b.tracker)
    assert a.tracker.evaluated > 0 and b.tracker.evaluated > 0  # both claimed some
    assert rows(postgres_url, "SELECT count(*), count(DISTINCT session_id) FROM results") == [(160, 160)]
    assert rows(postgres_url, "SELECT count(*) FROM sessions WHERE turn_count = 2") == [(160,)]
    assert a.results("pass") + b.results("pass") == 160


async def _write_only(*replicas: Replica) -> None:
    await asyncio.gather(*(r.tracker.sync(claim=False) for r in replicas))


async def _sync_all(*replicas: Replica) -> None:
    await asyncio.gather(*(r.tracker.sync() for r in replicas))


def test_a_replica_that_dies_holding_a_claim_leaves_the_session_to_another(replicas, postgres_url: str) -> None:
    a, b = replicas
    a.tracker.add([wire("s", turn(1)), wire("s", turn(2, tools=HANDOFF))])
    asyncio.run(_write_only(a))
    time.sleep(IDLE)
    with psycopg.connect(postgres_url) as dying:  # a replica mid-claim: the session locked in its transaction
        dying.execute("BEGIN")
        claimed = open_sessions.claim(Connection(dying), IDLE, 10, 100)
        assert [s.session_id for s in claimed.sessions] == ["s"] and len(claimed.sessions[0].turns) == 2
        asyncio.run(b.tracker.sync())
        assert b.tracker.evaluated == 0  # skipped: locked by the other
    # the connection closed without a commit: the claim is rolled back
    run_until(lambda: evaluated(b) == 1, b.tracker)
    assert b.results("fail") == 1
    assert rows(postgres_url, "SELECT count(*) FROM results") == [(1,)]


def test_a_turn_after_completion_is_counted_late_not_evaluated_again(replicas, postgres_url: str) -> None:
    a, b = replicas
    a.tracker.add([wire("s", turn(1))])
    run_until(lambda: evaluated(a) == 1, a.tracker)
    b.tracker.add([wire("s", turn(2))])
    asyncio.run(b.tracker.sync())
    time.sleep(IDLE)
    asyncio.run(b.tracker.sync())
    assert b.value("agent_monitor_session_turns_late_total") == 1 and evaluated(a, b) == 1
    assert rows(postgres_url, "SELECT count(*) FROM session_turns") == [(0,)]


def test_max_turns_holds_across_replicas(postgres_url: str) -> None:
    a, b = Replica(postgres_url, "a", max_turns=3), Replica(postgres_url, "b", max_turns=3)
    try:
        a.tracker.add([wire("s", turn(1)), wire("s", turn(2))])
        asyncio.run(_write_only(a))
        b.tracker.add([wire("s", turn(3)), wire("s", turn(4)), wire("s", turn(5))])
        run_until(lambda: evaluated(a, b) == 1, a.tracker, b.tracker)
        assert rows(postgres_url, "SELECT turn_count, turns_cut FROM sessions") == [(3, 2)]
        assert b.value("agent_monitor_session_turns_cut_total") == 2
        assert sum(r.value("agent_session_turns_sum", service="shop") for r in (a, b)) == 5
    finally:
        a.store.close()
        b.store.close()


def test_beyond_max_open_sessions_the_longest_idle_are_cut(postgres_url: str) -> None:
    a = Replica(postgres_url, "a", max_open_sessions=2, idle=600)
    try:
        for n, session_id in enumerate(("s1", "s2", "s3", "s4")):
            a.tracker.add([wire(session_id, turn(n))])
            asyncio.run(_write_only(a))
        asyncio.run(a.tracker.sync())
        assert rows(postgres_url, "SELECT session_id, ended FROM sessions ORDER BY 1") == [("s1", "cut"), ("s2", "cut")]
        assert a.value("agent_monitor_sessions_cut_total", reason="max_open_sessions") == 2
        assert a.value("agent_monitor_sessions_open") == 2
    finally:
        a.store.close()


def test_a_store_out_of_reach_keeps_the_turns_bounded_and_counts_its_failures() -> None:
    url = PostgresServer().url("postgres")  # its port is chosen; nothing listens there
    a = Replica(url, "a", max_open_turns=3)
    try:
        a.tracker.add([wire("s", turn(n)) for n in range(2)])
        asyncio.run(a.tracker.sync())
        assert a.tracker.waiting_turns == 2  # kept for the next check
        assert a.value("agent_monitor_store_errors_total", operation="sessions") == 1
        a.tracker.add([wire("s", turn(n)) for n in range(2, 5)])
        assert a.tracker.waiting_turns == 3
        assert a.value("agent_monitor_session_turns_unshared_total") == 2
    finally:
        a.store.close()


def test_shutdown_shares_the_waiting_turns_and_the_next_start_completes_them(postgres_url: str) -> None:
    a = Replica(postgres_url, "a")
    a.tracker.add([wire("s", turn(1, tools=HANDOFF))])
    asyncio.run(a.tracker.shutdown(5.0))
    a.store.close()
    assert rows(postgres_url, "SELECT session_id, completed_at FROM open_sessions") == [("s", None)]
    later = Replica(postgres_url, "a-restarted")
    try:
        run_until(lambda: evaluated(later) == 1, later.tracker)
        assert later.results("fail") == 1
    finally:
        later.store.close()


def test_shared_turns_are_masked(postgres_url: str) -> None:
    a = Replica(postgres_url, "a")
    try:
        message = "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD, mail me at ann@example.com"
        secret = dataclasses.replace(turn(1), user_message=message)
        a.tracker.add([wire("s", secret)])
        asyncio.run(_write_only(a))
        [(stored,)] = rows(postgres_url, "SELECT turn::text FROM session_turns")
        assert "ann@example.com" not in stored and "sk-proj-abcdef" not in stored
    finally:
        a.store.close()
