"""The attribution job: a lifecycle component that, every `explain.attribution.interval`, explains the failures of
each evaluator whose pass-ratio threshold is breached (firing, or pending its `for`: the factors are there when
the alert fires; at most MAX_PER_ROUND a round, the lowest pass ratios first) over the last `range`, and
publishes their top factors as agent_eval_attribution (metrics/attribution.py). Explanations run on a thread
(they read the store); one that fails is counted and logged and that evaluator keeps its last factors; the
daemon never stops for it. No breach, no read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from monitor.alerting.thresholds import AlertState
from monitor.config.explain import AttributionConfig, ExplainConfig
from monitor.explain.model import ExplainQuery, Factor
from monitor.explain.service import Explainer, ExplainReads
from monitor.explain.wording import conjoined
from monitor.lifecycle import cancel_task

log = logging.getLogger(__name__)

Key = tuple[str, str]
MAX_PER_ROUND = 10  # (evaluator, service) pairs explained a round, the lowest pass ratios first: each read is a
# second of the main process's CPU at 100k traces, and a bad hour breaches many evaluators at once
Published = tuple[str, str, float | None]


class AttributionSink(Protocol):
    def publish(self, factors: dict[Key, Sequence[Published]]) -> None: ...

    def failed(self) -> None: ...


def published(factor: Factor) -> Published:
    """A factor as a series: (dimension, value, lift), a pair's dimensions and values joined by " AND "."""
    dimension = conjoined(v.dimension for v in factor.values)
    value = conjoined(v.value for v in factor.values)
    return dimension, value, factor.lift


class AttributionJob:
    def __init__(
        self,
        explainer: Explainer,
        breaches: Callable[[], list[AlertState]],
        config: AttributionConfig,
        sink: AttributionSink,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.explainer = explainer
        self.breaches = breaches
        self.config = config
        self.sink = sink
        self.clock = clock
        self._last: dict[Key, Sequence[Published]] = {}
        self._task: asyncio.Task[None] | None = None

    async def run_once(self) -> dict[Key, Sequence[Published]]:
        """One round: the breached evaluators explained, their factors published (and returned)."""
        states = [s for s in self.breaches() if s.active or s.pending]
        states.sort(key=lambda s: (s.pass_ratio if s.pass_ratio is not None else 1.0, s.evaluator, s.service))
        breached = list(dict.fromkeys((s.evaluator, s.service) for s in states))[:MAX_PER_ROUND]
        found: dict[Key, Sequence[Published]] = {}
        now = self.clock()
        for evaluator, service in breached:
            query = ExplainQuery(evaluator=evaluator, service=service, since=now - self.config.range, until=now)
            try:
                explanation = await asyncio.to_thread(self.explainer.explain, query)
            except Exception as exc:  # a store down, a read past its deadline: the last factors stay
                self.sink.failed()
                log.warning("attribution of %s (service %s) failed: %s", evaluator, service, exc)
                if (evaluator, service) in self._last:
                    found[(evaluator, service)] = self._last[(evaluator, service)]
                continue
            found[(evaluator, service)] = [published(f) for f in explanation.factors[: self.config.top]]
        self._last = found
        self.sink.publish(found)
        return found

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:
                log.exception("attribution round failed")
            await asyncio.sleep(self.config.interval)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="attribution")

    async def shutdown(self, grace: float) -> None:
        task, self._task = self._task, None
        await cancel_task(task)


class Explanations(NamedTuple):
    """The daemon's explainer (None: `explain.enabled: false`, or no store: `unavailable` says which) and its
    attribution job (None: no explainer, or `explain.attribution.enabled: false`)."""

    explainer: Explainer | None
    attribution: AttributionJob | None
    unavailable: str | None


def explanations_of(
    config: ExplainConfig, reader: ExplainReads | None, breaches: Callable[[], list[AlertState]], sink: AttributionSink
) -> Explanations:
    """The daemon's Explanations over `reader` (the review's; None: the store is disabled)."""
    if not config.enabled:
        return Explanations(None, None, "explanations are off (explain.enabled: false)")
    if reader is None:
        return Explanations(None, None, "the result store is disabled (store.enabled: false)")
    explainer = Explainer(reader, config)
    job = AttributionJob(explainer, breaches, config.attribution, sink) if config.attribution.enabled else None
    return Explanations(explainer, job, None)


__all__ = ["MAX_PER_ROUND", "AttributionJob", "AttributionSink", "Explanations", "explanations_of", "published"]
