"""SessionJudging: the session-level LLM judges of a completed session, sent through the daemon's judge engine.

The tracker hands each completed session with the judges that sample it in (`SessionTracker.judge_sessions`);
each session becomes one task on the event loop that sends its judgements together
(`evaluators.judges.judge_session`: the engine's limits, budgets and cache apply, a judge that is down gives
`judge_unavailable` skips), ties each verdict to the turn it names, and records the rows like the rule
evaluators' (`session_tally`: level "session", the last turn's trace id as exemplar, failure signatures) and hands
them to `on_judged` (the result store's hook, storing.py).

With a `keeper` (the result store keeps waiting judgements, monitor/engine/pending.py) each session waiting for its
judges is kept until their rows are written (in that write: `on_judged(session, rows, resolved)`); at shutdown the
ones cancelled stay kept, and `resume` judges them after the next start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from evaluators.judges import JudgeCall, LLMJudge, judge_session
from evaluators.sdk import EvalResult, SkipReason
from evaluators.sessions import Session
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.pending import EXPIRED, PendingKeeper, Stored, session_of
from monitor.engine.signing import Signer
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import result_row
from monitor.sessions.evaluation import LEVEL, Evaluated, session_tally

log = logging.getLogger(__name__)


class SessionJudging:
    """Callable as the tracker's `judge_sessions` hook; `drain` waits for the judgements in flight."""

    def __init__(
        self,
        judge_call: JudgeCall,
        apply_tally: Callable[[MetricsTally], None],
        signer: Signer | None = None,
        on_judged: Callable[..., None] | None = None,
        keeper: PendingKeeper | None = None,
    ) -> None:
        """`on_judged(session, rows[, resolved])`: the rows to store (with the kept judgements they settle)."""
        self.judge_call = judge_call
        self.apply_tally = apply_tally
        self.on_judged = on_judged
        self.keeper = keeper
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
        key = None
        if self.keeper is not None:
            key = self.keeper.new_id()
            self.keeper.keep([self.keeper.session_row(session, [label for _, label in judges], key, time.time())])
        self._start(session, judges, key)

    def _start(self, session: Session, judges: list[tuple[LLMJudge, str]], key: str | None) -> None:
        task = asyncio.get_running_loop().create_task(self._judge(session, judges, key), name="session-judges")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def resume(
        self, stored: Sequence[Stored], judges: Mapping[str, LLMJudge], max_age: float, now: float
    ) -> tuple[int, int]:
        """Judge again the kept sessions a restart found, by their judges still configured (`judges`, by label);
        one kept longer than `max_age` seconds gets `judge_unavailable` skips instead. (resumed, expired)."""
        resumed = expired = 0
        for row in stored:
            session, labels = session_of(row.payload)
            chosen = [(judges[label], label) for label in labels if label in judges]
            if not chosen and self.keeper is not None:
                self.keeper.forget([row.id])
            elif now - row.created_at > max_age:
                skip = EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, EXPIRED)
                self._record(session, [(label, skip) for _, label in chosen], 0.0, row.id)
                expired += 1
            else:
                self._start(session, chosen, row.id)
                resumed += 1
        return resumed, expired

    async def _judge(self, session: Session, judges: list[tuple[LLMJudge, str]], key: str | None = None) -> None:
        started = time.perf_counter()
        try:
            results = await judge_session(session, judges, self.judge_call)
        except asyncio.CancelledError:
            raise  # kept (with a keeper) for the next start
        except Exception:  # a judge's bug must not stop the others
            log.exception("judging session %s failed", session.session_id)
            return
        self._record(session, results, time.perf_counter() - started, key)

    def _record(self, session: Session, results: list[tuple[str, EvalResult]], seconds: float, key: str | None) -> None:
        rows = [
            result_row(result, span_id=None, agent=None, model=None, evaluator=label, level=LEVEL, seconds=seconds,
                       signature=self.signer(label, LEVEL, None, result))
            for label, result in results
        ]  # fmt: skip
        self.apply_tally(session_tally([Evaluated(session, rows)]))
        if self.on_judged is not None:
            self.on_judged(session, rows, (key,)) if key is not None else self.on_judged(session, rows)
        self.judged += 1

    async def drain(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the judgements in flight; cancel what is left."""
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=max(timeout, 0.0))
        for task in late:
            task.cancel()
        if late and self.keeper is not None:
            log.info("shutdown: %d session judgement(s) not done in time, kept for the next start", len(late))
        elif late:
            log.warning("shutdown: %d session judgement(s) not done in time, cancelled", len(late))
