"""The judge engine's controls: trace sampling, the rate limiter, the daily token budget, the reply cache."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
from datetime import UTC, datetime

import pytest

from evaluators.judges.control import DailyTokenBudget, RateLimiter, ReplyCache, judge_sampled_in, utc_day
from evaluators.sdk.result import EvalResult

TRACE_IDS = [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(10_000)]


def chosen(rate: float) -> set[str]:
    return {t for t in TRACE_IDS if judge_sampled_in(t, rate)}


# --- sampling --------------------------------------------------------------------------------------
def test_sampling_share_is_close_to_the_rate_and_pinned() -> None:
    at_10, at_20 = chosen(0.1), chosen(0.2)
    assert abs(len(at_10) / len(TRACE_IDS) - 0.1) < 0.015
    assert abs(len(at_20) / len(TRACE_IDS) - 0.2) < 0.02
    # The hash is part of the contract: a re-run (or a new version) judges the same traces.
    assert (len(at_10), len(at_20)) == (936, 1898)
    assert judge_sampled_in("4b227777d4dd1fc61c6f884f48641d02", 0.1)
    assert not judge_sampled_in(TRACE_IDS[0], 0.1)


def test_sampling_is_deterministic_and_nested_across_rates() -> None:
    assert chosen(0.1) == chosen(0.1)
    rates = [0.0, 0.01, 0.1, 0.2, 0.5, 0.9, 1.0]
    sets = [chosen(r) for r in rates]
    for smaller, larger in itertools.pairwise(sets):
        assert smaller <= larger
    assert sets[0] == set() and sets[-1] == set(TRACE_IDS)


def test_sampling_edge_rates() -> None:
    assert judge_sampled_in("abc", 1.5) and not judge_sampled_in("abc", -1.0)
    assert not judge_sampled_in("abc", math.nan)


# --- rate limiter ----------------------------------------------------------------------------------
class FakeTime:
    """A monotonic clock that moves only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def test_rate_limiter_spaces_requests_evenly() -> None:
    fake = FakeTime()
    limiter = RateLimiter(60, clock=fake, sleep=fake.sleep)

    async def scenario() -> list[float]:
        times = []
        for _ in range(5):
            await limiter.acquire()
            times.append(fake.now)
        return times

    assert asyncio.run(scenario()) == pytest.approx([0.0, 1.0, 2.0, 3.0, 4.0])


def test_rate_limiter_never_exceeds_rpm_in_any_60_s_window() -> None:
    fake = FakeTime()
    limiter = RateLimiter(6, clock=fake, sleep=fake.sleep)
    times: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        times.append(fake.now)

    async def scenario() -> None:
        await asyncio.gather(*(one() for _ in range(20)))

    asyncio.run(scenario())
    assert len(times) == 20
    assert max(sum(1 for t in times if start <= t < start + 60) for start in times) == 6
    assert fake.now == pytest.approx(190.0)  # 19 gaps of 10 s: no burst at the start either


def test_rate_limiter_refills_while_idle_but_not_beyond_one_token() -> None:
    fake = FakeTime()
    limiter = RateLimiter(60, clock=fake, sleep=fake.sleep)

    async def scenario() -> None:
        await limiter.acquire()
        fake.now += 3600.0  # an idle hour
        await limiter.acquire()
        await limiter.acquire()

    asyncio.run(scenario())
    assert fake.sleeps == [pytest.approx(1.0)]


def test_rate_limiter_zero_is_unlimited() -> None:
    fake = FakeTime()
    limiter = RateLimiter(0, clock=fake, sleep=fake.sleep)

    async def scenario() -> None:
        for _ in range(1000):
            await limiter.acquire()

    asyncio.run(scenario())
    assert fake.sleeps == [] and limiter.unlimited


def test_a_cancelled_waiter_takes_no_token() -> None:
    limiter = RateLimiter(60)  # the real clock: one token a second

    async def scenario() -> float:
        await limiter.acquire()
        waiter = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.01)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return limiter._refill()

    assert 0.0 < asyncio.run(scenario()) < 0.5


# --- token budget ----------------------------------------------------------------------------------
def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_budget_spends_and_resets_at_utc_midnight() -> None:
    now = [epoch("2026-03-01T22:00:00")]
    budget = DailyTokenBudget(100, clock=lambda: now[0])
    budget.spend(60)
    assert (budget.remaining(), budget.exhausted()) == (40.0, False)
    budget.spend(50)
    assert (budget.remaining(), budget.exhausted(), budget.spent) == (0.0, True, 110)
    now[0] = epoch("2026-03-01T23:59:59")
    assert budget.exhausted()
    now[0] = epoch("2026-03-02T00:00:00")
    assert (budget.remaining(), budget.exhausted(), budget.spent) == (100.0, False, 0)
    assert budget.day() == utc_day(now[0]) == utc_day(epoch("2026-03-01T00:00:00")) + 1


def test_budget_zero_is_unlimited() -> None:
    budget = DailyTokenBudget(0)
    budget.spend(10**12)
    assert budget.remaining() == math.inf and not budget.exhausted()


# --- reply cache -----------------------------------------------------------------------------------
def test_cache_drops_the_least_recently_used() -> None:
    cache = ReplyCache(2)
    a, b, c = EvalResult(0.1), EvalResult(0.2), EvalResult(0.3)
    cache.put("a", a)
    cache.put("b", b)
    assert cache.get("a") is a  # a is now the most recent
    cache.put("c", c)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (a, None, c, 2)


def test_cache_size_zero_is_off() -> None:
    cache = ReplyCache(0)
    cache.put("a", EvalResult(1.0))
    assert cache.get("a") is None and len(cache) == 0
