"""InflightBytes: a reservation that does not fit waits briefly for releases, then is refused."""

from __future__ import annotations

import asyncio

from monitor.receivers.inflight import InflightBytes


def test_a_burst_waits_for_a_release_instead_of_being_refused() -> None:
    async def main() -> None:
        budget = InflightBytes(100, wait_seconds=5)
        assert budget.try_acquire(80)
        waiting = asyncio.create_task(budget.acquire(50))
        await asyncio.sleep(0.05)
        assert not waiting.done() and budget.in_use == 80  # nothing reserved while it waits
        budget.release(80)
        assert await asyncio.wait_for(waiting, 5) is True
        assert budget.in_use == 50

    asyncio.run(main())


def test_a_reservation_still_short_after_the_wait_is_refused_and_holds_nothing() -> None:
    async def main() -> None:
        budget = InflightBytes(100, wait_seconds=0.05)
        assert budget.try_acquire(80)
        assert await budget.acquire(50) is False
        assert budget.in_use == 80
        budget.release(30)  # 50 in use: 60 more does not fit within the wait
        assert await budget.acquire(60) is False
        assert await budget.acquire(50) is True and budget.in_use == 100

    asyncio.run(main())


def test_one_request_is_always_admitted_when_nothing_is_in_flight() -> None:
    async def main() -> None:
        budget = InflightBytes(10, wait_seconds=0)
        assert await budget.acquire(1000) is True
        assert await budget.acquire(1) is False
        budget.release(1000)
        assert budget.in_use == 0

    asyncio.run(main())
