"""MemoryReturner: after enough request bytes are freed, one malloc_trim runs, later, at a low rate."""

from __future__ import annotations

import asyncio

import pytest

from monitor.receivers.memory import MemoryReturner


def test_a_trim_runs_once_enough_was_freed_and_not_before() -> None:
    async def main() -> None:
        returner = MemoryReturner(threshold_bytes=1000, delay_seconds=0.01, min_request_bytes=100)
        if not returner.available:
            pytest.skip("no glibc malloc_trim on this platform")
        for _ in range(50):
            returner.freed(99)  # small requests never count, however many
        returner.freed(600)
        await asyncio.sleep(0.1)
        assert returner.trims == 0  # under the threshold: nothing scheduled
        for _ in range(5):  # a burst schedules one trim, not five
            returner.freed(600)
        for _ in range(200):
            if returner.trims:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert returner.trims == 1
        returner.freed(1000)
        for _ in range(200):
            if returner.trims == 2:
                break
            await asyncio.sleep(0.01)
        assert returner.trims == 2

    asyncio.run(main())
