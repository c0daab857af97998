"""The windows and in-process alert states rebuilt at start from the stored results (monitor/metrics/rebuild.py),
on both databases: a new metrics instance rebuilt from what the store holds reports the same pass ratios, score
quantiles, means and alert states as the instance that recorded the results live, and counts nothing again."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import pytest

from monitor.alerting.thresholds import AlertRule
from monitor.config import MonitorConfig
from monitor.config.metrics import WindowRebuildConfig
from monitor.metrics import MetricsExporter
from monitor.metrics.rebuild import WindowRebuild, window_rebuild_of
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import LateResults, ResultRow, TraceOutcome
from monitor.review.sqlite_reader import SQLiteReviewReader, StoreReviewReader
from monitor.store.health import StoreUnavailable
from tests.support.backends import Backend
from tests.support.store_builders import outcome, row

WINDOWS = [("5m", 300.0), ("1h", 3600.0)]
FOR = 30.0
RULES = {
    "tool_ok": AlertRule("ToolErrors", min_pass_ratio=0.9, window_seconds=600.0, min_samples=5, for_seconds=FOR),
    "helpful": AlertRule("Unhelpful", min_pass_ratio=0.2, window_seconds=300.0, min_samples=3),
}
WINDOW_FAMILIES = (
    "agent_eval_window_samples",
    "agent_eval_pass_ratio",
    "agent_eval_score_quantile",
    "agent_eval_score_mean",
    "agent_eval_score_stddev",
    "agent_eval_threshold_ratio",
    "agent_eval_alert_active",
)


class Clock:
    """time.time(), moved on by the test (the store stamps rows with the real time)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


def _exporter(clock: Callable[[], float], label_value_cap: int = 3) -> MetricsExporter:
    return MetricsExporter(windows=WINDOWS, thresholds=RULES, clock=clock, label_value_cap=label_value_cap)


def _scored(evaluator: str, score: float, passed: bool, **kwargs: object) -> ResultRow:
    return row(evaluator, passed, **kwargs)._replace(score=score)  # type: ignore[arg-type]


def _traces() -> list[TraceOutcome]:
    """Four services (one more than the label cap), two variants, agent-level and trace-level results, scores
    spread, skips (no verdict: in no window)."""
    traces = []
    for i in range(24):
        rows = (
            row("tool_ok", i % 3 != 0),  # a third fail: below 0.9
            _scored("helpful", (i * 7 % 10) / 10, i % 4 != 1),
            row("agent_ok", i % 5 != 0, level="agent", agent=f"agent{i % 2}"),
            row("tool_ok", None, "no_data"),
        )
        service = f"svc{i % 4}"
        traces.append(outcome(f"{i:032x}", *rows, service=service, variant=("v1", "v2", "")[i % 3]))
    return traces


def _tally(written: Sequence[TraceOutcome | LateResults]) -> MetricsTally:
    tally = MetricsTally()
    for o in written:
        tally.add_results(o.service, o.trace_id, o.results, o.variant)
    return tally


def _window_samples(exporter: MetricsExporter) -> dict[tuple, float | str]:
    samples: dict[tuple, float | str] = {}
    for family in exporter.registry.collect():
        if family.name in WINDOW_FAMILIES:
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = "NaN" if math.isnan(s.value) else s.value
    return samples


def _value(exporter: MetricsExporter, name: str, **labels: str) -> float:
    value = exporter.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _record(backend: Backend, live: MetricsExporter) -> list[TraceOutcome | LateResults]:
    """The traces stored one write each (the order of their times is the order they were recorded live) and
    recorded live; then a late judge verdict on the first, a passing one (packed into its trace's row)."""
    store = backend.store()
    written: list[TraceOutcome | LateResults] = []
    for trace in _traces():
        store.write([trace])
        live.results.apply_tally(_tally([trace]))
        written.append(trace)
    late = LateResults("0" * 32, "svc0", (_scored("judge", 0.8, True),), "v1")
    store.write([late])
    live.results.apply_tally(_tally([late]))
    written.append(late)
    store.close()
    return written


def _rebuilt(backend: Backend, clock: Clock, **config: object) -> tuple[MetricsExporter, WindowRebuild]:
    exporter = _exporter(clock)
    reader = backend.reader()
    assert isinstance(reader, SQLiteReviewReader) or backend.name == "postgres"
    rebuild = WindowRebuild(
        WindowRebuildConfig(**config), exporter.results, exporter.rebuild, reader.recent_verdicts, clock=clock
    )
    rebuild.run()
    reader.close()
    return exporter, rebuild


def test_rebuilt_windows_and_alerts_equal_the_live_ones(backend: Backend) -> None:
    clock = Clock()
    live = _exporter(clock)
    written = _record(backend, live)
    assert live.results.alert_levels() == {"tool_ok": "pending", "helpful": "firing"}  # svc1 never helped
    clock.ahead = FOR + 1  # the breach has lasted `for`: firing at the next scrape
    before = _window_samples(live)
    assert before[("agent_eval_alert_active", (("alert", "ToolErrors"), ("evaluator", "tool_ok"), ("service", "svc0")))]

    rebuilt, rebuild = _rebuilt(backend, clock)
    assert rebuild.outcome == "complete"
    assert _window_samples(rebuilt) == before  # every ratio, quantile, mean, stddev and alert state, at once
    assert rebuilt.results.alert_levels() == live.results.alert_levels() == {"tool_ok": "firing", "helpful": "firing"}
    # the fourth service folded into __other__ as it was live (same keys), and counted again by neither counter
    assert any(("service", "__other__") in labels for _, labels in before)
    assert _value(live, "agent_monitor_label_overflow_total", label="service") > 0
    assert _value(rebuilt, "agent_monitor_label_overflow_total", label="service") == 0
    assert _value(rebuilt, "agent_eval_results_total", evaluator="tool_ok", level="trace", service="svc0",
                  agent="", variant="v1", outcome="fail") == 0  # fmt: skip
    verdicts = sum(1 for o in written for r in o.results if r.passed is not None)
    assert _value(rebuilt, "agent_monitor_window_rebuild_results_total") == verdicts
    assert _value(rebuilt, "agent_monitor_window_rebuilds_total", outcome="complete") == 1


def test_a_pending_breach_resumes_its_for_from_the_stored_times(backend: Backend) -> None:
    """Rebuilt before `for` has passed: pending, as live; firing once it has, measured from the stored results."""
    clock = Clock()
    live = _exporter(clock)
    _record(backend, live)
    assert live.results.alert_levels()["tool_ok"] == "pending"
    rebuilt, _ = _rebuilt(backend, clock)
    assert rebuilt.results.alert_levels()["tool_ok"] == "pending"
    clock.ahead = FOR + 1
    assert rebuilt.results.alert_levels()["tool_ok"] == live.results.alert_levels()["tool_ok"] == "firing"


def test_results_older_than_every_window_are_not_replayed(backend: Backend) -> None:
    clock = Clock()
    _record(backend, _exporter(clock))
    clock.ahead = 3600 + 600  # past the 1h window and the alert's window and `for`
    rebuilt, rebuild = _rebuilt(backend, clock)
    assert rebuild.outcome == "complete"
    assert _value(rebuilt, "agent_monitor_window_rebuild_results_total") == 0
    assert _window_samples(rebuilt) == {}


def test_a_bounded_read_keeps_the_newest_results_and_counts_it(backend: Backend) -> None:
    """The newest 10 at most, and only whole write batches: the three verdicts of each of the last three traces
    (the late judge verdict packed into the first trace's row has that trace's time)."""
    clock = Clock()
    _record(backend, _exporter(clock))
    rebuilt, rebuild = _rebuilt(backend, clock, max_results=10)
    assert rebuild.outcome == "truncated"
    assert _value(rebuilt, "agent_monitor_window_rebuilds_total", outcome="truncated") == 1
    assert _value(rebuilt, "agent_monitor_window_rebuild_results_total") == 9
    in_5m = [v for (name, labels), v in _window_samples(rebuilt).items()
             if name == "agent_eval_window_samples" and ("window", "5m") in labels]  # fmt: skip
    assert sum(in_5m) == 9
    services = {dict(labels)["service"] for (name, labels) in _window_samples(rebuilt) if "service" in dict(labels)}
    assert services == {"svc1", "svc2", "svc3"}  # traces 21, 22, 23: the newest


def test_an_unreadable_store_starts_the_windows_empty_and_counts_it(tmp_path) -> None:
    exporter = _exporter(Clock())
    reader = SQLiteReviewReader(tmp_path / "missing.db")
    rebuild = WindowRebuild(
        WindowRebuildConfig(), exporter.results, exporter.rebuild, reader.recent_verdicts, unavailable=StoreUnavailable
    )
    assert rebuild.run() == "unavailable"
    assert _value(exporter, "agent_monitor_window_rebuilds_total", outcome="unavailable") == 1
    assert _window_samples(exporter) == {}


@pytest.mark.parametrize("enabled", [True, False])
def test_without_a_store_or_when_disabled_the_rebuild_is_skipped(tmp_path, enabled: bool) -> None:
    exporter = _exporter(Clock())
    reader = SQLiteReviewReader(tmp_path / "missing.db")
    read = None if enabled else reader.recent_verdicts
    rebuild = WindowRebuild(WindowRebuildConfig(enabled=enabled), exporter.results, exporter.rebuild, read)
    assert rebuild.run() == "skipped"
    assert _value(exporter, "agent_monitor_window_rebuilds_total", outcome="skipped") == 1


def test_a_read_past_its_deadline_keeps_nothing_it_cannot_vouch_for(backend: Backend) -> None:
    """Out of time before the passing results are read: none of the failing ones are kept alone."""
    _record(backend, _exporter(Clock()))
    reader = backend.reader()
    assert isinstance(reader, StoreReviewReader)
    found = reader.recent_verdicts(time.time() - 3600, 1000, time.monotonic() - 1)
    reader.close()
    assert (found.verdicts, found.complete) == ([], False)


@pytest.mark.parametrize("store", [{"results": "failing"}, {"enabled": False}])
def test_the_daemon_skips_the_rebuild_when_the_store_cannot_give_the_ratios(tmp_path, store: dict) -> None:
    """`results: failing`: the ratios would be made of failures alone; no store: nothing to read."""
    config = MonitorConfig.model_validate({"store": {"path": str(tmp_path / "r.db"), **store}})
    exporter = _exporter(Clock())
    read = SQLiteReviewReader(tmp_path / "r.db").recent_verdicts if config.store.enabled else None
    rebuild = window_rebuild_of(config, exporter.results, exporter.rebuild, read, StoreUnavailable)
    assert rebuild.read is None and rebuild.run() == "skipped"
