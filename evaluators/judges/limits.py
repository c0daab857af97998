"""Where the judge engine's rate limiters and token budgets come from: each process's own (`LocalLimits`, the
default), or counters shared by every replica of a deployment (`SharedLimits` over `SharedCounters`, which the
daemon implements on its PostgreSQL store), so that `requests_per_minute` and `daily_token_budget` hold for the
whole deployment.

Shared requests are counted in fixed windows of one UTC minute (epoch seconds // 60): at most `per_minute`
requests of a scope start within each calendar minute, all replicas together; each replica's own token bucket
(`RateLimiter`) still spaces its requests, so a replica never bursts. Shared tokens are counted per UTC day.
When the counters cannot be reached, each replica falls back to its own limits (so the deployment may make up to
replicas × the limit while it lasts), says so through `on_fallback` and the log, and asks again after
`retry_after` seconds.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from .control import SECONDS_PER_DAY, DailyTokenBudget, RateLimiter

log = logging.getLogger(__name__)
T = TypeVar("T")

MINUTE = 60
RETRY_AFTER_SECONDS = 30.0  # after a failure, how long the shared counters are left alone (the local limits apply)
REFRESH_SECONDS = 5.0  # how long a budget trusts what it last read of the deployment's spending


class RequestLimit(Protocol):
    """Requests per minute (`RateLimiter` is the in-process one)."""

    @property
    def per_minute(self) -> int: ...

    async def acquire(self) -> None:
        """Wait until a request may start, and count it."""


class DailyBudget(Protocol):
    """Tokens per UTC day (`DailyTokenBudget` is the in-process one); `per_day` may change (a judge reconfigured)."""

    per_day: int

    def day(self) -> int: ...

    def remaining(self) -> float: ...

    def exhausted(self) -> bool: ...

    async def refresh(self) -> None:
        """Learn what was spent elsewhere (nothing to learn in-process)."""

    async def record(self, tokens: int) -> None:
        """Count `tokens` spent."""


class JudgeLimits(Protocol):
    """The engine's source of limits, one limiter and one budget per scope ("requests", "requests:<judge>", ...)."""

    def rate_limiter(
        self,
        scope: str,
        per_minute: int,
        *,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
    ) -> RequestLimit: ...

    def token_budget(self, scope: str, per_day: int, *, clock: Callable[[], float]) -> DailyBudget: ...

    async def aclose(self) -> None: ...


class LocalLimits:
    """Each process's own limits: what `requests_per_minute` and `daily_token_budget` mean without a shared store."""

    def rate_limiter(
        self,
        scope: str,
        per_minute: int,
        *,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
    ) -> RequestLimit:
        return RateLimiter(per_minute, clock=monotonic, sleep=sleep)

    def token_budget(self, scope: str, per_day: int, *, clock: Callable[[], float]) -> DailyBudget:
        return DailyTokenBudget(per_day, clock=clock)

    async def aclose(self) -> None:
        """Nothing to close."""


class SharedCounters(Protocol):
    """Counters of (scope, window start in epoch seconds) shared by a deployment's replicas; each call raises when
    the counters cannot be reached."""

    async def take(self, scope: str, window: int, limit: int) -> bool:
        """Count one in the window if fewer than `limit` are counted there; whether it was counted."""

    async def add(self, scope: str, window: int, amount: int) -> int:
        """Add `amount` to the window; its total now."""

    async def total(self, scope: str, window: int) -> int:
        """The window's total (0 when nothing was counted)."""

    async def aclose(self) -> None: ...


class SharedLimits:
    """Limits that hold for every replica using the same `counters`; `on_fallback(kind)` ("requests" or
    "tokens") is called each time a replica falls back to its own limit because the counters failed."""

    def __init__(
        self,
        counters: SharedCounters,
        *,
        on_fallback: Callable[[str], None] | None = None,
        retry_after: float = RETRY_AFTER_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.counters = counters
        self._on_fallback = on_fallback
        self.retry_after = retry_after
        self._monotonic = monotonic
        self._down_until = -math.inf
        self.fallbacks = 0

    def rate_limiter(
        self,
        scope: str,
        per_minute: int,
        *,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
    ) -> RequestLimit:
        return SharedRateLimiter(self, scope, RateLimiter(per_minute, clock=monotonic, sleep=sleep), clock, sleep)

    def token_budget(self, scope: str, per_day: int, *, clock: Callable[[], float]) -> DailyBudget:
        return SharedTokenBudget(self, scope, per_day, clock=clock)

    async def aclose(self) -> None:
        await self.counters.aclose()

    async def ask(self, kind: str, call: Callable[[], Awaitable[T]]) -> T | None:
        """`call()`'s answer, or None (fall back to the local limit) when the counters failed now or recently."""
        if self._monotonic() < self._down_until:
            self._fell_back(kind)
            return None
        try:
            return await call()
        except Exception as exc:  # never CancelledError (a BaseException): a cancelled wait stays cancelled
            self._down_until = self._monotonic() + self.retry_after
            log.warning(
                "the judges' shared limits cannot be reached (%s: %s): each replica applies its own "
                "requests_per_minute and daily_token_budget for the next %g s",
                type(exc).__name__,
                exc,
                self.retry_after,
            )
            self._fell_back(kind)
            return None

    def _fell_back(self, kind: str) -> None:
        self.fallbacks += 1
        if self._on_fallback is not None:
            try:
                self._on_fallback(kind)
            except Exception:
                log.warning("the shared limits' fallback callback failed", exc_info=True)


class SharedRateLimiter:
    """This replica's own spacing (`local`), then a place in the deployment's current UTC minute: when the
    minute is full, it waits for the next one."""

    def __init__(
        self,
        shared: SharedLimits,
        scope: str,
        local: RateLimiter,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
    ) -> None:
        self._shared = shared
        self.scope = scope
        self._local = local
        self._clock = clock
        self._sleep = sleep

    @property
    def per_minute(self) -> int:
        return self._local.per_minute

    async def acquire(self) -> None:
        await self._local.acquire()
        if self.per_minute == 0:
            return
        while True:
            now = self._clock()
            window = int(now // MINUTE) * MINUTE
            taken = await self._shared.ask("requests", functools.partial(self._take, window))
            if taken is None or taken:  # None: the counters are unreachable, the local limit alone applies
                return
            await self._sleep(max(window + MINUTE - now, 0.001))

    def _take(self, window: int) -> Awaitable[bool]:
        return self._shared.counters.take(self.scope, window, self.per_minute)


class SharedTokenBudget(DailyTokenBudget):
    """A DailyTokenBudget whose spending is the deployment's: what every replica recorded today (read again when older
    than REFRESH_SECONDS, and learnt at each record), never less than what this replica spent itself."""

    def __init__(self, shared: SharedLimits, scope: str, per_day: int, *, clock: Callable[[], float]) -> None:
        super().__init__(per_day, clock=clock)
        self._shared = shared
        self.scope = scope
        self._read: tuple[int, int, float] = (-1, 0, -math.inf)  # (day, deployment-wide total, read at)
        self._unsent: tuple[int, int] = (-1, 0)  # (day, tokens the counters have not taken: they were unreachable)

    @property
    def spent(self) -> int:
        today = self.day()
        day, total, _ = self._read
        unsent_day, unsent = self._unsent
        shared = (total if day == today else 0) + (unsent if unsent_day == today else 0)
        return max(self._spent, shared)

    async def refresh(self) -> None:
        day = self.day()
        read_day, _, read_at = self._read
        if self.per_day == 0 or (read_day == day and self._clock() - read_at < REFRESH_SECONDS):
            return
        total = await self._shared.ask("tokens", lambda: self._shared.counters.total(self.scope, _start(day)))
        if total is not None:
            self._learn(day, total)

    async def record(self, tokens: int) -> None:
        tokens = max(0, int(tokens))
        day = self.day()
        self.spend(tokens)
        if tokens == 0 or self.per_day == 0:  # nothing to share without a budget
            return
        unsent_day, unsent = self._unsent
        amount = tokens + (unsent if unsent_day == day else 0)
        total = await self._shared.ask("tokens", lambda: self._shared.counters.add(self.scope, _start(day), amount))
        if total is None:
            self._unsent = (day, amount)
        else:
            self._unsent = (day, 0)
            self._learn(day, total)

    def _learn(self, day: int, total: int) -> None:
        if day >= self._read[0]:
            self._read = (day, int(total), self._clock())


def _start(day: int) -> int:
    """The epoch second at which UTC day `day` starts (its window in the counters)."""
    return day * SECONDS_PER_DAY


__all__ = [
    "DailyBudget",
    "JudgeLimits",
    "LocalLimits",
    "RequestLimit",
    "SharedCounters",
    "SharedLimits",
    "SharedRateLimiter",
    "SharedTokenBudget",
]
