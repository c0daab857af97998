"""SharedSessionTracker: conversations shared by every replica of one PostgreSQL result store.

The Collector routes spans by trace id, so the turns of one conversation reach different replicas. Here no
replica holds sessions in memory: each writes the turns it evaluated to the store (`open_sessions.arrive`, every
`check_every` seconds, off the event loop), and claims the sessions idle for `sessions.idle` on the database's
clock (`open_sessions.claim`, `FOR UPDATE SKIP LOCKED`): it evaluates each claimed session from all its turns,
whoever received them, and writes its `sessions` row and results and marks it completed in that one transaction.
So a session is evaluated, stored and counted in the metrics exactly once across replicas; a replica that dies
mid-claim rolls back, and another claims the session.

The limits hold across replicas: `max_turns` per session (counted at arrival), `max_open_sessions` (beyond it the
longest-idle sessions are claimed early, ended `cut`). Turns wait in memory between writes, at most
`max_open_turns` of them: while the database cannot be reached the oldest are dropped beyond that, and counted
(`agent_monitor_session_turns_unshared_total`). Failures count as the store's `sessions` operation. At shutdown the
waiting turns are written and the sessions left open: the replicas still running, or the next start, complete them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from evaluators.sessions import Session
from monitor.config.sessions import SessionsConfig
from monitor.engine.turn_wire import TurnWire, turn_of_wire
from monitor.metrics.sessions import SessionMetrics
from monitor.metrics.tally import MetricsTally
from monitor.sessions.book import CUT_FOR_ROOM
from monitor.sessions.evaluation import Evaluated, SessionEvaluation, tally_of
from monitor.sessions.tracker import JudgeSessions, SessionTracker
from monitor.store.postgres import open_sessions
from monitor.store.postgres.connection import Connection
from monitor.store.postgres.open_sessions import Claimed, ClaimedSession
from monitor.store.postgres.store import PostgresResultStore
from monitor.store.rows import SessionOutcome
from monitor.store.signatures import NewCounts

log = logging.getLogger(__name__)
OPERATION = "sessions"  # the store operation its failures count as
CLAIM_BATCH = 50  # sessions claimed (and evaluated) per transaction
MAX_CLAIMS_PER_CHECK = 20  # transactions per check at most (the next check goes on)
EVALUATION_SECONDS = 60.0  # how long the claim's transaction may wait between statements while it evaluates
FORGET_EVERY = 60.0  # seconds between deletions of long-completed sessions' rows


@dataclass(slots=True)
class Synced:
    """What one check did: turns written, sessions claimed and evaluated (with the signatures they counted new)."""

    arrived: open_sessions.Arrived | None = None
    evaluated: list[Evaluated] = field(default_factory=list)
    cut_for_room: int = 0
    news: list[NewCounts] = field(default_factory=list)
    open: int | None = None
    unwritten: list[TurnWire] = field(default_factory=list)  # turns to write at the next check (a failure)


def session_of_claim(claimed: ClaimedSession) -> Session:
    """The Session a claimed one is, its turns from their stored wire form."""
    session_id, source = claimed.session_id, claimed.source
    turns = [turn_of_wire((session_id, source, *fields)).turn for fields in claimed.turns]
    session = Session(session_id, turns, source, claimed.ended, claimed.turns_cut)
    session.completed_at = claimed.completed_at
    return session


class SharedSessionTracker(SessionTracker):
    """Open sessions in the PostgreSQL `store`, shared by the replicas; `add` keeps turns until the next check."""

    def __init__(
        self,
        config: SessionsConfig,
        evaluation: SessionEvaluation,
        apply_tally: Callable[[MetricsTally], None],
        store: PostgresResultStore,
        telemetry: SessionMetrics | None = None,
        *,
        check_every: float | None = None,
        judge_sessions: JudgeSessions | None = None,
        replica: str | None = None,
    ) -> None:
        super().__init__(
            config, evaluation, apply_tally, telemetry, check_every=check_every, judge_sessions=judge_sessions
        )
        self.config = config
        self.store = store
        self.replica = replica or f"{socket.gethostname()}:{os.getpid()}"
        self._turns: list[TurnWire] = []  # evaluated here, not yet written
        self._open = 0  # sessions open in the store at the last check
        self._forgotten_at = 0.0
        self.counts = {"late": 0, "turns_cut": 0, CUT_FOR_ROOM: 0}
        self.unshared = 0  # turns dropped: the store could not be reached while max_open_turns waited

    @property
    def open_sessions(self) -> int:
        """Sessions open in the shared store (every replica's), as of the last check."""
        return self._open

    @property
    def waiting_turns(self) -> int:
        return len(self._turns)

    def add(self, turns: list[TurnWire] | tuple[TurnWire, ...]) -> None:  # type: ignore[override]
        """The turns of an evaluated batch, kept until the next check writes them (on the event loop thread)."""
        if self._stopped:
            return
        self._turns.extend(turns)
        self._bound()

    def _bound(self) -> None:
        over = len(self._turns) - self.config.max_open_turns
        if over > 0:
            del self._turns[:over]
            self.unshared += over
            if self.telemetry is not None:
                self.telemetry.unshared(over)
            log.warning("%d session turns dropped: the shared store has not taken them (sessions.max_open_turns)", over)

    def check(self) -> list[Session]:
        return []  # sessions complete in the store: `sync`

    async def evaluate_waiting(self, timeout: float | None = None) -> int:
        return await self.sync(timeout)

    async def sync(self, timeout: float | None = None, *, claim: bool = True) -> int:
        """Write the waiting turns, then claim and evaluate the sessions due (off the event loop); their results to
        the metrics and their judges. Returns the sessions evaluated here."""
        turns, self._turns = self._turns, []
        work = asyncio.to_thread(self._sync, turns, claim)
        synced = await (asyncio.wait_for(work, timeout) if timeout is not None else work)
        return self._record_synced(synced)

    def _sync(self, turns: list[TurnWire], claim: bool) -> Synced:
        """On a worker thread: one transaction for the turns (given back to wait on failure), one per claim."""
        synced = Synced()
        health = self.store.health
        try:
            if turns:
                synced.arrived = self.store.transaction(
                    lambda db: open_sessions.arrive(db, turns, self.replica, self.config.max_turns)
                )
            if claim:
                self._claim_due(synced)
        except Exception as exc:
            if synced.arrived is None:
                synced.unwritten = turns
            health.failed(OPERATION, exc)
            log.debug("sharing open sessions failed: %r", exc)
            return synced
        health.succeeded(OPERATION)
        return synced

    def _claim_due(self, synced: Synced) -> None:
        for _ in range(MAX_CLAIMS_PER_CHECK):
            claimed, evaluated, new = self.store.transaction(self._claim_and_evaluate)
            synced.evaluated += evaluated
            synced.cut_for_room += claimed.cut_for_room
            synced.news.append(new)
            if len(claimed.sessions) < CLAIM_BATCH:
                break
        synced.open = self.store.transaction(open_sessions.open_count)
        if time.monotonic() - self._forgotten_at >= FORGET_EVERY:
            self.store.transaction(open_sessions.forget_completed)
            self._forgotten_at = time.monotonic()

    def _claim_and_evaluate(self, db: Connection) -> tuple[Claimed, list[Evaluated], NewCounts]:
        """In one transaction: claim the sessions due, evaluate them, write them, mark them completed."""
        config = self.config
        claimed = open_sessions.claim(db, config.idle, CLAIM_BATCH, config.max_open_sessions)
        if not claimed.sessions:
            return claimed, [], {}
        db.renew(EVALUATION_SECONDS)
        evaluated = self.evaluation.evaluate(session_of_claim(c) for c in claimed.sessions)
        new = self.store.write_sessions(db, [SessionOutcome(s, tuple(rows)) for s, rows in evaluated])
        open_sessions.complete(db, claimed.ids)
        return claimed, evaluated, new

    def _record_synced(self, synced: Synced) -> int:
        """On the event loop: what a check did, to the metrics and the judges."""
        if synced.unwritten:
            self._turns[:0] = synced.unwritten
            self._bound()
        if synced.open is not None:
            self._open = synced.open
        if synced.arrived is not None:
            self.counts["late"] += synced.arrived.late
            self.counts["turns_cut"] += synced.arrived.cut
        self.counts[CUT_FOR_ROOM] += synced.cut_for_room
        for new in synced.news:
            self.store.news.add(new)
        sessions = [e.session for e in synced.evaluated]
        self._count_completed(sessions)
        self._count()
        if sessions:
            self._hand_to_judges(sessions)
            tally = tally_of(synced.evaluated)
            if tally.results:
                self.apply_tally(tally)
            self.evaluated += len(sessions)
        return len(sessions)

    def _book_counts(self) -> dict[str, int]:
        return dict(self.counts)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.check_every)
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception:  # an evaluator's bug must not stop the tracking
                log.exception("sharing or evaluating open sessions failed")

    async def shutdown(self, grace: float) -> None:
        """Stop checking; write the waiting turns within `grace` (the sessions stay open for the other replicas,
        or the next start, to complete)."""
        if self._stopped:
            return
        self._stopped = True
        started = time.monotonic()
        await self._stop_checking()
        try:
            await self.sync(timeout=grace, claim=False)
        except TimeoutError:
            log.warning("shutdown: %d session turns not shared within %.1fs", len(self._turns), grace)
        except Exception:
            log.exception("shutdown: sharing session turns failed")
        await self._drain_judges(max(grace - (time.monotonic() - started), 0.0))
