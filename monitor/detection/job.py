"""The drift job: a lifecycle component that makes a `DriftReport` every `drift.interval` from the result store and
hands it to the metrics and the Changes page.

Each report is as of a time aligned to the interval (`windows.report_time`), `settle` seconds behind the clock, so
that every replica reading the same shared store makes the same report. Its reads run in a thread (they are the
review reader's, with their deadlines); the windows are summed from buckets of aggregates read once each
(buckets.py): the recent window and the same hours of the previous days from buckets of `interval`, the trailing
window from buckets of `recent`. A bucket read from the traces' rows is kept in the store (`drift_buckets`), so the
following days' baselines, a restart and the other replicas read it back as one row. A failed read keeps the last good
report exported and counts the failure; the daemon never stops for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from monitor.config.drift import DriftConfig
from monitor.lifecycle import cancel_task
from monitor.store.signal_rows import DriftEpisode, WindowAggregates

from .buckets import EMPTY, BucketCache
from .detect import Variants, detect  # scipy is imported by the tests themselves, once a report runs one
from .episodes import merge_episodes
from .model import DriftReport, Moments
from .moments import SignalMoments, report_moments
from .windows import recent_range, report_time, same_hours_ranges, trailing_range

log = logging.getLogger(__name__)

EpisodeKey = tuple[str, str, str, str]


class DriftStore(Protocol):
    """What the job needs of the store (the review reader's drift reads)."""

    def drift_window(self, since: float, until: float, timeout: float | None = None) -> WindowAggregates: ...

    def drift_episodes(self) -> list[DriftEpisode]: ...

    def record_drift_episodes(self, started: Sequence[DriftEpisode], ended: Sequence[EpisodeKey]) -> None: ...

    def drift_bucket(self, start: float, size: float) -> WindowAggregates | None: ...

    def keep_drift_bucket(self, start: float, size: float, aggregates: WindowAggregates, before: float) -> None: ...


def _needs_trailing(config: DriftConfig, recent: SignalMoments, same_hours: SignalMoments) -> bool:
    """Whether a signal of the recent window has too few samples in the same hours (less history): then the
    trailing window is its baseline. Once every signal has its same hours, the trailing window is not read."""
    empty = Moments()
    least = config.min_samples
    for key in recent:
        settings = config.override(key.signal, key.subject)
        if settings.enabled and same_hours.get(key, empty).n < (settings.min_samples or least):
            return True
    return False


class DriftJob:
    def __init__(
        self,
        config: DriftConfig,
        reads: DriftStore,
        publish: Callable[[DriftReport], None],
        *,
        failed: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._reads = reads
        self._publish = publish
        self._failed = failed
        self._clock = clock

        def read(since: float, until: float) -> WindowAggregates:
            return reads.drift_window(since, until, config.read_timeout)

        def keep(start: float, size: float, aggregates: WindowAggregates) -> None:
            reads.keep_drift_bucket(start, size, aggregates, start - config.baseline - config.period)

        # The recent window and the same hours of the previous days from the same buckets (the recent ones are
        # kept in the store and are the following days' baselines); the trailing window from coarser ones.
        def cache(size: float) -> BucketCache:
            return BucketCache(read, size, stored=reads.drift_bucket, keep=keep, keep_after=config.keep_after)

        self._buckets = cache(config.interval)
        self._trailing = cache(max(config.recent, config.interval))
        self.latest: DriftReport | None = None
        self._last_as_of = float("-inf")
        self._task: asyncio.Task[None] | None = None
        self._first: asyncio.Future[DriftReport | None] | None = None

    def report(self, as_of: float) -> DriftReport:
        """The report as of `as_of` (blocking: the store's reads), its episodes merged with the stored ones."""
        config = self.config
        recent_window, same_hours_windows = [recent_range(config, as_of)], same_hours_ranges(config, as_of)
        self._buckets.load([*recent_window, *same_hours_windows], as_of)
        recent = self._buckets.total(recent_window, "recent")
        same_hours = self._buckets.total(same_hours_windows, "same_hours")
        moments = report_moments(config, recent, [same_hours], EMPTY)
        trailing = EMPTY
        if _needs_trailing(config, moments.recent, moments.same_hours):
            trailing = self._trailing.windows([trailing_range(config, as_of)], as_of)
            moments = report_moments(config, recent, [same_hours], trailing)
        else:
            self._trailing.forget()
        variants = Variants(recent.variants, [*same_hours.variants, *trailing.variants])
        report = detect(config, as_of, moments.recent, moments.same_hours, moments.trailing, variants)
        report, started, ended = merge_episodes(report, self._reads.drift_episodes())
        if ended:  # first: a flipped change's old episode goes before its new one is written under the same key
            self._reads.record_drift_episodes((), ended)
        if started:
            self._reads.record_drift_episodes(started, ())
        return report

    async def run_once(self) -> DriftReport | None:
        """Make the report due now, unless it was made; None when it was, or when the store failed."""
        as_of = report_time(self.config, self._clock())
        if as_of <= self._last_as_of:
            return None
        started = time.perf_counter()
        try:
            report = await asyncio.to_thread(self.report, as_of)
        except Exception as exc:  # the store, or a bug: the last good report stays
            for cache in (self._buckets, self._trailing):
                cache.forget()
            name = type(exc).__name__
            log.warning("drift: the report as of %.0f failed (%s: %s); the last one stays", as_of, name, exc)
            self._failed()
            return None
        self._last_as_of = as_of
        self.latest = report.model_copy(update={"duration_seconds": time.perf_counter() - started})
        self._publish(self.latest)
        return self.latest

    async def first_report(self) -> None:
        """The report due at start, waited for at most `read_timeout`: the daemon makes it before /metrics answers
        (a part before the API), so that a restart's first scrape already has a stored change's series (a scrape
        without them would make Prometheus resolve a firing drift alert and start its `for` again). A report that
        takes longer is finished by the loop, /metrics answering meanwhile."""
        self._first = asyncio.ensure_future(self.run_once())
        done, _ = await asyncio.wait({self._first}, timeout=self.config.read_timeout)
        if not done:
            log.warning("drift: the first report takes longer than %g s; /metrics answers without it meanwhile",
                        self.config.read_timeout)  # fmt: skip

    async def _loop(self) -> None:
        first, self._first = self._first, None
        if first is not None:
            await first  # run_once raises nothing: a failure is counted and logged
        while True:
            await self.run_once()
            now = self._clock()
            due = report_time(self.config, now) + self.config.interval + self.config.settle
            await asyncio.sleep(max(0.05, due - now))

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="drift")

    async def shutdown(self, grace: float) -> None:
        first, self._first = self._first, None
        if first is not None:
            first.cancel()
        task, self._task = self._task, None
        await cancel_task(task)


class DriftSink(Protocol):
    """Where reports go (the metrics' `DriftMetrics`)."""

    def publish(self, report: DriftReport, duration: float | None = None) -> None: ...

    def failed(self, duration: float | None = None) -> None: ...


def drift_job_of(
    config: DriftConfig, reads: DriftStore | None, sink: DriftSink, *, stored_results: str = "all"
) -> DriftJob | None:
    """The daemon's drift job; None when drift is off or there is no result store to read (said once). With
    `store.results: failing` (`stored_results`) the passing verdicts are not stored: the evaluators' pass ratios
    and scores cannot be measured, and are left out."""
    if not config.enabled:
        return None
    if reads is None:
        log.info("drift detection is off: it reads the result store, and the store is disabled (store.enabled)")
        return None
    if stored_results != "all":
        left_out = [name for name in ("pass_ratio", "score") if name not in config.exclude]
        config = config.model_copy(update={"exclude": [*config.exclude, *left_out]})
    return DriftJob(config, reads, lambda report: sink.publish(report, report.duration_seconds), failed=sink.failed)


class FirstReport:
    """The drift job's report due at start, as a lifecycle part of its own placed before the API
    (`DriftJob.first_report`); its shutdown is the job's."""

    def __init__(self, job: DriftJob) -> None:
        self._job = job

    async def start(self) -> None:
        await self._job.first_report()

    async def shutdown(self, grace: float) -> None:
        """Nothing: the job's own part stops what is left."""


__all__ = ["DriftJob", "DriftSink", "DriftStore", "FirstReport", "drift_job_of"]
