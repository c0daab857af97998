"""The judges' limits shared by replicas on one PostgreSQL store (monitor/store/postgres/judge_limits.py): two judge
engines (two replicas) with `requests_per_minute` N make at most N requests together in each UTC minute, they
spend one daily token budget, and while the database cannot be reached each falls back to its own limits (counted).
Time is an injected clock (a virtual one: sleeping moves it), never a real wait."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import Counter
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest

from evaluators.judges.base import JudgeRequest, LLMJudge
from evaluators.judges.engine import JudgeEngine
from evaluators.judges.limits import SharedLimits
from evaluators.judges.settings import JudgeSettings
from evaluators.sdk.result import EvalResult, SkipReason
from monitor.config.store import StoreConfig
from monitor.engine.judge_setup import shared_limits
from monitor.store.postgres.connection import Timeouts
from monitor.store.postgres.judge_limits import JudgeLimitCounters
from monitor.store.postgres.store import PostgresResultStore
from tests.support.judge_stub import AnswerJudge, StubClient, verdict
from tests.support.ports import free_port

pytestmark = pytest.mark.integration
T = TypeVar("T")


class VirtualTime:
    """Epoch seconds that move only when every replica is asleep: `run` wakes the sleepers one at a time, in the
    order of their deadlines, each time nothing else can run (no task ready, no count at the database)."""

    def __init__(self) -> None:
        self.now = float(int(time.time() // 60) * 60)  # a minute's start, near today (the counters prune old days)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.counting = 0  # counts at the database under way

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        woken = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(seconds, 0.0), next(self._order), woken))
        await woken

    async def run(self, *jobs: Awaitable[T]) -> list[T]:
        done = asyncio.gather(*jobs)
        for _ in range(100_000):
            if done.done():
                break
            await asyncio.sleep(0.002)  # real: ready tasks run up to their next wait
            if self.counting or not self._sleepers:
                continue
            wake, _, woken = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake)
            if not woken.done():
                woken.set_result(None)
        return await done


class CountedCounters(JudgeLimitCounters):
    """The real counters, telling the virtual time while a count is at the database."""

    def __init__(self, url: str, clock: VirtualTime) -> None:
        super().__init__(url, Timeouts(connect=2.0))
        self.virtual = clock

    async def take(self, scope: str, window: int, limit: int) -> bool:
        return await self._counted(super().take(scope, window, limit))

    async def add(self, scope: str, window: int, amount: int) -> int:
        return await self._counted(super().add(scope, window, amount))

    async def total(self, scope: str, window: int) -> int:
        return await self._counted(super().total(scope, window))

    async def _counted(self, call: Awaitable[T]) -> T:
        self.virtual.counting += 1
        try:
            return await call
        finally:
            self.virtual.counting -= 1


def settings(**changes: Any) -> JudgeSettings:
    return JudgeSettings(**{"api_key": "test-key", "requests_per_minute": 0, "max_concurrency": 4, **changes})


def request(judge: LLMJudge, answer: str) -> JudgeRequest:
    built = judge.request(answer)
    assert isinstance(built, JudgeRequest)
    return built


def replica(url: str, clock: VirtualTime, stub: StubClient, fallbacks: list[str] | None = None, **changes: Any):
    counters = CountedCounters(url, clock)
    limits = SharedLimits(counters, on_fallback=(fallbacks.append if fallbacks is not None else None))
    return JudgeEngine(settings(**changes), stub, clock=clock, monotonic=clock, sleep=clock.sleep, limits=limits)


@pytest.fixture
def store_url(postgres_url: str) -> str:
    """A database the result store has set up (the counters' table is part of its schema)."""
    PostgresResultStore(postgres_url).close()
    return postgres_url


def test_two_replicas_make_at_most_requests_per_minute_together(store_url: str) -> None:
    clock = VirtualTime()
    stub = StubClient(clock=clock)  # both replicas' requests, stamped with the virtual time
    engines = [replica(store_url, clock, stub, requests_per_minute=5) for _ in range(2)]
    judge = AnswerJudge()

    async def scenario() -> list[EvalResult]:
        jobs = [e.judge(judge, request(judge, f"{n}-{i}")) for n, e in enumerate(engines) for i in range(8)]
        try:
            return await clock.run(*jobs)
        finally:
            for engine in engines:
                await engine.aclose()

    results = asyncio.run(scenario())
    assert all(r.score == 1.0 for r in results) and len(stub.calls) == 16
    per_minute = Counter(int(call.at // 60) for call in stub.calls)
    # each replica alone would start 5 in the first minute (12 s apart): together they start 5, not 10
    assert max(per_minute.values()) == 5 and per_minute[min(per_minute)] == 5, per_minute


def test_two_replicas_spend_one_daily_token_budget(store_url: str) -> None:
    clock = VirtualTime()
    stub = StubClient(default=verdict(1.0, 15, 5))  # 20 tokens a reply
    one, two = (replica(store_url, clock, stub, daily_token_budget=30) for _ in range(2))
    own = AnswerJudge(daily_token_budget=50)  # a judge's own budget is shared too

    async def scenario() -> list[EvalResult]:
        results = []
        for engine, answer in ((one, "a"), (two, "b"), (one, "c"), (two, "d")):
            results += await clock.run(engine.judge(own, request(own, answer)))
            clock.now += 10  # past what a replica trusts of the last count it read (5 s)
        await one.aclose()
        await two.aclose()
        return results

    results = asyncio.run(scenario())
    # 20 + 20 = 40 tokens spent by the two replicas: over the shared 30, though each spent only 20
    assert [r.skip_reason for r in results] == [None, None, SkipReason.BUDGET_EXHAUSTED, SkipReason.BUDGET_EXHAUSTED]
    assert "global daily token budget (30 tokens)" in (results[2].explanation or "")
    assert len(stub.calls) == 2


def test_a_judges_own_rate_is_shared_too(store_url: str) -> None:
    clock = VirtualTime()
    stub = StubClient(clock=clock)
    engines = [replica(store_url, clock, stub) for _ in range(2)]  # no global limit
    judge = AnswerJudge(requests_per_minute=3)

    async def scenario() -> None:
        jobs = [e.judge(judge, request(judge, f"{n}-{i}")) for n, e in enumerate(engines) for i in range(4)]
        await clock.run(*jobs)
        for engine in engines:
            await engine.aclose()

    asyncio.run(scenario())
    per_minute = Counter(int(call.at // 60) for call in stub.calls)
    assert len(stub.calls) == 8 and max(per_minute.values()) == 3, per_minute


def test_an_unreachable_database_falls_back_to_each_replicas_own_limits(caplog: pytest.LogCaptureFixture) -> None:
    clock = VirtualTime()
    stub = StubClient(clock=clock, default=verdict(1.0, 15, 5))
    down = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"  # nothing listens there
    fallbacks: list[str] = []
    engine = replica(down, clock, stub, fallbacks, requests_per_minute=6, daily_token_budget=50)
    judge = AnswerJudge()

    async def scenario() -> list[EvalResult]:
        results = [(await clock.run(engine.judge(judge, request(judge, f"q{i}"))))[0] for i in range(4)]
        await engine.aclose()
        return results

    with caplog.at_level(logging.WARNING, logger="evaluators.judges.limits"):
        results = asyncio.run(scenario())
    # judged under the local limits: 6 a minute (10 s apart), 50 tokens (two replies of 20, then spent)
    assert [r.skip_reason for r in results] == [None, None, None, SkipReason.BUDGET_EXHAUSTED]
    assert [c.at - stub.calls[0].at for c in stub.calls] == pytest.approx([0.0, 10.0, 20.0])
    assert set(fallbacks) == {"requests", "tokens"}
    warnings = [r.getMessage() for r in caplog.records if "shared limits cannot be reached" in r.getMessage()]
    assert len(warnings) == 1  # then the database is left alone for retry_after (30 s of real time)


def test_the_daemon_shares_the_judges_limits_only_on_a_postgresql_store(postgres_url: str) -> None:
    seen: list[str] = []
    shared = shared_limits(StoreConfig(url=postgres_url), seen.append)
    assert isinstance(shared, SharedLimits) and isinstance(shared.counters, JudgeLimitCounters)
    assert shared.counters.url == postgres_url
    assert shared_limits(StoreConfig(path="results.db"), seen.append) is None  # SQLite: each replica's own
    assert shared_limits(StoreConfig(url=postgres_url, enabled=False), seen.append) is None
