"""SessionTracker: the daemon's conversations. A lifecycle component in the main process.

Turns come from the evaluation pool's result path (each batch's tally carries the turns of its traces with a
session id, `monitor.engine.turn_wire`) into the `SessionBook`. A periodic check (every `check_every` seconds)
completes the sessions idle for `sessions.idle`; a completed session's rule evaluators run on a worker thread
(`asyncio.to_thread`, never on the event loop) and their results go to the metrics through the same
`apply_tally` as trace results. LLM judges at session level are handed to `judge_sessions` (the hook the judge
stage plugs into); `on_evaluated` gets each evaluated session with its rows (the hook the result store plugs into).

At shutdown (after the evaluation pool has drained, so the last turns are in) every open session is completed as
`cut` (`agent_monitor_sessions_cut_total{reason="shutdown"}`) and evaluated within the grace period. This tracker
holds sessions in memory: the daemon's without a result store (with one, `shared.StoredSessionTracker` keeps them
in it and a restart continues them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence

from evaluators.judges.control import judge_sampled_in
from evaluators.sessions import Session
from monitor.config.sessions import SessionsConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.turn_wire import TurnWire, turn_of_wire
from monitor.lifecycle import cancel_task
from monitor.metrics.sessions import SessionMetrics
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import ResultRow
from monitor.sessions.book import SessionBook
from monitor.sessions.evaluation import Evaluated, SessionEvaluation, session_tally

log = logging.getLogger(__name__)
MAX_CHECK_EVERY = 1.0  # seconds between checks at most (a fraction of `idle` when that is short)

JudgeSessions = Callable[[Session, Sequence[ConfiguredEvaluator]], None]
OnEvaluated = Callable[[Session, Sequence[ResultRow]], None]


class SessionTracker:
    """Open sessions, completed when idle (or cut), evaluated once. `clock`: the book's (tests replace it)."""

    def __init__(
        self,
        config: SessionsConfig,
        evaluation: SessionEvaluation,
        apply_tally: Callable[[MetricsTally], None],
        telemetry: SessionMetrics | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        check_every: float | None = None,
        judge_sessions: JudgeSessions | None = None,
        on_evaluated: OnEvaluated | None = None,
    ) -> None:
        self.book = SessionBook.from_config(config, clock=clock)
        self.attribute = tuple(config.attribute)
        self.evaluation = evaluation
        self.apply_tally = apply_tally
        self.telemetry = telemetry
        self.check_every = check_every if check_every is not None else min(MAX_CHECK_EVERY, config.idle / 4)
        self.judge_sessions = judge_sessions
        self.on_evaluated = on_evaluated
        self.completed = 0  # sessions completed so far
        self.evaluated = 0  # sessions whose evaluators ran
        self._waiting: list[Session] = []  # completed, not yet evaluated
        self._counted: dict[str, int] = {}  # the book's counts already in the metrics
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        if telemetry is not None:
            telemetry.observe(self)
        if evaluation.judges and judge_sessions is None:
            log.warning(
                "session-level LLM judges configured (%s) but no judge stage takes sessions yet: they are not run",
                ", ".join(c.label for c in evaluation.judges),
            )

    @property
    def open_sessions(self) -> int:
        return self.book.open_sessions

    @property
    def waiting(self) -> int:
        """Sessions completed and not yet evaluated."""
        return len(self._waiting)

    # --- turns in ------------------------------------------------------------------------------
    def flush_turns(self, timeout: float) -> bool:
        """Wait until the turns added so far are kept: here, in memory, at once (StoredSessionTracker: in the
        store)."""
        return True

    def add(self, turns: Iterable[TurnWire]) -> None:
        """The turns of an evaluated batch (wire form), on the event loop thread."""
        if self._stopped:
            return  # the daemon stops: sessions were completed already
        for wire in turns:
            self._completed(self.book.add(turn_of_wire(wire)))
        self._count()

    # --- completion and evaluation ---------------------------------------------------------------
    def check(self) -> list[Session]:
        """Complete the sessions idle long enough (they wait for `evaluate_waiting`); returns them."""
        done = self.book.due()
        self._completed(done)
        self._count()
        return done

    async def evaluate_waiting(self, timeout: float | None = None) -> int:
        """Run the evaluators of every completed session waiting, off the event loop; their results to the
        metrics. Returns the sessions evaluated."""
        sessions, self._waiting = self._waiting, []
        if not sessions:
            return 0
        self._hand_to_judges(sessions)
        if self.evaluation.rules or self.on_evaluated is not None:
            work = asyncio.to_thread(self.evaluation.evaluate, sessions)
            evaluated = await (asyncio.wait_for(work, timeout) if timeout is not None else work)
            self._record(evaluated)
        self.evaluated += len(sessions)
        return len(sessions)

    def _completed(self, sessions: list[Session]) -> None:
        """Completed sessions wait for `evaluate_waiting`."""
        self._count_completed(sessions)
        self._waiting.extend(sessions)

    def _count_completed(self, sessions: list[Session]) -> None:
        self.completed += len(sessions)
        if self.telemetry is not None:
            for session in sessions:
                self.telemetry.completed(session.service, session.ended, len(session.turns) + session.turns_cut)

    def _book_counts(self) -> dict[str, int]:
        """The counts `_count` reports: late turns, turns cut, sessions cut by reason."""
        book = self.book
        return {"late": book.late_turns, "turns_cut": book.turns_cut, **book.cut}

    def _count(self) -> None:
        """What the book counted since the last call, to the metrics: late turns, turns cut, sessions cut."""
        counted, telemetry = self._counted, self.telemetry
        now = self._book_counts()
        if telemetry is not None:
            for key, n in now.items():
                new = n - counted.get(key, 0)
                if new <= 0:
                    continue
                if key == "late":
                    telemetry.late(new)
                elif key == "turns_cut":
                    telemetry.turns_cut(new)
                else:
                    telemetry.cut(key, new)
        self._counted = now

    def _hand_to_judges(self, sessions: list[Session]) -> None:
        """The hook for session-level LLM judges: each session with the judges that sample it in."""
        if self.judge_sessions is None or not self.evaluation.judges:
            return
        for session in sessions:
            chosen = [c for c in self.evaluation.judges if judge_sampled_in(session.session_id, c.sampling)]
            if chosen:
                self.judge_sessions(session, chosen)

    def _record(self, evaluated: list[Evaluated]) -> None:
        tally = session_tally(evaluated)
        if tally.results:
            self.apply_tally(tally)
        if self.on_evaluated is not None:
            for session, rows in evaluated:
                self.on_evaluated(session, rows)

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None and not self._stopped:
            self._task = asyncio.create_task(self._run(), name="session-tracker")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.check_every)
            try:
                self.check()
                await self.evaluate_waiting()
            except asyncio.CancelledError:
                raise
            except Exception:  # an evaluator's bug must not stop the tracking
                log.exception("evaluating completed sessions failed")

    async def shutdown(self, grace: float) -> None:
        """Stop checking; complete every open session as `cut` and evaluate it (with those waiting) within
        `grace` seconds."""
        if self._stopped:
            return
        self._stopped = True
        started = time.monotonic()
        await self._stop_checking()
        self._completed(self.book.close_all())
        self._count()
        left = max(grace - (time.monotonic() - started), 0.0)
        try:
            await self.evaluate_waiting(timeout=left)
        except TimeoutError:
            log.warning("shutdown: completed sessions not evaluated within %.1fs", left)
        except Exception:
            log.exception("shutdown: evaluating completed sessions failed")
        await self._drain_judges(max(grace - (time.monotonic() - started), 0.0))

    async def _stop_checking(self) -> None:
        await cancel_task(self._task)
        self._task = None

    async def _drain_judges(self, grace: float) -> None:
        drain = getattr(self.judge_sessions, "drain", None)
        if drain is not None:  # the judge engine closes after the tracker (lifecycle order)
            await drain(grace)
