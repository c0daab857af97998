"""PollScheduler: apscheduler's AsyncIOScheduler in the daemon's event loop, one job per enabled source.

Each job runs its Poller every `interval` (the first run at once), one run at a time (`max_instances=1`), runs
missed while one overran are coalesced into one, and a run late by less than `misfire_grace_time` still runs. At
shutdown no new run starts, the running ones stop after their current page (their checkpoint is kept) and are
awaited up to a grace period, then cancelled; then the leases are given up (another replica takes the sources
over at its next run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from monitor.sources.base import Leases
from monitor.sources.runner import Poller

log = logging.getLogger(__name__)


class PollScheduler:
    def __init__(self, pollers: list[Poller], leases: Leases | None = None) -> None:
        self.pollers = pollers
        self.leases = leases
        self._scheduler: AsyncIOScheduler | None = None
        self._running: set[asyncio.Task[object]] = set()

    async def start(self) -> None:
        if not self.pollers or self._scheduler is not None:
            return
        scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone=UTC)
        for poller in self.pollers:
            interval = poller.config.interval
            scheduler.add_job(
                self._run,
                IntervalTrigger(seconds=interval, timezone=UTC),
                args=[poller],
                id=poller.name,
                name=f"poll {poller.name}",
                max_instances=1,
                coalesce=True,
                misfire_grace_time=max(int(interval), 1),
                next_run_time=datetime.now(UTC),
            )
        for name in ("apscheduler.scheduler", "apscheduler.executors.default"):
            logging.getLogger(name).setLevel(logging.ERROR)  # a run longer than `interval` is not news: coalesced
        scheduler.start()
        self._scheduler = scheduler
        log.info("polling %s", ", ".join(f"{p.name} every {p.config.interval:g}s" for p in self.pollers))

    async def _run(self, poller: Poller) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            await poller.run()
        except asyncio.CancelledError:  # shutdown outlasted its grace: what was handed over is counted as dropped
            log.warning("poll of %s cancelled at shutdown (its checkpoint stays at its last page)", poller.name)
        finally:
            if task is not None:
                self._running.discard(task)

    async def shutdown(self, grace: float) -> None:
        """Stop scheduling, let running runs finish their page (up to `grace` seconds), close the sources."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            scheduler.pause()  # no new run; the scheduler's own shutdown would cancel the running ones
        for poller in self.pollers:
            poller.stopping = True
        running = list(self._running)
        if running:
            _, late = await asyncio.wait(running, timeout=grace)
            for task in late:
                task.cancel()
            for task in late:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        if self.leases is not None:
            with contextlib.suppress(Exception):
                await self.leases.close()
        for poller in self.pollers:
            with contextlib.suppress(Exception):
                await poller.source.close()
            close = getattr(poller.after_evaluated, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
