"""EventLoopLag: a loop blocked for a while shows as one lag observation of about that long; an idle loop shows
none of that size; it starts and stops as a component."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry

from monitor.metrics.loop_lag import EventLoopLag

NAME = "agent_monitor_event_loop_lag_seconds"


def _value(registry: CollectorRegistry, suffix: str, **labels: str) -> float:
    value = registry.get_sample_value(NAME + suffix, labels)
    assert value is not None
    return value


async def _run(block_seconds: float) -> CollectorRegistry:
    registry = CollectorRegistry()
    lag = EventLoopLag(registry, interval=0.05)
    await lag.start()
    await lag.start()  # a second start keeps the one sampling task
    try:
        for _ in range(200):  # a few samples before the loop is blocked
            await asyncio.sleep(0.01)
            if _value(registry, "_count") >= 3:
                break
        time.sleep(block_seconds)  # blocking the loop is the point
        before = _value(registry, "_count")
        for _ in range(200):
            await asyncio.sleep(0.01)
            if _value(registry, "_count") >= before + 2:
                break
    finally:
        await lag.shutdown(0.5)
        await lag.shutdown(0.5)
    return registry


def test_a_blocked_loop_is_observed_as_lag_and_an_idle_one_is_not() -> None:
    blocked = asyncio.run(_run(0.8))
    total = _value(blocked, "_count")
    assert total >= 5
    # exactly the block shows above half a second: the timer due 0.05 s after it was set ran ~0.75 s late
    assert total - _value(blocked, "_bucket", le="0.5") >= 1
    assert _value(blocked, "_sum") >= 0.7
    idle = asyncio.run(_run(0.0))
    assert _value(idle, "_count") - _value(idle, "_bucket", le="0.5") == 0


def test_it_stops_sampling_at_shutdown() -> None:
    async def scenario() -> tuple[float, float]:
        registry = CollectorRegistry()
        lag = EventLoopLag(registry, interval=0.02)
        await lag.shutdown(0.5)  # before start: nothing to stop
        await lag.start()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if _value(registry, "_count") >= 2:
                break
        await lag.shutdown(0.5)
        stopped_at = _value(registry, "_count")
        await asyncio.sleep(0.1)
        return stopped_at, _value(registry, "_count")

    stopped_at, later = asyncio.run(scenario())
    assert stopped_at >= 2 and later == stopped_at
