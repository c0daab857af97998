"""MetricsExporter: the metric contract, windowed gauges, skips, label capping and in-process alerts."""

from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluators.traces.records import SpanRecord
from monitor.alerting.thresholds import AlertRule
from monitor.engine.assembler import TraceAssembler
from monitor.metrics import MetricsExporter
from monitor.metrics.tally import MetricsTally
from monitor.outcomes import CallFigures
from tests.support.metrics_scrape import (
    TRACE_ID,
    FakeClock,
    classic,
    observe_trace,
    result,
    result_labels,
    samples,
    scored,
    value,
)

CONTRACT: list[tuple[str, str, set[str]]] = [
    ("agent_eval_score", "histogram", {"evaluator", "level", "service", "agent", "variant"}),
    ("agent_eval_results_total", "counter", {"evaluator", "level", "service", "agent", "variant", "outcome", "source"}),
    ("agent_eval_skips_total", "counter", {"evaluator", "service", "reason"}),
    ("agent_eval_window_samples", "gauge", {"evaluator", "service", "variant", "window"}),
    ("agent_eval_pass_ratio", "gauge", {"evaluator", "service", "variant", "window"}),
    ("agent_eval_score_quantile", "gauge", {"evaluator", "service", "variant", "window", "quantile"}),
    ("agent_eval_score_mean", "gauge", {"evaluator", "service", "variant", "window"}),
    ("agent_eval_score_stddev", "gauge", {"evaluator", "service", "variant", "window"}),
    ("agent_eval_threshold_ratio", "gauge", {"evaluator", "service"}),
    ("agent_eval_alert_active", "gauge", {"evaluator", "service", "alert"}),
    ("agent_traces_total", "counter", {"service", "status"}),
    ("agent_trace_duration_seconds", "histogram", {"service"}),
    ("agent_llm_tokens_total", "counter", {"service", "agent", "model", "direction", "kind"}),
    ("agent_llm_cost_usd_total", "counter", {"service", "agent", "model", "provider"}),
    ("agent_llm_unpriced_calls_total", "counter", {"service", "model"}),
    ("agent_trace_cost_usd", "histogram", {"service"}),
    ("agent_llm_calls_total", "counter", {"service", "model", "outcome"}),
    ("agent_tool_calls_total", "counter", {"service", "tool", "status"}),
    ("agent_monitor_spans_received_total", "counter", {"receiver"}),
    ("agent_monitor_spans_refused_total", "counter", {"receiver", "reason"}),
    ("agent_monitor_requests_total", "counter", {"receiver", "code"}),
    ("agent_monitor_traces_pending", "gauge", set()),
    ("agent_monitor_spans_pending", "gauge", set()),
    ("agent_monitor_late_spans_total", "counter", set()),
    ("agent_monitor_duplicate_spans_total", "counter", set()),
    ("agent_monitor_traces_dropped_total", "counter", {"reason"}),
    ("agent_monitor_evaluation_seconds", "histogram", {"evaluator"}),
    ("agent_monitor_queue_depth", "gauge", set()),
    ("agent_monitor_label_overflow_total", "counter", {"label"}),
    ("agent_monitor_traces_evaluated_total", "counter", set()),
    ("agent_monitor_build_info", "gauge", {"version"}),
]


def test_every_contract_metric_has_its_exact_name_type_and_labels() -> None:
    m = MetricsExporter(label_value_cap=1, thresholds={"relevance": AlertRule("relevance_pass_ratio", 0.8)})
    scored(m, [0.2, 0.9])
    result(m, skipped=True, score=None, passed=None, skip_reason="no_output")
    observe_trace(m, "svc", 1.5, True, [("gpt-4o", 10, 5)], [("search", True)], TRACE_ID, [("gpt-4o", True)])
    observe_trace(m, "other", 1.0, False, [], [], TRACE_ID)  # overflows the service label
    priced = MetricsTally()
    priced.add_trace("svc", 1.0, False, TRACE_ID, [CallFigures("gpt-4o", "a", "openai", True, (1, 0, 0, 1, 0), 0.1)])
    m.results.apply_tally(priced)
    m.intake.receiver("grpc").accepted(3)
    m.intake.receiver("http").refused("throttled", 2)
    m.intake.receiver("http").request("200")
    assembler = TraceAssembler()
    m.assembly.observe(assembler)  # the assembler's figures, read at scrape time
    assembler.claim(["cd" * 16])  # evaluated: its spans are late from now on
    spans = [_span(TRACE_ID, i) for i in range(4)]
    assembler.add([*spans, spans[0], _span("cd" * 16, 9)])  # one duplicate, one late
    m.evaluation.dropped("shutdown_timeout", 1)
    m.recording.recorded(1, [0.5])
    text = classic(m)
    families = list(text_string_to_metric_families(text))
    for name, kind, labels in CONTRACT:
        assert f"# TYPE {name} {kind}\n" in text, name
        sample_name = f"{name}_count" if kind == "histogram" else name
        found = [s for f in families for s in f.samples if s.name == sample_name]
        assert found, f"no sample for {name}"
        assert all(set(s.labels) == labels for s in found), (name, [s.labels for s in found])
    assert value(m, "agent_monitor_build_info", version="0.1.0") == 1.0
    assert value(m, "agent_monitor_spans_refused_total", receiver="http", reason="throttled") == 2.0
    assert value(m, "agent_monitor_traces_pending") == 1.0 and value(m, "agent_monitor_spans_pending") == 4.0
    assert value(m, "agent_monitor_late_spans_total") == 1.0 and value(m, "agent_monitor_duplicate_spans_total") == 1.0
    assert value(m, "agent_monitor_traces_dropped_total", reason="shutdown_timeout") == 1.0


def _span(trace_id: str, index: int) -> SpanRecord:
    return SpanRecord(trace_id, f"{index + 1:016x}", "", f"s{index}", start_time_unix_nano=1, end_time_unix_nano=2)


def test_score_histogram_uses_the_configured_buckets() -> None:
    m = MetricsExporter()
    scored(m, [0.72])
    buckets = {s.labels["le"]: s.value for s in samples(m, "agent_eval_score_bucket")}
    expected = ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.75", "0.8", "0.85", "0.9", "0.95", "0.99", "1.0"]
    assert list(buckets) == [*expected, "+Inf"]
    assert buckets["0.7"] == 0.0 and buckets["0.75"] == 1.0
    custom = MetricsExporter(score_buckets=[0.5, 1.0])
    scored(custom, [0.72])
    assert [s.labels["le"] for s in samples(custom, "agent_eval_score_bucket")] == ["0.5", "1.0", "+Inf"]


def test_window_gauges_equal_hand_computed_values() -> None:
    m = MetricsExporter(clock=FakeClock())
    scored(m, [0.2, 0.4, 0.6, 0.8, 1.0])  # pass when >= 0.5: 3 of 5
    for window in ("5m", "1h"):
        labels = dict(evaluator="relevance", service="svc", window=window)
        assert value(m, "agent_eval_pass_ratio", **labels) == pytest.approx(0.6)
        assert value(m, "agent_eval_score_mean", **labels) == pytest.approx(0.6)
        assert value(m, "agent_eval_score_stddev", **labels) == pytest.approx(math.sqrt(0.08))
        quantiles = {
            q: value(m, "agent_eval_score_quantile", **labels, quantile=q) for q in ("0.05", "0.5", "0.95", "0.99")
        }
        assert quantiles == pytest.approx({"0.05": 0.24, "0.5": 0.6, "0.95": 0.96, "0.99": 0.992})


def test_samples_older_than_a_window_leave_it_but_stay_in_longer_windows() -> None:
    clock = FakeClock()
    m = MetricsExporter(clock=clock)
    scored(m, [0.1, 0.2])  # both fail
    clock.now += 301
    scored(m, [0.9])
    short = dict(evaluator="relevance", service="svc", window="5m")
    long = dict(short, window="1h")
    assert value(m, "agent_eval_pass_ratio", **short) == 1.0
    assert value(m, "agent_eval_score_mean", **short) == pytest.approx(0.9)
    assert value(m, "agent_eval_pass_ratio", **long) == pytest.approx(1 / 3)
    assert value(m, "agent_eval_score_mean", **long) == pytest.approx(0.4)
    clock.now += 301  # nothing left in 5m: its series stay, with no value (NaN)
    for name in ("agent_eval_pass_ratio", "agent_eval_score_mean", "agent_eval_score_stddev"):
        assert math.isnan(value(m, name, **short))
        assert not math.isnan(value(m, name, **long))
    assert value(m, "agent_eval_window_samples", **short) == 0
    assert value(m, "agent_eval_window_samples", **long) == 3
    clock.now += 3600
    assert all(math.isnan(s.value) for s in samples(m, "agent_eval_pass_ratio"))
    assert len(samples(m, "agent_eval_pass_ratio")) == 2


def test_configured_windows_use_their_label_text() -> None:
    clock = FakeClock()
    m = MetricsExporter(windows=[("15min", 900.0)], clock=clock)
    scored(m, [0.9])
    assert [s.labels["window"] for s in samples(m, "agent_eval_pass_ratio")] == ["15min"]
    clock.now += 901
    assert [s.labels["window"] for s in samples(m, "agent_eval_window_samples") if s.value == 0] == ["15min"]


def test_full_window_drops_the_oldest_sample() -> None:
    m = MetricsExporter(window_sample_cap=3, clock=FakeClock())
    scored(m, [0.1, 0.9, 0.8, 0.7])  # 0.1 (the only failure) drops
    labels = dict(evaluator="relevance", service="svc", window="1h")
    assert value(m, "agent_eval_pass_ratio", **labels) == 1.0
    assert value(m, "agent_eval_score_mean", **labels) == pytest.approx(0.8)
    assert value(m, "agent_eval_score_count", evaluator="relevance", level="trace", service="svc", agent="") == 4


def test_skips_count_as_results_but_stay_out_of_windows_and_histogram() -> None:
    m = MetricsExporter(clock=FakeClock())
    result(m, skipped=True, score=None, passed=None, skip_reason="no_tool_calls")
    result(m, skipped=True, score=0.4, passed=False, skip_reason="timeout")
    assert value(m, "agent_eval_results_total", **result_labels("skip")) == 2
    assert value(m, "agent_eval_results_total", **result_labels("fail")) is None
    assert value(m, "agent_eval_skips_total", evaluator="relevance", service="svc", reason="no_tool_calls") == 1
    assert value(m, "agent_eval_skips_total", evaluator="relevance", service="svc", reason="timeout") == 1
    assert samples(m, "agent_eval_score_count") == []
    assert samples(m, "agent_eval_pass_ratio") == []
    assert samples(m, "agent_eval_score_mean") == []


def test_result_without_a_verdict_counts_as_a_no_verdict_skip() -> None:
    m = MetricsExporter()
    result(m, score=0.7, passed=None)
    assert value(m, "agent_eval_results_total", **result_labels("skip")) == 1
    assert value(m, "agent_eval_skips_total", evaluator="relevance", service="svc", reason="no_verdict") == 1
    assert samples(m, "agent_eval_pass_ratio") == []


def test_outcomes_and_evaluation_seconds() -> None:
    m = MetricsExporter()
    scored(m, [0.9, 0.1, 0.2])
    result(m, score=None, passed=True)  # verdict without a score: counted, ratio only
    assert value(m, "agent_eval_results_total", **result_labels("pass")) == 2
    assert value(m, "agent_eval_results_total", **result_labels("fail")) == 2
    assert value(m, "agent_eval_score_count", evaluator="relevance", level="trace", service="svc", agent="") == 3
    labels = dict(evaluator="relevance", service="svc", window="5m")
    assert value(m, "agent_eval_pass_ratio", **labels) == 0.5
    assert value(m, "agent_eval_score_mean", **labels) == pytest.approx(0.4)
    assert value(m, "agent_monitor_evaluation_seconds_count", evaluator="relevance") == 4
    assert value(m, "agent_monitor_evaluation_seconds_sum", evaluator="relevance") == pytest.approx(0.08)


def tokens(m: MetricsExporter, service: str, model: str, kind: str) -> float | None:
    """Tokens of `kind` (input or output, neither cached nor reasoning) of calls made outside any agent."""
    return value(m, "agent_llm_tokens_total", service=service, agent="", model=model, direction=kind, kind=kind)


def test_trace_metrics() -> None:
    m = MetricsExporter()
    observe_trace(
        m, "svc", 2.0, True, [("gpt-4o", 100, 20), (None, 5, 0)], [("search", True), ("search", False)], TRACE_ID
    )
    observe_trace(m, "svc", 0.2, False, [("gpt-4o", 1, 2)], [], TRACE_ID)
    assert value(m, "agent_traces_total", service="svc", status="error") == 1
    assert value(m, "agent_traces_total", service="svc", status="ok") == 1
    assert value(m, "agent_trace_duration_seconds_count", service="svc") == 2
    assert value(m, "agent_trace_duration_seconds_sum", service="svc") == pytest.approx(2.2)
    assert tokens(m, "svc", "gpt-4o", "input") == 101
    assert tokens(m, "svc", "gpt-4o", "output") == 22
    assert tokens(m, "svc", "unknown", "input") == 5
    assert tokens(m, "svc", "unknown", "output") is None
    assert value(m, "agent_tool_calls_total", service="svc", tool="search", status="ok") == 1
    assert value(m, "agent_tool_calls_total", service="svc", tool="search", status="error") == 1


def test_label_values_are_capped_per_label() -> None:
    m = MetricsExporter(label_value_cap=2)
    for service in ("a", "b", "c"):
        observe_trace(m, service, 1.0, False, [], [], TRACE_ID)
    services = {s.labels["service"] for s in samples(m, "agent_traces_total")}
    assert services == {"a", "b", "__other__"}
    assert value(m, "agent_monitor_label_overflow_total", label="service") == 1
    result(m, service="a")  # already admitted: no overflow
    result(m, service="d", agent="x")
    assert value(m, "agent_monitor_label_overflow_total", label="service") == 2
    assert value(m, "agent_eval_results_total", **result_labels("pass", service="__other__")) == 1
    observe_trace(m, "a", 1.0, False, [("m1", 1, 1), ("m2", 1, 1), ("m3", 1, 1)], [("t1", True)], TRACE_ID)
    assert value(m, "agent_monitor_label_overflow_total", label="model") == 1
    assert tokens(m, "a", "__other__", "input") == 1
    assert value(m, "agent_tool_calls_total", service="a", tool="t1", status="ok") == 1


def test_label_values_are_sanitized() -> None:
    m = MetricsExporter()
    observe_trace(m, "pay\x00ments\n\x1b", 1.0, False, [("", 1, 0)], [("t" * 300, True)], TRACE_ID)
    assert value(m, "agent_traces_total", service="payments", status="ok") == 1
    assert tokens(m, "payments", "unknown", "input") == 1
    assert value(m, "agent_tool_calls_total", service="payments", tool="t" * 128, status="ok") == 1
    result(m, service="", agent=None)
    assert value(m, "agent_eval_score_count", evaluator="relevance", level="trace", service="unknown", agent="") == 1


def test_alert_flips_with_min_samples_and_recovers() -> None:
    clock = FakeClock()
    rule = AlertRule(name="relevance_pass_ratio", min_pass_ratio=0.8, window_seconds=600.0, min_samples=5)
    m = MetricsExporter(thresholds={"relevance": rule}, clock=clock)
    alert = dict(evaluator="relevance", service="svc", alert="relevance_pass_ratio")
    scored(m, [0.1] * 4)  # ratio 0, but only 4 samples
    assert value(m, "agent_eval_alert_active", **alert) == 0
    assert value(m, "agent_eval_threshold_ratio", evaluator="relevance", service="svc") == 0.8
    scored(m, [0.1])
    assert value(m, "agent_eval_alert_active", **alert) == 1
    [state] = m.results.alert_states()
    assert state == ("relevance", "svc", "relevance_pass_ratio", True, 0.0, 5, False)
    scored(m, [0.9] * 19)  # 19/24 < 0.8
    assert value(m, "agent_eval_alert_active", **alert) == 1
    scored(m, [0.9])  # 20/25 == 0.8: recovered
    assert value(m, "agent_eval_alert_active", **alert) == 0
    assert m.results.alert_states()[0].active is False
    clock.now += 601  # the alert window (not an exported one) empties
    assert value(m, "agent_eval_alert_active", **alert) == 0
    assert m.results.alert_states()[0].samples == 0


def test_alert_fires_only_after_staying_breached_for_its_for() -> None:
    clock = FakeClock()
    rule = AlertRule(name="r", min_pass_ratio=0.8, window_seconds=3600.0, min_samples=3, for_seconds=600.0)
    m = MetricsExporter(thresholds={"relevance": rule}, clock=clock)
    alert = dict(evaluator="relevance", service="svc", alert="r")
    scored(m, [0.1] * 3)
    assert value(m, "agent_eval_alert_active", **alert) == 0  # breached now: pending
    assert m.results.alert_states()[0].pending is True
    clock.now += 599
    assert value(m, "agent_eval_alert_active", **alert) == 0
    clock.now += 1
    assert value(m, "agent_eval_alert_active", **alert) == 1  # breached for 10m: firing
    assert m.results.alert_states()[0].pending is False
    scored(m, [0.9] * 20)  # 20/23 >= 0.8: resolved at once
    assert value(m, "agent_eval_alert_active", **alert) == 0
    scored(m, [0.1] * 10)  # breached again: the `for` starts over
    clock.now += 300
    assert value(m, "agent_eval_alert_active", **alert) == 0
    assert m.results.alert_states()[0].pending is True


def test_a_quiet_night_with_few_traces_pages_nobody() -> None:
    clock = FakeClock()
    rule = AlertRule(name="r", min_pass_ratio=0.9, window_seconds=900.0, min_samples=30, for_seconds=600.0)
    m = MetricsExporter(thresholds={"relevance": rule}, clock=clock)
    for _ in range(12):  # three failing traces an hour, all night
        scored(m, [0.0])
        clock.now += 1200
        assert value(m, "agent_eval_alert_active", evaluator="relevance", service="svc", alert="r") == 0
    assert m.results.alert_states()[0].pending is False


def test_alert_uses_its_own_window() -> None:
    clock = FakeClock()
    rule = AlertRule(name="relevance_pass_ratio", min_pass_ratio=0.5, window_seconds=60.0, min_samples=1)
    m = MetricsExporter(thresholds={"relevance": rule}, clock=clock)
    scored(m, [0.1, 0.1])
    clock.now += 61
    scored(m, [0.9])  # 5m ratio is 1/3, but the 60s alert window only sees the pass
    alert = dict(evaluator="relevance", service="svc", alert="relevance_pass_ratio")
    assert value(m, "agent_eval_alert_active", **alert) == 0
    assert value(m, "agent_eval_pass_ratio", evaluator="relevance", service="svc", window="5m") == pytest.approx(1 / 3)


def test_no_alert_series_without_a_rule() -> None:
    m = MetricsExporter()
    scored(m, [0.1] * 10)
    assert samples(m, "agent_eval_alert_active") == []
    assert samples(m, "agent_eval_threshold_ratio") == []
    assert m.results.alert_states() == []


def test_invalid_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        MetricsExporter(windows=[("5m", 300.0), ("5m", 600.0)])
    with pytest.raises(ValueError):
        MetricsExporter(window_sample_cap=0)
    with pytest.raises(ValueError):
        MetricsExporter(label_value_cap=0)
    with pytest.raises(ValueError):
        AlertRule(name="x", min_pass_ratio=1.5)


def test_drop_and_refusal_series_start_at_zero() -> None:
    """rate()/increase() only see growth after a series' first scrape: the first drop must not create it."""
    m = MetricsExporter()
    assert value(m, "agent_monitor_traces_dropped_total", reason="worker_crash") == 0
    assert value(m, "agent_monitor_spans_refused_total", receiver="grpc", reason="throttled") == 0
    assert value(m, "agent_monitor_spans_refused_total", receiver="http", reason="malformed") == 0
