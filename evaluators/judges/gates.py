"""The concurrency and rate limits a judge request passes through, in order (`Gates.slot`): the judge's own
concurrency and rate, then the engine's (all judges together). Counts the requests waiting at them (the backlog
the limits hold), and remembers which limit a judgement was waiting for when it was cancelled (its timeout), so
that the engine can tell a judgement the limits could not take (`rate_limited`) from a slow model.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from .limits import DailyBudget, RequestLimit

# The settings that can stop a judgement for lack of capacity (the `limit` of `JudgeObserver.capacity_skip`):
# the `judges` section's, and a judge's own params.
JUDGE_CONCURRENCY, JUDGE_RATE = "params.max_concurrency", "params.requests_per_minute"
GLOBAL_CONCURRENCY, GLOBAL_RATE = "judges.max_concurrency", "judges.requests_per_minute"
JUDGE_BUDGET, GLOBAL_BUDGET = "params.daily_token_budget", "judges.daily_token_budget"


@dataclass(slots=True)
class OwnLimits:
    """One judge's own limits (by metric label), rebuilt when its params change (the budget's count is kept)."""

    params: tuple[int, int, int]  # max_concurrency, requests_per_minute, daily_token_budget
    semaphore: asyncio.Semaphore | None
    limiter: RequestLimit
    budget: DailyBudget


class Waiter:
    """What waits at the gates: one judgement, told the limit it was waiting for when it is cancelled there."""

    __slots__ = ("waited_for",)

    def __init__(self) -> None:
        self.waited_for: str | None = None


class Gates:
    """The engine's concurrency (`max_concurrency`) and rate (`limiter`) limits, in front of every judge's own."""

    def __init__(self, max_concurrency: int, limiter: RequestLimit) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency)
        self.limiter = limiter
        self.waiting = 0  # requests waiting for a limit right now

    @contextlib.asynccontextmanager
    async def slot(self, own: OwnLimits, waiter: Waiter) -> AsyncIterator[None]:
        """The judge's own concurrency and rate, then the global ones: a judge waiting for its own rate holds
        no global slot, and nothing waits between the global rate's token and the request."""
        if own.semaphore is not None:
            with self.waiting_for(waiter, JUDGE_CONCURRENCY):
                await own.semaphore.acquire()
        try:
            with self.waiting_for(waiter, JUDGE_RATE):
                await own.limiter.acquire()
            with self.waiting_for(waiter, GLOBAL_CONCURRENCY):
                await self.semaphore.acquire()
            try:
                with self.waiting_for(waiter, GLOBAL_RATE):
                    await self.limiter.acquire()
                yield
            finally:
                self.semaphore.release()
        finally:
            if own.semaphore is not None:
                own.semaphore.release()

    @contextlib.contextmanager
    def waiting_for(self, waiter: Waiter | None, limit: str) -> Iterator[None]:
        """A request waits for `limit` in the block: counted in `waiting`, and, with a `waiter`, blamed when it is
        cancelled there."""
        self.waiting += 1
        try:
            yield
        except asyncio.CancelledError:
            if waiter is not None:
                waiter.waited_for = waiter.waited_for or limit
            raise
        finally:
            self.waiting -= 1


class RetryTokens:
    """The client's `before_attempt`: the first attempt's tokens were taken in `Gates.slot` (so that any client is
    rate limited), each later attempt (a retry of the client's) takes one of each limiter, the judge's first. A
    retry's wait is counted but never blamed: the model's failure made the judgement late, not the limit."""

    __slots__ = ("_gates", "_own", "_prepaid")

    def __init__(self, gates: Gates, own: OwnLimits) -> None:
        self._gates = gates
        self._own = own
        self._prepaid = True

    async def __call__(self) -> None:
        if self._prepaid:
            self._prepaid = False
            return
        for limiter, limit in ((self._own.limiter, JUDGE_RATE), (self._gates.limiter, GLOBAL_RATE)):
            with self._gates.waiting_for(None, limit):
                await limiter.acquire()


__all__ = [
    "GLOBAL_BUDGET",
    "GLOBAL_CONCURRENCY",
    "GLOBAL_RATE",
    "JUDGE_BUDGET",
    "JUDGE_CONCURRENCY",
    "JUDGE_RATE",
    "Gates",
    "OwnLimits",
    "RetryTokens",
    "Waiter",
]
