"""DueTraceDispatcher: moves completed traces from the assembler into the evaluation pool, every tick."""

from __future__ import annotations

import asyncio
import logging

from monitor.engine.assembler import TraceAssembler
from monitor.engine.pool import EvaluationPool
from monitor.lifecycle import cancel_task

log = logging.getLogger(__name__)
TICK_SECONDS = 0.1


class DueTraceDispatcher:
    """Each tick, every trace that became due goes to the evaluation pool.

    Admission control (admission.py) watches the due traces the pool has not started yet.
    """

    def __init__(
        self,
        assembler: TraceAssembler,
        pool: EvaluationPool,
        tick_seconds: float = TICK_SECONDS,
    ) -> None:
        self.assembler = assembler
        self.pool = pool
        self.tick_seconds = tick_seconds
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="dispatch-due-traces")

    async def shutdown(self, grace: float) -> None:
        """Stop ticking (due traces stay in the assembler for the caller to flush). Idempotent."""
        task, self._task = self._task, None
        await cancel_task(task)

    def dispatch_due(self) -> int:
        """Collect the traces that became due and hand them all to the pool; returns how many moved."""
        self.assembler.collect_due()
        moved = 0
        for completed in self.assembler.take_due():
            self.pool.submit(completed)
            moved += 1
        self.pool.check_stalled()
        return moved

    async def _run(self) -> None:
        while True:
            try:
                self.dispatch_due()
            except Exception:
                log.exception("dispatching due traces failed")
            await asyncio.sleep(self.tick_seconds)
