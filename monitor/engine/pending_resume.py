"""PendingResumer: at start, the waiting judgements a restart found in the result store (pending.py) submitted
again, before the receivers open; with PostgreSQL, this replica's heartbeat and the adoption of the judgements of
replicas that are gone, all along.

"Within their budget": a kept judgement older than `judges.pending_max_age` is not sent: it is recorded as a
`judge_unavailable` skip ("expired while the daemon was down"), and so is a kept pairwise offer that old; the
others go through the same stages as new ones (the engine's concurrency, rate and daily token budget apply;
beyond `judges.max_pending` the usual `rate_limited` skip). Restored pairwise offers keep their offer time: their
`window` runs on, and those past it are `no_pair` skips at once. Each row stays kept until the result that
settles it is written, so a judgement is stored once, and counted once, even when the daemon dies again mid-way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from evaluators.sdk import EvalResult, SkipReason
from monitor.engine.judge_stage import JudgeStage
from monitor.engine.pairwise_stage import Done, PairwiseStage, entry_key
from monitor.engine.pending import (
    EXPIRED,
    JUDGEMENT,
    PAIR_OFFER,
    SESSION,
    PendingKeeper,
    Stored,
    job_of,
    offer_of,
    session_of,
)
from monitor.outcomes import result_row

log = logging.getLogger(__name__)

CountResumed = Callable[[str, str, int], None]  # (kind, outcome, how many): JudgeMetrics.resumed
HEARTBEATS_PER_LEASE = 3
RELEASE_FLUSH_SECONDS = 5.0  # the least a stopping replica waits for its writes before it gives its rows up


class SessionJudges(Protocol):
    """The session tracker's judge hook (monitor.sessions.judging.SessionJudging)."""

    def resume(
        self, stored: Sequence[Stored], judges: Mapping[str, Any], max_age: float, now: float
    ) -> tuple[int, int]: ...


class PendingResumer:
    """The daemon part that resumes the kept judgements at start (see the module docstring)."""

    def __init__(
        self,
        keeper: PendingKeeper,
        judges: JudgeStage,
        pairwise: PairwiseStage | None,
        max_age: float,
        count: CountResumed | None = None,
        sessions: tuple[SessionJudges, Mapping[str, Any]] | None = None,
    ) -> None:
        """`sessions`: the session tracker's judge hook and its session-level LLM judges by label, if any."""
        self.keeper = keeper
        self.judges = judges
        self.pairwise = pairwise
        self.sessions = sessions
        self.max_age = max_age
        self._count = count
        self._adopted = False
        self._loop: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Adopt and submit what earlier runs left; then, with PostgreSQL (or when the store could not be read),
        heartbeat and adopt every third of the lease."""
        await self.adopt()
        if self.keeper.shared or not self._adopted:
            self._loop = asyncio.get_running_loop().create_task(self._run(), name="pending judgements")

    async def shutdown(self, grace: float) -> None:
        """Stop heartbeating; with PostgreSQL give this run's rows up (after the judge stages stopped: the daemon
        lists this part before them), so that the next start adopts them at once."""
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
            self._loop = None
        if self.keeper.shared and self._adopted:
            self._adopted = False
            try:
                await asyncio.to_thread(self.keeper.release, max(grace, RELEASE_FLUSH_SECONDS))
            except Exception as exc:
                log.warning("could not give up this replica's waiting judgements (adopted after the lease): %s", exc)

    async def _run(self) -> None:
        while self.keeper.shared or not self._adopted:
            await asyncio.sleep(self.keeper.lease / HEARTBEATS_PER_LEASE)
            if self.keeper.shared:
                try:
                    await asyncio.to_thread(self.keeper.beat)
                except Exception as exc:
                    log.warning("could not heartbeat this replica's waiting judgements: %s", exc)
                    continue
            await self.adopt()

    async def adopt(self) -> int:
        """Adopt the rows of runs that are gone and submit them; how many (0 when the store cannot be read, or
        once the judge stage is shutting down: rows adopted then stay kept, and are given up with this run's)."""
        if self.judges.closed:
            return 0
        try:
            stored = await asyncio.to_thread(self.keeper.adopt)
        except Exception as exc:
            log.warning("could not read the waiting judgements from the result store: %s", exc)
            return 0
        self._adopted = True
        if self.judges.closed:
            return 0
        readable = [row for row in stored if _readable(row)]
        if len(readable) < len(stored):
            log.warning("forgot %d kept judgement(s) that could not be read back", len(stored) - len(readable))
            self.keeper.forget(row.id for row in stored if row not in readable)
        try:
            self.submit(readable)
        except Exception:  # a bug here must not stop the start: what was not submitted stays kept
            log.exception("could not resume the waiting judgements kept by earlier runs")
        return len(readable)

    def submit(self, stored: Sequence[Stored]) -> None:
        """Resume the judgements and restore the pairwise offers of `stored` (oldest first), each counted."""
        if not stored:
            return
        now = time.time()
        by_kind: dict[str, list[Stored]] = {JUDGEMENT: [], PAIR_OFFER: [], SESSION: []}
        for row in stored:
            by_kind.setdefault(row.kind, []).append(row)
        counts: dict[str, tuple[int, int]] = {
            JUDGEMENT: self.judges.resume(by_kind[JUDGEMENT], self.max_age, now),
            PAIR_OFFER: restore_offers(self.pairwise, by_kind[PAIR_OFFER], self.max_age, now, self.keeper),
        }
        if self.sessions is not None:
            hook, judges = self.sessions
            counts[SESSION] = hook.resume(by_kind[SESSION], judges, self.max_age, now)
        left = [row.id for kind, rows in by_kind.items() if kind not in counts for row in rows]
        self.keeper.forget(left)  # kinds nothing here takes (no session judges configured now)
        log.info(
            "resumed waiting judgements from earlier runs (judges.pending_max_age expired the others): %s",
            ", ".join(f"{kind} {resumed} resumed, {expired} expired" for kind, (resumed, expired) in counts.items()),
        )
        for kind, (resumed, expired) in counts.items():
            for outcome, n in (("resumed", resumed), ("expired", expired)):
                if n and self._count is not None:
                    self._count(kind, outcome, n)


_READERS: dict[str, Callable[[dict[str, Any]], object]] = {JUDGEMENT: job_of, PAIR_OFFER: offer_of, SESSION: session_of}


def _readable(row: Stored) -> bool:
    """Whether a kept row reads back as its kind's job (one another release wrote differently does not)."""
    read = _READERS.get(row.kind)
    try:
        return read is not None and read(row.payload) is not None
    except (KeyError, TypeError, ValueError):
        return False


def restore_offers(
    stage: PairwiseStage | None, stored: Sequence[Stored], max_age: float, now: float, keeper: PendingKeeper
) -> tuple[int, int]:
    """Put kept offers back in their books (oldest first, with their offer time), then give up those past their
    window; an offer older than `max_age` is a `judge_unavailable` skip instead, one for an entry no longer
    configured is forgotten. (restored, expired)."""
    if not stored:
        return 0, 0
    books = {entry_key(book): index for index, book in enumerate(stage.books)} if stage is not None else {}
    done: list[Done] = []
    gone: list[str] = []
    restored = expired = 0
    for row in stored:
        entry, offer = offer_of(row.payload)
        index = books.get(entry) if len(entry) == 4 else None
        if stage is None or index is None:
            gone.append(row.id)
            continue
        if now - row.created_at > max_age:
            skip = EvalResult.skip(SkipReason.JUDGE_UNAVAILABLE, EXPIRED)
            row_of = result_row(skip, span_id=None, agent=None, model=None, evaluator=entry[0], level="trace",
                                seconds=0.0)  # fmt: skip
            done.append((offer, row_of, (row.id,)))
            expired += 1
            continue
        stage.hold(index, offer.trace_id, row.id)
        book = stage.books[index]
        done += stage.place(index, offer, since=book.now() - max(now - row.created_at, 0.0))
        restored += 1
    if gone:
        log.warning("forgot %d kept pairwise offer(s) of entries no longer in variants.pairwise", len(gone))
        keeper.forget(gone)
    if stage is not None:
        stage.record(done)
        stage.sweep()
    return restored, expired
