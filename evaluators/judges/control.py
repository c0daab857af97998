"""The judge engine's cost and load controls: trace sampling, a rate limiter, a daily token budget, a reply cache.

Each is small and takes its clock (and sleep) as arguments, so tests drive time themselves.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from ..sdk.result import EvalResult

SECONDS_PER_DAY = 86_400
_EPSILON = 1e-9


def judge_sampled_in(trace_id: str, rate: float) -> bool:
    """True when the trace is judged at sampling `rate` (0–1).

    Decided by a blake2b hash of the trace id alone: every judge and every re-run picks the same traces,
    and the traces of a judge at 0.1 are a subset of those of a judge at 0.2.
    """
    if rate >= 1.0:
        return True
    if not rate > 0.0:  # also NaN
        return False
    digest = hashlib.blake2b(trace_id.encode("utf-8", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


class RateLimiter:
    """At most `per_minute` acquisitions in any 60 s window; 0 = unlimited.

    A token bucket of capacity 1 refilled continuously at per_minute/60 tokens a second: acquisitions are
    at least 60/per_minute seconds apart, so there is no burst and no 60 s window holds more than
    `per_minute` of them (a larger bucket would allow capacity - 1 more). Waiters are served in FIFO order;
    a waiter cancelled while it waits takes no token.
    """

    def __init__(
        self,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if per_minute < 0:
            raise ValueError(f"per_minute must be >= 0, got {per_minute}")
        self.per_minute = per_minute
        self._clock = clock
        self._sleep = sleep
        self._tokens = 1.0
        self._updated = clock()
        self._lock = asyncio.Lock()

    @property
    def unlimited(self) -> bool:
        return self.per_minute == 0

    def _refill(self) -> float:
        now = self._clock()
        self._tokens = min(1.0, self._tokens + (now - self._updated) * self.per_minute / 60.0)
        self._updated = now
        return self._tokens

    async def acquire(self) -> None:
        """Wait for a token and take it."""
        if self.unlimited:
            return
        async with self._lock:
            while self._refill() < 1.0 - _EPSILON:  # the epsilon: float rounding must not loop forever
                await self._sleep((1.0 - self._tokens) * 60.0 / self.per_minute)
            self._tokens -= 1.0


def utc_day(epoch_seconds: float) -> int:
    """Days since 1970-01-01 UTC: the budget's day number."""
    return int(epoch_seconds // SECONDS_PER_DAY)


class DailyTokenBudget:
    """Tokens allowed per UTC day (`per_day`; 0 = unlimited); the count starts again at 00:00 UTC.

    The budget is checked before a request and spent when its reply arrives (the cost is known only then),
    so requests already in flight when it runs out may overshoot it a little.
    """

    def __init__(self, per_day: int, *, clock: Callable[[], float] = time.time) -> None:
        if per_day < 0:
            raise ValueError(f"per_day must be >= 0, got {per_day}")
        self.per_day = per_day
        self._clock = clock
        self._day = utc_day(clock())
        self._spent = 0

    def day(self) -> int:
        """Today's UTC day number (the count restarts when it changes)."""
        today = utc_day(self._clock())
        if today != self._day:
            self._day, self._spent = today, 0
        return today

    @property
    def spent(self) -> int:
        """Tokens spent today."""
        self.day()
        return self._spent

    def remaining(self) -> float:
        """Tokens left today (never below 0); math.inf when unlimited."""
        if self.per_day == 0:
            return math.inf
        return float(max(0, self.per_day - self.spent))

    def exhausted(self) -> bool:
        return self.remaining() <= 0

    def spend(self, tokens: int) -> None:
        """Count `tokens` (negative counts are ignored) against today."""
        self.day()
        self._spent += max(0, int(tokens))

    async def refresh(self) -> None:
        """Nothing spent elsewhere to learn (`limits.SharedTokenBudget` learns the deployment's)."""

    async def record(self, tokens: int) -> None:
        """`spend`, as the engine calls it (`limits.DailyBudget`)."""
        self.spend(tokens)


class ReplyCache:
    """The last `size` judgement results by content key, least recently used dropped first (0 = off)."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self.size = size
        self._entries: OrderedDict[str, EvalResult] = OrderedDict()

    def get(self, key: str) -> EvalResult | None:
        result = self._entries.get(key)
        if result is not None:
            self._entries.move_to_end(key)
        return result

    def put(self, key: str, result: EvalResult) -> None:
        if self.size == 0:
            return
        self._entries[key] = result
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["DailyTokenBudget", "RateLimiter", "ReplyCache", "judge_sampled_in", "utc_day"]
