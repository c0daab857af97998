"""A quiet hour: emptied windows keep their series (samples 0, NaN aggregates) and alerts keep their state."""

from __future__ import annotations

import math

from monitor.alerting.thresholds import AlertRule
from monitor.metrics import MetricsExporter
from tests.support.metrics_scrape import FakeClock, observe_result, samples, scored, value

WINDOW_GAUGES = ("agent_eval_pass_ratio", "agent_eval_score_mean", "agent_eval_score_stddev")
ALERT = dict(evaluator="relevance", service="svc", alert="relevance_pass_ratio")


def test_an_emptied_window_keeps_every_series_with_zero_samples_and_nan_values() -> None:
    clock = FakeClock()
    m = MetricsExporter(clock=clock)
    scored(m, [0.2, 0.9, 0.7])
    labels = dict(evaluator="relevance", service="svc", window="5m")
    assert value(m, "agent_eval_window_samples", **labels) == 3
    before = {(s.name, tuple(sorted(s.labels.items()))) for name in WINDOW_GAUGES for s in samples(m, name)}
    clock.now += 2 * 3600  # both windows empty
    for window in ("5m", "1h"):
        labels["window"] = window
        assert value(m, "agent_eval_window_samples", **labels) == 0
        for name in WINDOW_GAUGES:
            assert math.isnan(value(m, name, **labels)), (name, window)
    after = {(s.name, tuple(sorted(s.labels.items()))) for name in WINDOW_GAUGES for s in samples(m, name)}
    assert after == before
    quantiles = samples(m, "agent_eval_score_quantile")
    assert len(quantiles) == 8 and all(math.isnan(s.value) for s in quantiles)
    scored(m, [0.4])  # traffic comes back: values again
    labels["window"] = "5m"
    assert value(m, "agent_eval_window_samples", **labels) == 1
    assert value(m, "agent_eval_score_mean", **labels) == 0.4
    assert value(m, "agent_eval_pass_ratio", **labels) == 0.0


def test_window_samples_counts_verdicts_without_scores() -> None:
    m = MetricsExporter(clock=FakeClock())
    scored(m, [0.9])
    observe_result(
        m, evaluator="relevance", level="trace", service="svc", agent=None, score=None, passed=False,
        skipped=False, skip_reason=None, trace_id="", duration_seconds=0.0,
    )  # fmt: skip
    labels = dict(evaluator="relevance", service="svc", window="5m")
    assert value(m, "agent_eval_window_samples", **labels) == 2
    assert value(m, "agent_eval_pass_ratio", **labels) == 0.5
    assert value(m, "agent_eval_score_mean", **labels) == 0.9


def test_a_breached_alert_does_not_resolve_when_its_window_empties() -> None:
    clock = FakeClock()
    rule = AlertRule(name="relevance_pass_ratio", min_pass_ratio=0.8, window_seconds=600.0, min_samples=3)
    m = MetricsExporter(thresholds={"relevance": rule}, clock=clock)
    scored(m, [0.1, 0.1, 0.1])
    assert value(m, "agent_eval_alert_active", **ALERT) == 1
    clock.now += 601  # nothing left in the alert window
    assert value(m, "agent_eval_alert_active", **ALERT) == 1
    [state] = m.results.alert_states()
    assert state.active is True and state.samples == 0 and state.pass_ratio is None
    scored(m, [0.9, 0.9])  # passing, but under min_samples: still undecided, still firing
    assert value(m, "agent_eval_alert_active", **ALERT) == 1
    scored(m, [0.9])  # 3 of 3 pass: resolved on data
    assert value(m, "agent_eval_alert_active", **ALERT) == 0
    clock.now += 601
    assert value(m, "agent_eval_alert_active", **ALERT) == 0


def test_an_empty_window_does_not_decide_even_with_min_samples_zero() -> None:
    clock = FakeClock()
    rule = AlertRule(name="relevance_pass_ratio", min_pass_ratio=0.8, window_seconds=60.0, min_samples=0)
    m = MetricsExporter(thresholds={"relevance": rule}, clock=clock)
    scored(m, [0.1])
    assert value(m, "agent_eval_alert_active", **ALERT) == 1
    clock.now += 61
    assert value(m, "agent_eval_alert_active", **ALERT) == 1
