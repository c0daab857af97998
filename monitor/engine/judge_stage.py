"""JudgeStage: the judgements the workers prepared → the judge engine, as asyncio tasks on the event loop.

Judges are I/O-bound: they wait on the judge model for seconds, so they never hold an evaluation worker.
Workers build the prompts (where the views are) and send `JudgeJob`s back with their batch's metrics tally;
here each job becomes a task that waits for the engine (its concurrency, rate and budget limits are the
engine's). A result is counted in the metrics like any other evaluator's (one small tally per judgement) and
added to its trace in the result store (`LateResults`).

At most `max_pending` judgements wait: beyond it a job is answered at once with a `rate_limited` skip
("judge backlog full", told to `on_capacity_skip` as `judges.max_pending`), so a slow or down judge API costs
bounded memory and is visible in the metrics. At shutdown, judgements still waiting after the grace period are
cancelled: with a `keeper` (the result store keeps the waiting judgements, pending.py) they stay kept for the next
start, uncounted; without one each is counted as a `judge_unavailable` skip.

With a keeper every accepted job is kept in the store when it is submitted (a refused one is not) and forgotten
in the transaction that writes its result (`LateResults.resolved`); `resume` submits the ones a restart found, and
the same judgement submitted again in that run (its trace evaluated again by the intake log's replay, with
`store.results: failing`) is left to the resumed one.
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
from monitor.engine.pending import EXPIRED, PendingKeeper, Stored, job_of
from monitor.engine.signing import Signer
from monitor.logutil import RateLimitedLogger
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import JudgeJob, LateResults, ResultRow, result_row

log = logging.getLogger(__name__)

ApplyTally = Callable[[MetricsTally], None]
StoreWrite = Callable[[Sequence[LateResults]], None]
CapacitySkip = Callable[[str, str], None]  # (judge, limit): JudgeObserver.capacity_skip
BACKLOG_LIMIT = "judges.max_pending"
BACKLOG_FULL = "judge backlog full"
TraceKey = tuple[str, str, str, str]  # (trace id, service, variant, version)
Done = tuple[JudgeJob, EvalResult, str | None]  # a job, its result, and its kept row's id (None: not kept)


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
        keeper: PendingKeeper | None = None,
    ) -> None:
        """`judges`: the configured judge instances by label; `judge`: the engine's `judge` coroutine function;
        `signer`: the failure signatures of failing verdicts (`signatures.rules`); `on_capacity_skip`: told of
        each job refused because the backlog is full; `keeper`: where the waiting jobs are kept (None: nowhere)."""
        self.judges = dict(judges)
        self.signer = signer if signer is not None else Signer()
        self._judge = judge
        self._apply = apply_tally
        self._write = write
        self.max_pending = max_pending
        self._on_capacity_skip = on_capacity_skip
        self.keeper = keeper
        self._resumed: set[tuple[str, str, str, str]] = set()  # the judgements resumed in this run (`_identity`)
        self._tasks: set[asyncio.Task[None]] = set()
        self._unavailable = RateLimitedLogger(log, per_minute=1)  # an outage is one line a minute, not one a trace
        self._closed = False
        self.submitted = 0
        self.completed = 0

    @property
    def pending(self) -> int:
        return len(self._tasks)

    @property
    def closed(self) -> bool:
        """Shutting down: no more jobs."""
        return self._closed

    async def start(self) -> None:
        """Nothing to start: tasks are created as jobs arrive."""

    def submit(self, jobs: Iterable[JudgeJob]) -> None:
        """Start a task per job (on the event loop thread), each kept by the keeper; over `max_pending`, or once
        closed, a skip at once (not kept)."""
        keeper, now = self.keeper, time.time()
        kept = []
        refused: list[Done] = []
        for job in jobs:
            if self._resumed and _identity(job) in self._resumed:
                continue  # asked again (a trace the intake log's replay evaluated again): the resumed one answers
            self.submitted += 1
            reason = self._refusal(job)
            if reason is not None:
                refused.append((job, self._refused(job, reason), None))
                continue
            key = None
            if keeper is not None:
                key = keeper.new_id()
                kept.append(keeper.job_row(job, key, now))
            self._start(job, key)
        if keeper is not None:
            keeper.keep(kept)
        if refused:
            self._record(refused)

    def resume(self, stored: Sequence[Stored], max_age: float, now: float | None = None) -> tuple[int, int]:
        """Submit again the kept judgements a restart found (oldest first, within `max_pending`: beyond it the
        usual `rate_limited` skip); one older than `max_age` seconds is a `judge_unavailable` skip instead. Each
        keeps its row until its result is written. (resumed, expired)."""
        now = time.time() if now is None else now
        done: list[Done] = []
        resumed = expired = 0
        for row in stored:
            self.submitted += 1
            job = job_of(row.payload)
            self._resumed.add(_identity(job))
            reason = EXPIRED if now - row.created_at > max_age else self._refusal(job)
            expired += reason == EXPIRED
            if reason is None:
                self._start(job, row.id)
                resumed += 1
            else:
                done.append((job, self._refused(job, reason), row.id))
        if done:
            self._record(done)
        return resumed, expired

    def _start(self, job: JudgeJob, key: str | None) -> None:
        task = asyncio.get_running_loop().create_task(self._run(job, key), name=f"judge {job.evaluator}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)

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

    async def _run(self, job: JudgeJob, key: str | None) -> None:
        started = time.perf_counter()
        try:
            result = await self._judge(self.judges[job.evaluator], job.request, name=job.evaluator)
        except asyncio.CancelledError:
            if key is None:  # not kept: it is lost, and counted
                self._record([(job, EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, "cancelled at shutdown"), key)])
            raise
        except Exception as exc:  # the engine answers its own failures with skips: this is a bug, not an outage
            log.exception("judge %s failed on trace %s", job.evaluator, job.trace_id)
            result = EvalResult.skip(SkipReason.ERROR, f"{type(exc).__name__}: {exc}"[:300])
        self._record([(job, result, key)], time.perf_counter() - started)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)

    def _record(self, done: list[Done], seconds: float = 0.0) -> None:
        tally = MetricsTally()
        late: dict[TraceKey, list[ResultRow]] = {}
        resolved: dict[TraceKey, list[str]] = {}
        for job, result, key in done:
            if result.skip_reason is SkipReason.JUDGE_UNAVAILABLE:
                self._unavailable.warning("judge_unavailable", "judge %s: %s", job.evaluator, result.explanation)
            row = judge_row(job, result, seconds, self.signer(job.evaluator, job.level, job.agent, result))
            tally.add_results(job.service, job.trace_id, (row,), job.variant)
            trace = (job.trace_id, job.service, job.variant, job.version)
            late.setdefault(trace, []).append(row)
            if key is not None:
                resolved.setdefault(trace, []).append(key)
            self.completed += 1
        try:
            self._apply(tally)
        except Exception:
            log.exception("could not record %d judge results", len(done))
        if self._write is not None:
            self._write(late_results(late, resolved))

    async def drain(self, timeout: float) -> int:
        """Wait up to `timeout` for the judgements in flight; returns how many are still pending."""
        return await drain_tasks(self._tasks, timeout)

    async def shutdown(self, grace: float) -> None:
        """Take no more jobs; wait up to `grace`, then cancel the rest (kept for the next start, or each counted
        as a skip without a keeper). Idempotent."""
        self._closed = True
        if await self.drain(grace):
            tasks = set(self._tasks)
            if self.keeper is not None:
                log.info("shutdown: %d judgement(s) still waiting, kept for the next start", len(tasks))
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _identity(job: JudgeJob) -> tuple[str, str, str, str]:
    """What a judgement is about: the same judge on the same dispatch unit of the same trace."""
    return job.trace_id, job.evaluator, job.level, job.span_id or ""


def late_results(
    rows: Mapping[TraceKey, list[ResultRow]], resolved: Mapping[TraceKey, list[str]] | None = None
) -> list[LateResults]:
    """{(trace id, service, variant, version): rows} as the store's LateResults, one per trace, each with the ids
    of the kept judgements it settles (`resolved`)."""
    settled = resolved or {}
    return [
        LateResults(trace_id, service, tuple(found), variant, version, tuple(settled.get(key, ())))
        for key, found in rows.items()
        for trace_id, service, variant, version in (key,)
    ]


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
