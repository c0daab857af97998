"""The variant label and the live comparisons (agent_eval_variant_*): their values against the significance
functions, their start-up state, the window, the label cap, and services merged per side."""

from __future__ import annotations

import math

import pytest

from evaluators.sdk.significance import mann_whitney, two_proportions
from monitor.config.variants import VariantsConfig
from monitor.metrics import MetricsExporter
from tests.support.metrics_scrape import FakeClock, result, samples, value

PAIR = dict(evaluator="error_free", baseline="1.4", candidate="1.5")


def exporter(clock: FakeClock | None = None, min_samples: int = 50, **extra: object) -> MetricsExporter:
    variants = VariantsConfig.model_validate(
        {
            "attribute": "service.version",
            "compare": [{**PAIR, "window": "1h", "min_samples": min_samples}],
        }
    )
    return MetricsExporter(clock=clock or FakeClock(), variants=variants, **extra)  # type: ignore[arg-type]


def send(m: MetricsExporter, variant: str, passed: int, failed: int, service: str = "svc", score_pass: float = 1.0):
    for i in range(passed + failed):
        ok = i < passed
        result(m, evaluator="error_free", variant=variant, service=service, passed=ok, score=score_pass if ok else 0.0)


def reason(m: MetricsExporter) -> str:
    on = [s.labels["reason"] for s in samples(m, "agent_eval_variant_verdict_reason") if s.value == 1.0]
    assert len(on) == 1
    return on[0]


def test_every_series_exists_from_start_with_no_verdict_and_the_reason() -> None:
    m = exporter()
    assert value(m, "agent_eval_variant_verdict", **PAIR) == 0
    assert reason(m) == "insufficient_samples"
    for role in ("baseline", "candidate"):
        assert value(m, "agent_eval_variant_samples", **PAIR, role=role) == 0
        assert math.isnan(value(m, "agent_eval_variant_pass_ratio", **PAIR, role=role))
    for name in ("delta", "delta_lower", "delta_upper"):
        assert math.isnan(value(m, f"agent_eval_variant_{name}", **PAIR))
    for test in ("pass_rate", "scores"):
        assert math.isnan(value(m, "agent_eval_variant_p_value", **PAIR, test=test))


def test_a_worse_candidate_gets_verdict_minus_one_with_the_tests_values() -> None:
    m = exporter()
    send(m, "1.4", 190, 10)
    send(m, "1.5", 150, 50)
    expected = two_proportions(190, 200, 150, 200)
    assert value(m, "agent_eval_variant_delta", **PAIR) == pytest.approx(expected.delta)
    assert value(m, "agent_eval_variant_delta_lower", **PAIR) == pytest.approx(expected.ci_low)
    assert value(m, "agent_eval_variant_delta_upper", **PAIR) == pytest.approx(expected.ci_high)
    assert expected.ci_low <= expected.delta <= expected.ci_high < 0
    assert value(m, "agent_eval_variant_p_value", **PAIR, test="pass_rate") == pytest.approx(expected.p_value)
    ranks = mann_whitney([1.0] * 190 + [0.0] * 10, [1.0] * 150 + [0.0] * 50)
    assert value(m, "agent_eval_variant_p_value", **PAIR, test="scores") == pytest.approx(ranks.p_value)
    assert value(m, "agent_eval_variant_samples", **PAIR, role="baseline") == 200
    assert value(m, "agent_eval_variant_pass_ratio", **PAIR, role="candidate") == pytest.approx(0.75)
    assert value(m, "agent_eval_variant_verdict", **PAIR) == -1
    assert reason(m) == "worse"


def test_a_better_candidate_gets_one_and_identical_variants_zero() -> None:
    better = exporter()
    send(better, "1.4", 150, 50)
    send(better, "1.5", 195, 5)
    assert value(better, "agent_eval_variant_verdict", **PAIR) == 1 and reason(better) == "better"
    same = exporter()
    send(same, "1.4", 180, 20)
    send(same, "1.5", 180, 20)
    assert value(same, "agent_eval_variant_verdict", **PAIR) == 0
    assert reason(same) == "no_significant_difference"
    assert value(same, "agent_eval_variant_delta", **PAIR) == 0


def test_too_few_samples_keep_verdict_zero_however_large_the_drop() -> None:
    m = exporter(min_samples=100)
    send(m, "1.4", 99, 0)
    send(m, "1.5", 0, 99)
    assert value(m, "agent_eval_variant_delta", **PAIR) == -1.0
    assert value(m, "agent_eval_variant_verdict", **PAIR) == 0
    assert reason(m) == "insufficient_samples"
    send(m, "1.4", 1, 0)
    send(m, "1.5", 0, 1)
    assert value(m, "agent_eval_variant_verdict", **PAIR) == -1


def test_a_score_drop_with_equal_pass_rates_is_caught_by_the_rank_test() -> None:
    m = exporter()
    send(m, "1.4", 200, 0, score_pass=0.95)
    send(m, "1.5", 200, 0, score_pass=0.6)
    assert value(m, "agent_eval_variant_delta", **PAIR) == 0
    assert value(m, "agent_eval_variant_p_value", **PAIR, test="pass_rate") == 1.0
    assert value(m, "agent_eval_variant_verdict", **PAIR) == -1


def test_results_leave_the_comparison_window() -> None:
    clock = FakeClock()
    m = exporter(clock)
    send(m, "1.4", 190, 10)
    send(m, "1.5", 150, 50)
    assert value(m, "agent_eval_variant_verdict", **PAIR) == -1
    clock.now += 3601
    assert value(m, "agent_eval_variant_samples", **PAIR, role="candidate") == 0
    assert value(m, "agent_eval_variant_verdict", **PAIR) == 0
    assert reason(m) == "insufficient_samples"


def test_each_side_merges_its_services_and_other_variants_stay_out() -> None:
    m = exporter()
    send(m, "1.4", 100, 0, service="a")
    send(m, "1.4", 90, 10, service="b")
    send(m, "1.5", 150, 50, service="a")
    send(m, "1.6", 0, 500, service="a")  # a third variant is in no comparison
    send(m, "", 0, 500, service="a")  # traces without the attribute neither
    assert value(m, "agent_eval_variant_samples", **PAIR, role="baseline") == 200
    assert value(m, "agent_eval_variant_samples", **PAIR, role="candidate") == 200
    assert value(m, "agent_eval_variant_pass_ratio", **PAIR, role="baseline") == pytest.approx(0.95)
    window = dict(evaluator="error_free", service="a", window="1h")
    assert value(m, "agent_eval_window_samples", **window, variant="1.6") == 500
    assert value(m, "agent_eval_window_samples", **window) == 500  # the empty variant


def test_configured_variants_are_admitted_before_the_label_cap_folds_others() -> None:
    m = exporter(label_value_cap=2)
    for other in ("0.9", "1.0", "1.1"):
        send(m, other, 1, 0)
    send(m, "1.5", 1, 0)
    variants = {s.labels["variant"] for s in samples(m, "agent_eval_results_total")}
    assert variants == {"1.5", "__other__"}
    assert value(m, "agent_monitor_label_overflow_total", label="variant") == 3
    assert value(m, "agent_eval_variant_samples", **PAIR, role="candidate") == 1


def test_the_variant_label_is_on_results_and_scores_and_empty_without_variant() -> None:
    m = exporter()
    send(m, "1.5", 1, 1)
    send(m, "", 1, 0)
    labels = dict(evaluator="error_free", level="trace", service="svc", agent="")
    assert value(m, "agent_eval_results_total", **labels, variant="1.5", outcome="fail") == 1
    assert value(m, "agent_eval_results_total", **labels, variant="", outcome="pass") == 1
    assert value(m, "agent_eval_score_count", **labels, variant="1.5") == 2
