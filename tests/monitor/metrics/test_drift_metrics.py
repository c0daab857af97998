"""The drift metrics (monitor/metrics/drift.py): every signal of the latest report with its baseline, recent mean,
samples, effect in both directions, active state and since; the job's own gauges and failures (the last good
report stays exported); label values cleaned and capped as the result series' are; safe to publish while scraped."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, generate_latest

from monitor.detection.model import (
    BaselineKind,
    Direction,
    DriftReport,
    Moments,
    Scale,
    SignalKind,
    SignalState,
    Statistic,
)
from monitor.metrics import MetricsExporter
from monitor.metrics.drift import DriftMetrics


def ratio(k: int, n: int) -> Moments:
    return Moments(n=n, total=k, squares=k)


def state(
    signal: str = "pass_ratio",
    subject: str = "helpfulness",
    *,
    service: str = "shop",
    agent: str = "planner",
    kind: SignalKind = SignalKind.QUALITY,
    baseline: Moments | None = None,
    recent: Moments | None = None,
    effect: float = 0.0,
    direction: Direction | None = None,
    worse: bool | None = None,
    since: float | None = None,
) -> SignalState:
    significant = direction is not None
    return SignalState(
        service=service,
        agent=agent,
        signal=signal,
        subject=subject,
        kind=kind,
        statistic=Statistic.RATIO,
        scale=Scale.UNIT,
        baseline_kind=BaselineKind.SAME_HOURS,
        baseline=baseline if baseline is not None else ratio(970, 1000),
        recent=recent if recent is not None else ratio(89, 100),
        effect=effect,
        p_value=0.001 if significant else 0.5,
        q_value=0.002 if significant else 0.6,
        significant=significant,
        direction=direction,
        worse=worse,
        since=since,
    )


REGRESSION = state(effect=-0.08, direction=Direction.DOWN, worse=True, since=1_700_000_000.0)
BETTER = state("error_rate", "", effect=-0.05, direction=Direction.DOWN, worse=False, since=1_700_000_100.0)
QUIET = state("tool_share", "search", kind=SignalKind.BEHAVIOUR, recent=ratio(300, 1000), baseline=ratio(3, 10))


def report(*signals: SignalState, as_of: float = 1_700_003_600.0, complete: bool = True) -> DriftReport:
    return DriftReport(as_of=as_of, recent_seconds=1800, signals=list(signals), tested=len(signals), complete=complete)


def drift_metrics() -> tuple[CollectorRegistry, DriftMetrics]:
    registry = CollectorRegistry()
    return registry, DriftMetrics(registry)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def keyed(signal: str = "pass_ratio", subject: str = "helpfulness", **extra: str) -> dict[str, str]:
    return {"service": "shop", "agent": "planner", "signal": signal, "subject": subject, **extra}


def test_a_regression_exports_its_windows_effect_direction_and_since() -> None:
    registry, group = drift_metrics()
    group.publish(report(REGRESSION, BETTER, QUIET), duration=1.5)
    assert sample(registry, "agent_quality_baseline", **keyed(baseline="same_hours")) == 0.97
    assert sample(registry, "agent_quality_recent", **keyed()) == 0.89
    assert sample(registry, "agent_quality_drift", **keyed(kind="quality", direction="down")) == 0.08
    assert sample(registry, "agent_quality_drift", **keyed(kind="quality", direction="up")) == 0
    assert sample(registry, "agent_quality_drift_active", **keyed(kind="quality")) == 1
    assert sample(registry, "agent_quality_drift_since_timestamp_seconds", **keyed(kind="quality")) == 1_700_000_000
    assert sample(registry, "agent_quality_samples", **keyed(window="recent")) == 100
    assert sample(registry, "agent_quality_samples", **keyed(window="baseline")) == 1000
    assert sample(registry, "agent_monitor_drift_report_timestamp_seconds") == 1_700_003_600
    assert sample(registry, "agent_monitor_drift_report_duration_seconds") == 1.5
    assert sample(registry, "agent_monitor_drift_signals_tested") == 3
    assert sample(registry, "agent_monitor_drift_report_failures_total") == 0


def test_a_change_for_the_better_moves_but_is_not_active_and_a_quiet_signal_reads_0() -> None:
    registry, group = drift_metrics()
    group.publish(report(REGRESSION, BETTER, QUIET))
    better = keyed("error_rate", "", kind="quality")
    assert sample(registry, "agent_quality_drift", **better, direction="down") == 0.05
    assert sample(registry, "agent_quality_drift_active", **better) == 0
    assert sample(registry, "agent_quality_drift_since_timestamp_seconds", **better) == 0
    quiet = keyed("tool_share", "search", kind="behaviour")
    for direction in ("up", "down"):
        assert sample(registry, "agent_quality_drift", **quiet, direction=direction) == 0
    assert sample(registry, "agent_quality_drift_active", **quiet) == 0
    assert sample(registry, "agent_quality_baseline", **keyed("tool_share", "search", baseline="same_hours")) == 0.3


def test_a_signal_without_a_baseline_exports_its_recent_window_only() -> None:
    registry, group = drift_metrics()
    group.publish(report(state(baseline=Moments())))
    assert sample(registry, "agent_quality_recent", **keyed()) == 0.89
    assert sample(registry, "agent_quality_samples", **keyed(window="baseline")) == 0
    assert sample(registry, "agent_quality_baseline", **keyed(baseline="same_hours")) is None
    assert sample(registry, "agent_quality_drift_active", **keyed(kind="quality")) is None


def test_an_incomplete_report_or_a_failure_counts_and_keeps_the_last_good_report() -> None:
    registry, group = drift_metrics()
    assert sample(registry, "agent_monitor_drift_report_timestamp_seconds") == 0  # before any report
    group.publish(report(REGRESSION), duration=2.0)
    group.publish(report(QUIET, as_of=1_700_003_660.0, complete=False), duration=20.0)
    group.failed(duration=21.0)
    assert sample(registry, "agent_monitor_drift_report_failures_total") == 2
    assert sample(registry, "agent_monitor_drift_report_timestamp_seconds") == 1_700_003_600
    assert sample(registry, "agent_monitor_drift_report_duration_seconds") == 21.0
    assert sample(registry, "agent_quality_drift_active", **keyed(kind="quality")) == 1
    group.publish(report(QUIET, as_of=1_700_003_720.0))  # the next good report replaces it whole
    assert sample(registry, "agent_quality_drift_active", **keyed(kind="quality")) is None
    assert sample(registry, "agent_monitor_drift_report_timestamp_seconds") == 1_700_003_720


def test_label_values_are_cleaned_capped_and_never_duplicated() -> None:
    exporter = MetricsExporter(label_value_cap=1)
    drift = exporter.drift
    exporter.results.service_agent("shop", "planner")  # the result series admitted these first
    messy = state(service=" shop\x00 ", agent="", subject="a" * 300)
    other = state(service="desk", effect=-0.1, direction=Direction.DOWN, worse=True, since=5.0)
    third = state(service="garage")  # folded into __other__ with desk: the active one is kept
    drift.publish(report(messy, third, other))
    text = generate_latest(exporter.registry).decode()
    cleaned = {"service": "shop", "agent": "", "signal": "pass_ratio", "subject": "a" * 128}
    assert exporter.registry.get_sample_value("agent_quality_recent", cleaned) == 0.89
    folded = {"service": "__other__", "agent": "planner", "signal": "pass_ratio", "subject": "helpfulness"}
    assert exporter.registry.get_sample_value("agent_quality_drift_active", {**folded, "kind": "quality"}) == 1
    lines = [line for line in text.splitlines() if line.startswith("agent_quality_drift_active{")]
    assert len(lines) == len(set(lines)) == 2


def test_at_most_max_signals_are_exported_active_first() -> None:
    registry = CollectorRegistry()
    group = DriftMetrics(registry, max_signals=1)
    group.publish(report(QUIET, REGRESSION))
    assert sample(registry, "agent_quality_drift_active", **keyed(kind="quality")) == 1
    assert sample(registry, "agent_quality_recent", **keyed("tool_share", "search")) is None


def test_publishing_while_scraping_is_safe() -> None:
    registry, group = drift_metrics()
    reports = [report(*(state(subject=f"e{i}", service=f"s{j}") for i in range(20)), as_of=j) for j in range(30)]
    errors: list[BaseException] = []

    group.publish(reports[0])  # a scrape before any report has none: every scrape from here on has a whole one

    def publish() -> None:
        try:
            for r in reports[1:]:
                group.publish(r)
        except BaseException as error:  # pragma: no cover - the failure the test looks for
            errors.append(error)

    thread = threading.Thread(target=publish)
    thread.start()
    while thread.is_alive():
        text = generate_latest(registry).decode()
        assert text.count("agent_quality_drift_active{") == 20
    thread.join()
    assert not errors and sample(registry, "agent_monitor_drift_report_timestamp_seconds") == 29
