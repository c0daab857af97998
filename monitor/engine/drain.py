"""PendingTraces: at shutdown, the traces still assembling are completed as they are and evaluated within the
grace period; those that could not be are counted as dropped (`shutdown_timeout`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from monitor.engine.assembler import CompletedTrace, TraceAssembler
from monitor.engine.pool import EvaluationPool

log = logging.getLogger(__name__)


class PendingTraces:
    """The assembler's flush at shutdown, as a component: stopped after the sources (nothing more arrives) and the
    dispatcher, before the judges (whose jobs the evaluations send) and the pool's workers."""

    def __init__(
        self,
        assembler: TraceAssembler,
        pool: EvaluationPool,
        count_dropped: Callable[[str, int], None],
        evaluated: Callable[[], int] = lambda: 0,
    ) -> None:
        """`evaluated`: the traces evaluated so far (for the closing log line)."""
        self.assembler = assembler
        self.pool = pool
        self._count_dropped = count_dropped
        self._evaluated = evaluated
        self._done = False

    async def start(self) -> None:
        """Nothing to start: the dispatcher moves due traces while running."""

    async def shutdown(self, grace: float) -> None:
        """Complete every pending trace, wait up to `grace` for the pool to evaluate all it holds, count the rest."""
        if self._done:
            return
        self._done = True
        pending = self.assembler.flush_all()
        not_queued = self._submit_all(pending)
        dropped = not_queued + await self.pool.drain(grace)
        if dropped:
            self._count_dropped("shutdown_timeout", dropped)
            log.warning("shutdown: %d traces could not be evaluated within the grace period", dropped)
        log.info("shutdown: evaluated %d traces in total (%d completed at shutdown)", self._evaluated(), len(pending))

    def _submit_all(self, traces: list[CompletedTrace]) -> int:
        """Submit every trace (the pool takes all while open); returns how many it did not take."""
        for index, completed in enumerate(traces):
            if not self.pool.submit(completed):
                return len(traces) - index
        return 0
