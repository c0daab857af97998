"""SessionJudging: the session-level LLM judges of a completed session, sent through the daemon's judge engine.

The tracker hands each completed session with the judges that sample it in (`SessionTracker.judge_sessions`);
each session becomes one task on the event loop that sends its judgements together
(`evaluators.judges.judge_session`: the engine's limits, budgets and cache apply, a judge that is down gives
`judge_unavailable` skips), ties each verdict to the turn it names, and records the rows like the rule
evaluators' (`tally_of`: level "session", the last turn's trace id as exemplar, failure signatures) and hands
them to `on_judged` (the result store's hook, storing.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from evaluators.judges import JudgeCall, LLMJudge, judge_session
from evaluators.sessions import Session
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.signing import Signer
from monitor.metrics.tally import MetricsTally
from monitor.sessions.evaluation import LEVEL, Evaluated, tally_of
from monitor.store.rows import ResultRow, result_row

log = logging.getLogger(__name__)


class SessionJudging:
    """Callable as the tracker's `judge_sessions` hook; `drain` waits for the judgements in flight."""

    def __init__(
        self,
        judge_call: JudgeCall,
        apply_tally: Callable[[MetricsTally], None],
        signer: Signer | None = None,
        on_judged: Callable[[Session, Sequence[ResultRow]], None] | None = None,
    ) -> None:
        self.judge_call = judge_call
        self.apply_tally = apply_tally
        self.on_judged = on_judged
        self.signer = signer if signer is not None else Signer()
        self._tasks: set[asyncio.Task[None]] = set()
        self.judged = 0  # sessions whose judgements are recorded

    @property
    def pending(self) -> int:
        return len(self._tasks)

    def __call__(self, session: Session, chosen: Sequence[ConfiguredEvaluator]) -> None:
        judges = [(c.evaluator, c.label) for c in chosen if isinstance(c.evaluator, LLMJudge)]
        if not judges:
            return
        task = asyncio.get_running_loop().create_task(self._judge(session, judges), name="session-judges")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _judge(self, session: Session, judges: list[tuple[LLMJudge, str]]) -> None:
        started = time.perf_counter()
        try:
            results = await judge_session(session, judges, self.judge_call)
        except asyncio.CancelledError:
            raise
        except Exception:  # a judge's bug must not stop the others
            log.exception("judging session %s failed", session.session_id)
            return
        seconds = time.perf_counter() - started
        rows = [
            result_row(result, span_id=None, agent=None, model=None, evaluator=label, level=LEVEL, seconds=seconds,
                       signature=self.signer(label, LEVEL, None, result))
            for label, result in results
        ]  # fmt: skip
        self.apply_tally(tally_of([Evaluated(session, rows)]))
        if self.on_judged is not None:
            self.on_judged(session, rows)
        self.judged += 1

    async def drain(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the judgements in flight; cancel what is left."""
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=max(timeout, 0.0))
        for task in late:
            task.cancel()
        if late:
            log.warning("shutdown: %d session judgement(s) not done in time, cancelled", len(late))
