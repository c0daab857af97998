"""WriteBack: hands each page's evaluated traces back to the source (e.g. results as Phoenix annotations) once their
results are recorded; a failure is counted (kind "writeback"), logged once until it works again, and never fails
the run."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from monitor.metrics.poll import PollMetrics
from monitor.sources.base import PolledTrace

log = logging.getLogger("monitor.sources.runner")


class WriteBack:
    """Callable with a page's evaluated traces; `failing` while the last write-back failed."""

    def __init__(
        self,
        name: str,
        after_evaluated: Callable[[list[PolledTrace]], Awaitable[object]] | None,
        metrics: PollMetrics | None,
    ) -> None:
        self.name = name
        self.after_evaluated = after_evaluated
        self.metrics = metrics
        self.failing = False

    async def __call__(self, traces: list[PolledTrace]) -> None:
        if self.after_evaluated is None or not traces:
            return
        try:
            await self.after_evaluated(traces)
        except Exception as exc:
            if self.metrics is not None:
                self.metrics.errors.labels(source=self.name, kind="writeback").inc()
            if not self.failing:
                log.error("write-back to %s failed: %s (the results are stored; counted as kind writeback)",
                          self.name, exc)  # fmt: skip
            self.failing = True
        else:
            if self.failing:
                log.info("write-back to %s works again", self.name)
            self.failing = False
