"""The start-up rebuild of the windows and the in-process alert states from the stored results.

The windows behind `agent_eval_pass_ratio`, the score quantiles, mean and stddev, and the alert states behind
`agent_eval_alert_active` live in memory. At start, before the API answers a scrape and before any receiver
opens, the daemon reads back the results with a verdict stored over `ResultMetrics.rebuild_span()` (the longest
window, or an alert's window and `for` together), newest first and bounded (`metrics.rebuild.max_results`,
`metrics.rebuild.timeout`; review/verdict_reads.py), on a thread of its own. It replays them oldest first through
`ResultMetrics.replay`: labelled and capped as live results are, into the same windows, each at its stored time,
and the alert states are advanced at those times (every `ALERT_STEP_SECONDS` of stored time and before every pause
as long, then at now) as scrapes then would have advanced them: a breach that had lasted `for` fires at the first
scrape, one that had not goes on pending from when the stored results first breached.
Counters and histograms are not touched (a Prometheus counter restarts at 0; `rate()` takes it).

Without a store (disabled), with `store.results: failing` (passing results are not stored: the ratio would be
made of failures) or with `metrics.rebuild.enabled: false`, the windows start empty (`skipped`); a store that
cannot be read leaves them empty too (`unavailable`, its read error counted by the store's health). Each start
counts its outcome in `agent_monitor_window_rebuilds_total` and logs one line.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, TypeAlias

from prometheus_client import CollectorRegistry, Counter

from monitor.config import MonitorConfig
from monitor.config.metrics import WindowRebuildConfig
from monitor.metrics.results import ResultMetrics
from monitor.metrics.zeroed import counter_at_zero

if TYPE_CHECKING:  # the store's read side hands them over (metrics imports no store)
    from monitor.store.rows import RecentVerdicts, StoredVerdict

    ReadVerdicts: TypeAlias = Callable[[float, int, float], RecentVerdicts]  # (since, limit, monotonic deadline)

log = logging.getLogger(__name__)

ALERT_STEP_SECONDS = 1.0  # stored time between two advances of the alert states during a replay
OUTCOMES = ("complete", "truncated", "unavailable", "skipped")


class RebuildMetrics:
    """`agent_monitor_window_rebuilds_total{outcome}` and `agent_monitor_window_rebuild_results_total`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.rebuilds = counter_at_zero(
            "agent_monitor_window_rebuilds",
            "Start-up rebuilds of the windows and alert states from the stored results, by outcome.",
            "outcome",
            OUTCOMES,
            registry,
        )
        self.replayed = Counter(
            "agent_monitor_window_rebuild_results",
            "Stored results replayed into the windows at start.",
            registry=registry,
        )

    def done(self, outcome: str, replayed: int) -> None:
        self.rebuilds.labels(outcome).inc()
        if replayed:
            self.replayed.inc(replayed)


def replay(results: ResultMetrics, verdicts: Iterable[StoredVerdict], now: float) -> int:
    """`verdicts` into `results`' windows, oldest first, each at its stored time (never later than `now`), the
    alert states advanced along and at `now`; how many were replayed."""
    replayed = 0
    advanced = -math.inf
    groups = [(min(at, now), list(group)) for at, group in groupby(sorted(verdicts, key=_at), key=_at)]
    for index, (at, group) in enumerate(groups):  # (a time ahead of ours: another replica's clock; never later)
        rows = [((v.evaluator, v.level, v.service, v.agent, v.variant), v.score, v.passed) for v in group]
        following = groups[index + 1][0] if index + 1 < len(groups) else math.inf
        # advanced at least every ALERT_STEP_SECONDS, and before every pause as long: a breach starts late by less
        alerts = at - advanced >= ALERT_STEP_SECONDS or following - at >= ALERT_STEP_SECONDS
        results.replay(at, rows, alerts)
        if alerts:
            advanced = at
        replayed += len(rows)
    results.replay(now, (), alerts=True)
    return replayed


_at = attrgetter("at")


class WindowRebuild:
    """The rebuild as a lifecycle component: `start()` reads and replays (off the event loop) and returns once the
    windows hold the stored results; nothing to shut down. `read`: the store's `recent_verdicts` (None: the
    windows start empty, `skipped` says why), which raises `unavailable` when the store cannot be read."""

    def __init__(
        self,
        config: WindowRebuildConfig,
        results: ResultMetrics,
        telemetry: RebuildMetrics,
        read: ReadVerdicts | None,
        skipped: str | None = None,
        clock: Callable[[], float] = time.time,
        unavailable: type[Exception] | tuple[type[Exception], ...] = (),
    ) -> None:
        self.config = config
        self.unavailable = unavailable
        self.results = results
        self.telemetry = telemetry
        self.read = read if config.enabled else None
        self.skipped = skipped if config.enabled else "metrics.rebuild.enabled is false"
        self.clock = clock
        self.outcome: str | None = None

    async def start(self) -> None:
        await asyncio.to_thread(self.run)

    async def shutdown(self, grace: float) -> None:
        """Nothing to stop: the rebuild is over once `start()` returned."""

    def run(self) -> str:
        """Read and replay now; the outcome (one of OUTCOMES), counted and logged."""
        try:
            self.outcome, replayed = self._run()
        except Exception:  # a bug: the daemon starts anyway
            log.exception("windows and in-process alerts could not be rebuilt")
            self.outcome, replayed = "unavailable", 0
        self.telemetry.done(self.outcome, replayed)
        return self.outcome

    def _run(self) -> tuple[str, int]:
        if self.read is None:
            log.info("windows and in-process alerts start empty: %s", self.skipped or "no result store")
            return "skipped", 0
        now = self.clock()
        span = self.results.rebuild_span()
        started = time.monotonic()
        try:
            found = self.read(now - span, self.config.max_results, started + self.config.timeout)
        except self.unavailable as exc:
            log.warning("windows and in-process alerts start empty: %s", exc)
            return "unavailable", 0
        replayed = replay(self.results, found.verdicts, self.clock())
        seconds = time.monotonic() - started
        if found.complete:
            log.info("windows and in-process alerts rebuilt from %d stored results in %.2fs", replayed, seconds)
            return "complete", replayed
        cut = found.cut if found.cut is not None and found.cut < math.inf else self.clock()
        log.warning(
            "windows and in-process alerts rebuilt from the newest %d stored results only (those after %s):"
            " metrics.rebuild.max_results (%d) or timeout (%gs) reached",
            replayed,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cut)),
            self.config.max_results,
            self.config.timeout,
        )
        return "truncated", replayed


def window_rebuild_of(
    config: MonitorConfig,
    results: ResultMetrics,
    telemetry: RebuildMetrics,
    read: ReadVerdicts | None,
    unavailable: type[Exception] | tuple[type[Exception], ...] = (),
) -> WindowRebuild:
    """The daemon's rebuild: from the store's `read` (None: the store is disabled), skipped with `results:
    failing` (the passing results are not stored)."""
    skipped = None if read is not None else "the result store is disabled"
    if read is not None and config.store.results == "failing":
        read, skipped = None, "store.results is failing (passing results are not stored)"
    return WindowRebuild(config.metrics.rebuild, results, telemetry, read, skipped, unavailable=unavailable)
