"""Bench: drift detection (issue 41) in compressed time, through the daemon's drift job on a real SQLite store.

1. Detection delay per scenario at 10 traces a minute per agent: BENCH_DRIFT_HISTORY_DAYS (default 7) of
   stationary traffic with daily seasonality, then the change at 10:00; reports every `drift.interval` (the
   default config). Printed: minutes from the change to the first report with the change active, and to its
   alert (active for `drift.alerts.for`); the alerts on anything else.
2. False alarms over a stationary week: the same traffic for 2 × 7 days, reports every interval; the alerts of
   the first week (history still building: the trailing 24 h is the baseline on the first day) and of the second.
3. Cost at BENCH_DRIFT_AGENTS (default 50) agents × 10 traces a minute, steady state (each bucket read from the
   traces once, as it ended, then kept): the job's CPU per report (reads, tests, episodes, and the metrics'
   publish), per minute, and as a share of the evaluation CPU of the same traffic, measured in the same run
   (evaluation_baseline.single_thread_rate: the pure evaluation path, the strictest denominator).

BENCH_DRIFT_PARTS (default delays,weeks,cost) chooses the parts. Figures, not targets: exits 0 unless a run broke.

    python -m tests.bench.bench_drift
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from prometheus_client import CollectorRegistry

from monitor.config.drift import DriftConfig
from monitor.detection.job import DriftJob
from monitor.metrics.drift import DriftMetrics
from monitor.review.sqlite_reader import SQLiteReviewReader
from tests.bench.evaluation_baseline import single_thread_rate
from tests.support.drift_harness import START, run, store_with, synthetic
from tests.support.drift_rows import create_store, write_traces
from tests.support.drift_scenarios import DAY, SCENARIOS

PARTS = os.environ.get("BENCH_DRIFT_PARTS", "delays,weeks,cost").split(",")
HISTORY_DAYS = int(os.environ.get("BENCH_DRIFT_HISTORY_DAYS", "7"))
AGENTS = int(os.environ.get("BENCH_DRIFT_AGENTS", "50"))
PER_MINUTE = 10.0


def _minutes(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds / 60:.0f} min"


def delays(directory: Path) -> None:
    config = DriftConfig()
    print(f"-- detection delay, {PER_MINUTE:g} traces/min, {HISTORY_DAYS} days of history, reports every "
          f"{config.interval / 60:g} min, alerts after {config.alerts.for_ / 60:g} min active")  # fmt: skip
    for name, scenario in SCENARIOS.items():
        path = directory / f"{name}.db"
        change_at = store_with(path, scenario, history_days=HISTORY_DAYS, hours_after=3)
        result = run(path, scenario, config, since=change_at - 3600, until=change_at + 3 * 3600,
                     step=config.interval, change_at=change_at)  # fmt: skip
        others = sorted({f"{k[2]}{':' + k[3] if k[3] else ''}" for k, _ in result.alerts} - {
            f"{scenario.signal}{':' + scenario.subject if scenario.subject else ''}"})  # fmt: skip
        expected = scenario.signal or "(no change)"
        print(f"{name:30} {expected:24} detected {_minutes(result.detection_delay):>9}  "
              f"alert {_minutes(result.alert_delay):>9}  other alerts: {', '.join(others) or 'none'}")  # fmt: skip


def stationary_weeks(directory: Path) -> None:
    config, scenario = DriftConfig(), SCENARIOS["stationary"]
    path = directory / "weeks.db"
    create_store(path)
    end = START + 14 * DAY
    write_traces(path, synthetic(scenario, start=START, end=end, change_at=end, per_minute=PER_MINUTE))
    began = time.process_time()
    result = run(path, scenario, config, since=START + config.interval, until=end, step=config.interval,
                 change_at=end)  # fmt: skip
    cpu = time.process_time() - began
    first = [k for k, at in result.alerts if at < START + 7 * DAY]
    second = [k for k, at in result.alerts if at >= START + 7 * DAY]
    print(f"-- stationary traffic with daily seasonality, {result.reports} reports over 14 days ({cpu:.0f} s CPU)")
    for label, alerts in (("week 1 (history building)", first), ("week 2", second)):
        signals = sorted({f"{k[2]}{':' + k[3] if k[3] else ''}" for k in alerts})
        print(f"{label:28} false alarms: {len(alerts)}  {', '.join(signals)}")


def cost(directory: Path) -> None:
    """The steady-state cost at AGENTS agents: traffic only in the windows a report at T reads (the recent
    window and the same hours of the previous days), the previous days' recent buckets kept by warm-up reports
    at their own times, then the reports of one hour at T measured."""
    config, scenario = DriftConfig(), SCENARIOS["stationary"]
    agents = tuple(f"agent-{i:02}" for i in range(AGENTS))
    path = directory / "cost.db"
    create_store(path)
    at = START + 7 * DAY + 10 * 3600
    for day in range(7, -1, -1):
        centre = at - day * DAY
        rows = synthetic(scenario, start=centre - 2 * 3600, end=centre + 3600, change_at=at + DAY,
                         per_minute=PER_MINUTE, agents=agents, seed=day)  # fmt: skip
        write_traces(path, rows)
    metrics = DriftMetrics(CollectorRegistry())
    reader = SQLiteReviewReader.open(path)
    job = DriftJob(config, reader, lambda report: None)
    try:
        for day in range(7, 0, -1):  # the earlier days' reports, which kept their buckets
            for step in range(-6, 13):
                job.report(at - day * DAY + step * config.interval)
        job.report(at - config.interval)
        raw_before = job._buckets.reads
        reports, began = 0, time.process_time()
        for step in range(12):
            report = job.report(at + step * config.interval)
            metrics.publish(report, report.duration_seconds)  # as the job's run_once does
            reports += 1
        per_report = (time.process_time() - began) / reports
        raw = (job._buckets.reads - raw_before) / reports
    finally:
        reader.close()
    per_minute = per_report * 60 / config.interval
    rate = single_thread_rate()
    evaluation_per_minute = AGENTS * PER_MINUTE / rate
    print(f"-- cost, {AGENTS} agents × {PER_MINUTE:g} traces/min, {len(report.signals)} signals, steady state")
    print(f"drift job CPU per report: {per_report * 1000:.0f} ms ({raw:.1f} buckets read from the traces per "
          f"report); per minute: {per_minute * 1000:.1f} ms")  # fmt: skip
    print(f"evaluation of the same traffic (one thread, {rate:.0f} traces/s): {evaluation_per_minute * 1000:.0f} "
          f"ms CPU per minute → drift job / evaluation = {per_minute / evaluation_per_minute:.1%}")  # fmt: skip


def main() -> int:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        for part, bench in (("delays", delays), ("weeks", stationary_weeks), ("cost", cost)):
            if part in PARTS:
                bench(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
