"""EventLoopLag: how late the main process's event loop runs what is due. The receivers, the API, the assembler's
ticks and the pool's results all share that loop, so anything that blocks it (a synchronous read, a long GC pause,
a huge decode) shows here before it shows as refused exports, slow scrapes or a late trace delay."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, Histogram

from monitor.lifecycle import cancel_task

LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SAMPLE_EVERY_SECONDS = 0.25


class EventLoopLag:
    """Component and its own metric group: a task that sleeps `interval` seconds at a time and observes how much
    later than asked the loop woke it (`agent_monitor_event_loop_lag_seconds`)."""

    def __init__(self, registry: CollectorRegistry, interval: float = SAMPLE_EVERY_SECONDS) -> None:
        self.interval = interval
        self.loop_lag = Histogram(
            "agent_monitor_event_loop_lag_seconds",
            "How much later than due the main process's event loop ran a timer (receivers, API and ticks share it).",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._sample(), name="event-loop-lag")

    async def _sample(self) -> None:
        clock = time.monotonic
        while True:
            asked = clock()
            await asyncio.sleep(self.interval)
            self.loop_lag.observe(max(clock() - asked - self.interval, 0.0))

    async def shutdown(self, grace: float) -> None:
        task, self._task = self._task, None
        await cancel_task(task)
