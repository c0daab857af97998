"""agent_eval_attribution (monitor/metrics/attribution.py): the published factors as series (lift the value, +Inf
for a value only in the failures, a pair's dimensions and values joined), a new publish replacing the whole set,
label text cleaned, and the failure counter."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.metrics.attribution import AttributionMetrics


def _series(registry: CollectorRegistry) -> dict[tuple, float]:
    found = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name == "agent_eval_attribution":
                labels = sample.labels
                found[(labels["evaluator"], labels["service"], labels["dimension"], labels["value"])] = sample.value
    return found


def _failures(registry: CollectorRegistry) -> float:
    return registry.get_sample_value("agent_monitor_attribution_failures_total") or 0.0


def test_the_published_factors_are_the_series_and_a_new_publish_replaces_them() -> None:
    registry = CollectorRegistry()
    metrics = AttributionMetrics(registry)
    assert _series(registry) == {}
    pair = ("model AND service.version", "gemini-2.5-pro AND 1.5", None)
    metrics.publish(
        {
            ("error_free", "shop"): [pair, ("tool", "search", 3.5)],
            ("helpfulness", "shop"): [("input.language", "es", 14.0)],
        }
    )
    assert _series(registry) == {
        ("error_free", "shop", "model AND service.version", "gemini-2.5-pro AND 1.5"): math.inf,
        ("error_free", "shop", "tool", "search"): 3.5,
        ("helpfulness", "shop", "input.language", "es"): 14.0,
    }
    metrics.publish({("helpfulness", "shop"): [("input.language", "es", 12.0)]})  # error_free recovered
    assert _series(registry) == {("helpfulness", "shop", "input.language", "es"): 12.0}
    metrics.publish({})
    assert _series(registry) == {}


def test_label_text_is_cleaned_and_two_values_alike_once_cleaned_export_the_first() -> None:
    registry = CollectorRegistry()
    metrics = AttributionMetrics(registry)
    metrics.publish(
        {("e", "s"): [("tenant.id", "acme\n", 9.0), ("tenant.id", "acme", 2.0), ("user.id", "x" * 500, 2.0)]}
    )
    series = _series(registry)
    assert series[("e", "s", "tenant.id", "acme")] == 9.0 and len(series) == 2
    assert all(len(key[3]) <= 128 for key in series)


def test_a_failure_is_counted() -> None:
    registry = CollectorRegistry()
    metrics = AttributionMetrics(registry)
    metrics.failed()
    metrics.failed()
    assert _failures(registry) == 2.0
