"""StoredSessionTracker: conversations kept in the result store, so that a restart neither cuts nor splits them;
with PostgreSQL, shared by every replica of the store.

No open session is held in memory: the tracker writes the turns it receives to the store's open-session tables
(`OpenSessionTables.arrive`, off the event loop, a few milliseconds after they arrive: `WRITE_EVERY`, batched), and
claims the sessions idle for `sessions.idle` on the store's clock (`claim`) every `check_every` seconds: it
evaluates each claimed session from all its turns, writes its `sessions` row and results and marks it completed in
that one transaction. The tables are the store's (`QueuedResultStore.open_session_tables`):
- PostgreSQL (postgres/open_sessions.py, `sessions.shared`): the Collector routes spans by trace id, so the turns
  of one conversation reach different replicas; each writes its own, and a due session is claimed by exactly one
  (`FOR UPDATE SKIP LOCKED`) on the database's clock. A replica that dies mid-claim rolls back, another claims it.
- SQLite (open_sessions_sqlite.py): the one replica's file, on this host's wall clock.
So a session is evaluated, stored and counted in the metrics exactly once, across replicas and restarts.

The limits hold in the store: `max_turns` per session (counted at arrival), `max_open_sessions` (beyond it the
longest-idle sessions are claimed early, ended `cut`). Turns wait in memory between writes, at most
`max_open_turns` of them: while the database cannot be reached the oldest are dropped beyond that, and counted
(`agent_monitor_session_turns_unshared_total`). Failures count as the store's `sessions` operation. At shutdown the
waiting turns are written and the sessions left open (not `cut`): the replicas still running, or the next start,
complete them; one whose idle time passed while the daemon was down is claimed at its first check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluators.sessions import Session
from monitor.config.sessions import SessionsConfig
from monitor.engine.turn_wire import TurnWire, turn_of_wire
from monitor.metrics.sessions import SessionMetrics
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import SessionOutcome
from monitor.sessions.book import CUT_FOR_ROOM
from monitor.sessions.evaluation import Evaluated, SessionEvaluation, session_tally
from monitor.sessions.storing import OnEvaluated
from monitor.sessions.tracker import JudgeSessions, SessionTracker
from monitor.store.open_session_rows import Arrived, Claimed, ClaimedSession
from monitor.store.signatures import NewCounts
from monitor.store.writer import QueuedResultStore

log = logging.getLogger(__name__)
OPERATION = "sessions"  # the store operation its failures count as
CLAIM_BATCH = 50  # sessions claimed (and evaluated) per transaction
MAX_CLAIMS_PER_CHECK = 20  # transactions per check at most (the next check goes on)
EVALUATION_SECONDS = 60.0  # how long the claim's transaction may wait between statements while it evaluates
FORGET_EVERY = 60.0  # seconds between deletions of long-completed sessions' rows
WRITE_EVERY = 0.05  # seconds between two writes of the turns received (at most: they go together meanwhile)


@dataclass(slots=True)
class Synced:
    """What one check did: turns written, sessions claimed and evaluated (with the signatures they counted new)."""

    arrived: Arrived | None = None
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


class StoredSessionTracker(SessionTracker):
    """Open sessions in the `store` (its `open_session_tables`); `add` keeps turns until the next write."""

    def __init__(
        self,
        config: SessionsConfig,
        evaluation: SessionEvaluation,
        apply_tally: Callable[[MetricsTally], None],
        store: QueuedResultStore,
        telemetry: SessionMetrics | None = None,
        *,
        check_every: float | None = None,
        judge_sessions: JudgeSessions | None = None,
        replica: str | None = None,
        on_evaluated: OnEvaluated | None = None,
    ) -> None:
        """`on_evaluated(session, rows)`: told of each session evaluated here, once its transaction is committed
        (the evaluation exporter's hook: the store has the session already)."""
        super().__init__(
            config,
            evaluation,
            apply_tally,
            telemetry,
            check_every=check_every,
            judge_sessions=judge_sessions,
            on_evaluated=on_evaluated,
        )
        tables = store.open_session_tables
        if tables is None:
            raise TypeError(f"{type(store).__name__} keeps no open sessions")
        self.config = config
        self.store = store
        self.tables = tables
        self._wake = asyncio.Event()  # turns arrived: write them soon
        self._held = False  # the last write failed: the waiting turns are tried again at the next check only
        self._added = 0  # `add` calls so far; the turns of the first `_written` of them are in the store
        self._written = 0
        self._written_changed = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.replica = replica or f"{socket.gethostname()}:{os.getpid()}"
        self._turns: list[TurnWire] = []  # evaluated here, not yet written
        self._open = 0  # sessions open in the store at the last check
        self._forgotten_at = 0.0
        self.counts = {"late": 0, "turns_cut": 0, CUT_FOR_ROOM: 0}
        self.unshared = 0  # turns dropped: the store could not be reached while max_open_turns waited

    @property
    def open_sessions(self) -> int:
        """Sessions open in the store (with PostgreSQL every replica's), as of the last check."""
        return self._open

    @property
    def waiting_turns(self) -> int:
        return len(self._turns)

    def add(self, turns: list[TurnWire] | tuple[TurnWire, ...]) -> None:  # type: ignore[override]
        """The turns of an evaluated batch, kept until the next write (on the event loop thread, within
        `WRITE_EVERY` once started)."""
        if self._stopped or not turns:
            return
        self._turns.extend(turns)
        self._added += 1
        self._bound()
        if not self._held:
            self._wake.set()

    def _bound(self) -> None:
        over = len(self._turns) - self.config.max_open_turns
        if over > 0:
            del self._turns[:over]
            self.unshared += over
            if self.telemetry is not None:
                self.telemetry.unshared(over)
            log.warning("%d session turns dropped: the store has not taken them (sessions.max_open_turns)", over)

    def check(self) -> list[Session]:
        return []  # sessions complete in the store: `sync`

    async def evaluate_waiting(self, timeout: float | None = None) -> int:
        return await self.sync(timeout)

    async def sync(self, timeout: float | None = None, *, claim: bool = True) -> int:
        """Write the waiting turns, then claim and evaluate the sessions due (off the event loop); their results to
        the metrics and their judges. Returns the sessions evaluated here."""
        turns, self._turns, added = self._turns, [], self._added
        work = asyncio.to_thread(self._sync, turns, claim)
        synced = await (asyncio.wait_for(work, timeout) if timeout is not None else work)
        if not synced.unwritten:
            with self._written_changed:
                self._written = max(self._written, added)
                self._written_changed.notify_all()
        return self._record_synced(synced)

    def flush_turns(self, timeout: float) -> bool:
        """From any thread but the event loop's: wait until the turns added before the call are in the store (a
        write is started at once); False when they are not within `timeout` seconds (or the tracker is not
        running). The hook for what must not outlive its turns (the intake log's release of a segment)."""
        target, loop = self._added, self._loop
        if self._written >= target:
            return True
        if loop is None or loop.is_closed():
            return False
        loop.call_soon_threadsafe(self._wake.set)
        with self._written_changed:
            return self._written_changed.wait_for(lambda: self._written >= target, timeout)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await super().start()

    def _sync(self, turns: list[TurnWire], claim: bool) -> Synced:
        """On a worker thread: one transaction for the turns (given back to wait on failure), one per claim."""
        synced = Synced()
        health = self.store.health
        try:
            if turns:
                synced.arrived = self.store.transaction(
                    lambda db: self.tables.arrive(db, turns, self.replica, self.config.max_turns)
                )
            if claim:
                self._claim_due(synced)
        except Exception as exc:
            if synced.arrived is None:
                synced.unwritten = turns
            health.failed(OPERATION, exc)
            log.debug("keeping open sessions in the store failed: %r", exc)
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
        synced.open = self.store.transaction(self.tables.open_count)
        if time.monotonic() - self._forgotten_at >= FORGET_EVERY:
            self.store.transaction(self.tables.forget_completed)
            self._forgotten_at = time.monotonic()

    def _claim_and_evaluate(self, db: Any) -> tuple[Claimed, list[Evaluated], NewCounts]:
        """In one transaction: claim the sessions due, evaluate them, write them, mark them completed."""
        config, tables = self.config, self.tables
        claimed = tables.claim(db, config.idle, CLAIM_BATCH, config.max_open_sessions)
        if not claimed.sessions:
            return claimed, [], {}
        tables.hold(db, EVALUATION_SECONDS)
        evaluated = self.evaluation.evaluate(session_of_claim(c) for c in claimed.sessions)
        new = self.store.write_sessions(db, [SessionOutcome(s, tuple(rows)) for s, rows in evaluated])
        tables.complete(db, claimed.ids)
        return claimed, evaluated, new

    def _record_synced(self, synced: Synced) -> int:
        """On the event loop: what a check did, to the metrics and the judges."""
        self._held = bool(synced.unwritten)
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
            tally = session_tally(synced.evaluated)
            if tally.results:
                self.apply_tally(tally)
            if self.on_evaluated is not None:
                for session, rows in synced.evaluated:
                    self.on_evaluated(session, rows)
            self.evaluated += len(sessions)
        return len(sessions)

    def _book_counts(self) -> dict[str, int]:
        return dict(self.counts)

    async def _run(self) -> None:
        """Write the turns received within `WRITE_EVERY`; claim the sessions due at once (those whose idle time
        passed while the daemon was down), then every `check_every` seconds."""
        next_check = time.monotonic()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(next_check - time.monotonic(), 0.0))
            self._wake.clear()
            claim = time.monotonic() >= next_check
            if claim:
                next_check = time.monotonic() + self.check_every
            try:
                await self.sync(claim=claim)
            except asyncio.CancelledError:
                raise
            except Exception:  # an evaluator's bug must not stop the tracking
                log.exception("keeping or evaluating open sessions failed")
            if not claim:
                await asyncio.sleep(WRITE_EVERY)  # the turns arriving meanwhile go in the next write together

    async def shutdown(self, grace: float) -> None:
        """Stop checking; write the waiting turns within `grace` (the sessions stay open, not `cut`: the other
        replicas, or the next start, complete them)."""
        if self._stopped:
            return
        self._stopped = True
        started = time.monotonic()
        await self._stop_checking()
        try:
            await self.sync(timeout=grace, claim=False)
        except TimeoutError:
            log.warning("shutdown: %d session turns not written to the store within %.1fs", len(self._turns), grace)
        except Exception:
            log.exception("shutdown: writing session turns to the store failed")
        await self._drain_judges(max(grace - (time.monotonic() - started), 0.0))


SharedSessionTracker = StoredSessionTracker  # its name while only PostgreSQL kept open sessions
