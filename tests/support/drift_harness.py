"""Drift scenarios run in compressed time: a scenario's traffic (drift_scenarios.py) written into a real SQLite
result store at its own (past) times, then the daemon's drift job (monitor/detection/job.py) asked for its report
as of one simulated minute after another. A week of traffic is read back in seconds, through the same reads, bucket
cache, tests and episodes as the daemon's; only the clock is the scenario's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from monitor.config.drift import DriftConfig
from monitor.detection.job import DriftJob
from monitor.detection.model import DriftReport, SignalState
from monitor.review.sqlite_reader import SQLiteReviewReader
from tests.support.drift_rows import SyntheticTrace, create_store, write_traces
from tests.support.drift_scenarios import DAY, Scenario, traces

START = 1_793_491_200.0  # 2026-11-01 00:00 UTC, a Sunday
CHANGE_HOUR = 10.0  # the change comes at 10:00 on the day after the history


@dataclass
class Alerts:
    """Changes that stayed active for `for_seconds` (what Prometheus's `for` makes an alert), by signal key."""

    for_seconds: float
    active_since: dict[tuple[str, str, str, str], float] = field(default_factory=dict)
    fired: dict[tuple[str, str, str, str], float] = field(default_factory=dict)  # key → first time it fired
    episodes: list[tuple[tuple[str, str, str, str], float]] = field(default_factory=list)

    def observe(self, report: DriftReport) -> None:
        now = report.as_of
        active = {_key(s) for s in report.signals if s.active}
        for key in list(self.active_since):
            if key not in active:
                del self.active_since[key]
        for key in active:
            since = self.active_since.setdefault(key, now)
            if now - since >= self.for_seconds and key not in self.fired:
                self.fired[key] = now
                self.episodes.append((key, now))
        for key in [k for k in self.fired if k not in active]:
            del self.fired[key]  # resolved: a later return is a new alert


def _key(state: SignalState) -> tuple[str, str, str, str]:
    return state.service, state.agent, state.signal, state.subject


@dataclass
class Run:
    """A scenario's reports: when the expected change was first active, when it first alerted, what else fired."""

    scenario: Scenario
    change_at: float
    detected_at: float | None = None
    alerted_at: float | None = None
    alerts: list[tuple[tuple[str, str, str, str], float]] = field(default_factory=list)
    reports: int = 0
    report_cpu_seconds: float = 0.0
    last: DriftReport | None = None

    @property
    def detection_delay(self) -> float | None:
        return None if self.detected_at is None else self.detected_at - self.change_at

    @property
    def alert_delay(self) -> float | None:
        return None if self.alerted_at is None else self.alerted_at - self.change_at


def synthetic(scenario: Scenario, **kwargs: object) -> Iterator[SyntheticTrace]:
    for row in traces(scenario, **kwargs):  # type: ignore[arg-type]
        yield SyntheticTrace(**row)


def store_with(path: Path, scenario: Scenario, *, history_days: int, hours_after: float, **traffic: object) -> float:
    """A store holding `history_days` of stationary traffic, then the scenario's from the change on; the change's
    time."""
    change_at = START + history_days * DAY + CHANGE_HOUR * 3600
    location = create_store(path)
    end = change_at + hours_after * 3600
    write_traces(location, synthetic(scenario, start=START, end=end, change_at=change_at, **traffic))
    return change_at


def run(
    path: Path,
    scenario: Scenario,
    config: DriftConfig,
    *,
    since: float,
    until: float,
    step: float,
    change_at: float,
) -> Run:
    """The drift job's reports over [since, until) every `step` seconds of scenario time."""
    reader = SQLiteReviewReader.open(path)
    job = DriftJob(config, reader, lambda report: None)
    result = Run(scenario, change_at)
    alerts = Alerts(config.alerts.for_)
    expected = (scenario.signal, scenario.subject)
    try:
        at = since
        while at < until:
            began = time.process_time()
            report = job.report(at)
            result.report_cpu_seconds += time.process_time() - began
            result.reports += 1
            alerts.observe(report)
            hit = any(s.active and (s.signal, s.subject) == expected for s in report.signals)
            if hit and at >= change_at and result.detected_at is None:
                result.detected_at = at
            fired = [k for k, _ in alerts.episodes if (k[2], k[3]) == expected]
            if fired and result.alerted_at is None:
                result.alerted_at = at
            result.last = report
            at += step
    finally:
        reader.close()
    result.alerts = alerts.episodes
    return result


__all__ = ["CHANGE_HOUR", "START", "Alerts", "Run", "run", "store_with", "synthetic"]
