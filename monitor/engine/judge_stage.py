"""JudgeStage: the judgements the workers prepared → the judge engine, as asyncio tasks on the event loop.

Judges are I/O-bound: they wait on the judge model for seconds, so they never hold an evaluation worker.
Workers build the prompts (where the views are) and send `JudgeJob`s back with their batch's metrics tally;
here each job becomes a task that waits for the engine (its concurrency, rate and budget limits are the
engine's). A result is counted in the metrics like any other evaluator's (one small tally per judgement) and
added to its trace in the result store (`LateResults`).

At most `max_pending` judgements wait: beyond it a job is answered at once with a `rate_limited` skip
("judge backlog full", told to `on_capacity_skip` as `judges.max_pending`), so a slow or down judge API costs
bounded memory and is visible in the metrics. At shutdown, judgements still waiting after the grace period are
cancelled and counted as `judge_unavailable` skips.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from evaluators.judges import JudgeCall, LLMJudge
from evaluators.sdk import EvalResult, SkipReason
from evaluators.signatures import FailureSignature
from monitor.config.judges import JudgesConfig
from monitor.engine.signing import Signer
from monitor.logutil import RateLimitedLogger
from monitor.metrics.tally import MetricsTally
from monitor.store.rows import JudgeJob, LateResults, ResultRow, result_row

log = logging.getLogger(__name__)

ApplyTally = Callable[[MetricsTally], None]
StoreWrite = Callable[[Sequence[LateResults]], None]
CapacitySkip = Callable[[str, str], None]  # (judge, limit): JudgeObserver.capacity_skip
BACKLOG_LIMIT = "judges.max_pending"
BACKLOG_FULL = "judge backlog full"
TraceKey = tuple[str, str, str, str]  # (trace id, service, variant, version)


class JudgeStage:
    def __init__(
        self,
        judges: Mapping[str, LLMJudge],
        judge: JudgeCall,
        apply_tally: ApplyTally,
        write: StoreWrite | None = None,
        *,
        max_pending: int = JudgesConfig.model_fields["max_pending"].default,
        signer: Signer | None = None,
        on_capacity_skip: CapacitySkip | None = None,
    ) -> None:
        """`judges`: the configured judge instances by label; `judge`: the engine's `judge` coroutine function;
        `signer`: the failure signatures of failing verdicts (`signatures.rules`); `on_capacity_skip`: told of
        each job refused because the backlog is full."""
        self.judges = dict(judges)
        self.signer = signer if signer is not None else Signer()
        self._judge = judge
        self._apply = apply_tally
        self._write = write
        self.max_pending = max_pending
        self._on_capacity_skip = on_capacity_skip
        self._tasks: set[asyncio.Task[None]] = set()
        self._unavailable = RateLimitedLogger(log, per_minute=1)  # an outage is one line a minute, not one a trace
        self._closed = False
        self.submitted = 0
        self.completed = 0

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def start(self) -> None:
        """Nothing to start: tasks are created as jobs arrive."""

    def submit(self, jobs: Iterable[JudgeJob]) -> None:
        """Start a task per job (on the event loop thread); over `max_pending`, or once closed, a skip at once."""
        refused: list[tuple[JudgeJob, EvalResult]] = []
        for job in jobs:
            self.submitted += 1
            reason = self._refusal(job)
            if reason is not None:
                refused.append((job, self._refused(job, reason)))
                continue
            task = asyncio.get_running_loop().create_task(self._run(job), name=f"judge {job.evaluator}")
            self._tasks.add(task)
            task.add_done_callback(self._finished)
        if refused:
            self._record(refused)

    def _refused(self, job: JudgeJob, reason: str) -> EvalResult:
        if reason != BACKLOG_FULL:
            return EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, reason)
        if self._on_capacity_skip is not None:
            self._on_capacity_skip(job.evaluator, BACKLOG_LIMIT)
        return EvalResult.skip(
            SkipReason.RATE_LIMITED, f"{reason} ({self.max_pending} judgements wait: {BACKLOG_LIMIT})"
        )

    def _refusal(self, job: JudgeJob) -> str | None:
        """Why `job` cannot wait for a judgement now, or None when it can."""
        if job.evaluator not in self.judges:
            return f"no judge {job.evaluator!r} in this process"
        if self._closed:
            return "the daemon is shutting down"
        if len(self._tasks) >= self.max_pending:
            return BACKLOG_FULL
        return None

    async def _run(self, job: JudgeJob) -> None:
        started = time.perf_counter()
        try:
            result = await self._judge(self.judges[job.evaluator], job.request, name=job.evaluator)
        except asyncio.CancelledError:
            self._record([(job, EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, "cancelled at shutdown"))], 0.0)
            raise
        except Exception as exc:  # the engine answers its own failures with skips: this is a bug, not an outage
            log.exception("judge %s failed on trace %s", job.evaluator, job.trace_id)
            result = EvalResult.skip(SkipReason.ERROR, f"{type(exc).__name__}: {exc}"[:300])
        self._record([(job, result)], time.perf_counter() - started)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)

    def _record(self, done: list[tuple[JudgeJob, EvalResult]], seconds: float = 0.0) -> None:
        tally = MetricsTally()
        late: dict[TraceKey, list[ResultRow]] = {}
        for job, result in done:
            if result.skip_reason is SkipReason.JUDGE_UNAVAILABLE:
                self._unavailable.warning("judge_unavailable", "judge %s: %s", job.evaluator, result.explanation)
            row = judge_row(job, result, seconds, self.signer(job.evaluator, job.level, job.agent, result))
            tally.add_results(job.service, job.trace_id, (row,), job.variant)
            late.setdefault((job.trace_id, job.service, job.variant, job.version), []).append(row)
            self.completed += 1
        try:
            self._apply(tally)
        except Exception:
            log.exception("could not record %d judge results", len(done))
        if self._write is not None:
            self._write(late_results(late))

    async def drain(self, timeout: float) -> int:
        """Wait up to `timeout` for the judgements in flight; returns how many are still pending."""
        return await drain_tasks(self._tasks, timeout)

    async def shutdown(self, grace: float) -> None:
        """Take no more jobs; wait up to `grace`, then cancel the rest (each counted as a skip). Idempotent."""
        self._closed = True
        if await self.drain(grace):
            tasks = set(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def late_results(rows: Mapping[TraceKey, list[ResultRow]]) -> list[LateResults]:
    """{(trace id, service, variant, version): rows} as the store's LateResults, one per trace."""
    return [LateResults(trace_id, service, tuple(found), *rest) for (trace_id, service, *rest), found in rows.items()]


async def drain_tasks(tasks: set[asyncio.Task[None]], timeout: float) -> int:
    """Wait up to `timeout` for `tasks` (a live set: finished tasks leave it); how many are still running."""
    if tasks:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait(set(tasks), timeout=max(timeout, 0.0))
    return len(tasks)


def judge_row(
    job: JudgeJob, result: EvalResult, seconds: float, signature: FailureSignature | None = None
) -> ResultRow:
    """The row of a judgement of `job`."""
    return result_row(
        result,
        span_id=job.span_id,
        agent=job.agent,
        model=job.model,
        evaluator=job.evaluator,
        level=job.level,
        seconds=seconds,
        signature=signature,
    )
