"""/api/v1/evaluators' figures: config settings, window ratios summed over services, the worst alert state."""

from __future__ import annotations

from evaluators.sdk import builtin
from monitor.config.evaluators import AlertConfig, EvaluatorEntry, SloConfig
from monitor.engine.configured import ConfiguredEvaluator
from monitor.engine.evaluator_setup import thresholds_of
from monitor.metrics import MetricsExporter
from monitor.web.evaluator_info import evaluator_infos
from tests.support.metrics_scrape import observe_result


def observe(metrics: MetricsExporter, evaluator: str, service: str, passed: bool) -> None:
    observe_result(
        metrics,
        evaluator=evaluator,
        level="trace",
        service=service,
        agent=None,
        score=float(passed),
        passed=passed,
        skipped=False,
        skip_reason=None,
        trace_id="ab" * 16,
        duration_seconds=0.001,
    )


def test_windows_sum_services_and_the_alert_reports_its_worst_state() -> None:
    alert = AlertConfig(min_pass_ratio=0.9, window=3600.0, min_samples=1, **{"for": 300.0})
    entry = EvaluatorEntry(id="errors", name="error_free", threshold=0.75, sampling=0.5, alert=alert)
    entry = entry.model_copy(update={"slo": SloConfig(objective=0.99)})
    alerted = ConfiguredEvaluator(builtin("error_free").with_threshold(0.75), "errors", 0.5, entry)
    plain = ConfiguredEvaluator(builtin("error_free"), "error_free", 1.0, None)
    now = [1000.0]
    metrics = MetricsExporter(thresholds=thresholds_of([alerted, plain]), clock=lambda: now[0])

    before = evaluator_infos([alerted, plain], metrics.results)
    assert before[0].alert_state == "inactive"  # an alert without results yet
    assert [(w.window, w.samples, w.pass_ratio) for w in before[0].windows] == [("5m", 0, None), ("1h", 0, None)]

    for _ in range(3):
        observe(metrics, "errors", "checkout", False)
    observe(metrics, "errors", "search", True)
    observe(metrics, "error_free", "search", True)
    info, other = evaluator_infos([alerted, plain], metrics.results)
    assert (info.name, info.kind, info.level, info.threshold, info.sampling) == ("errors", "rule", "trace", 0.75, 0.5)
    assert (info.alert_min_pass_ratio, info.alert_window, info.slo_objective) == (0.9, 3600.0, 0.99)
    assert [(w.window, w.samples, w.pass_ratio) for w in info.windows] == [("5m", 4, 0.25), ("1h", 4, 0.25)]
    assert info.alert_state == "pending"  # checkout breached, not yet for 300s; search is fine
    assert (other.alert_state, other.alert_window, other.slo_objective) == (None, None, None)
    assert [(w.samples, w.pass_ratio) for w in other.windows] == [(1, 1.0), (1, 1.0)]

    now[0] += 301
    info = evaluator_infos([alerted], metrics.results)[0]
    assert info.alert_state == "firing"
    assert [(w.window, w.samples, w.pass_ratio) for w in info.windows] == [("5m", 0, None), ("1h", 4, 0.25)]


def test_window_figures_per_variant_beside_those_of_every_variant() -> None:
    plain = ConfiguredEvaluator(builtin("error_free"), "error_free", 1.0, None)
    metrics = MetricsExporter()
    for variant, passed in (("v1", True), ("v1", True), ("v2", False), ("", True)):
        observe_result(
            metrics,
            evaluator="error_free",
            level="trace",
            service="checkout",
            agent=None,
            score=float(passed),
            passed=passed,
            skipped=False,
            skip_reason=None,
            trace_id="ab" * 16,
            duration_seconds=0.001,
            variant=variant,
        )
    [info] = evaluator_infos([plain], metrics.results)
    assert next((w.window, w.samples, w.pass_ratio) for w in info.windows) == ("5m", 4, 0.75)
    assert set(info.variant_windows) == {"v1", "v2"}  # results without a variant are in `windows` only
    assert next((w.samples, w.pass_ratio) for w in info.variant_windows["v1"]) == (2, 1.0)
    assert next((w.samples, w.pass_ratio) for w in info.variant_windows["v2"]) == (1, 0.0)
