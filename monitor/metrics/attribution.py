"""`agent_eval_attribution{evaluator,service,dimension,value}`: the top factors of each evaluator whose pass-ratio
threshold is breached (monitor/explain/attribution.py), lift as the value (+Inf: the value is only seen in the
failures), at most `explain.attribution.top` (≤ 3) per (evaluator, service), so that an Alertmanager annotation can
name the top factor. A pair of values is one series: its dimensions and its values each joined by " AND ".

`publish(factors)` (the attribution job, any thread) replaces the whole set: an evaluator no longer breached loses
its series at once. `agent_monitor_attribution_failures_total` counts the explanations that failed (the last
good factors of that evaluator stay exported).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.metrics.labels import clean_label_text

LABELS = ("evaluator", "service", "dimension", "value")
Key = tuple[str, str]  # (evaluator, service) as their result series have them
Factor = tuple[str, str, float | None]  # (dimension, value, lift; None: only in the failures)


class AttributionMetrics(Collector):
    """`publish` (the attribution job) and the agent_eval_attribution family at scrape time."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.failures = Counter(
            "agent_monitor_attribution_failures",
            "Explanations of a breached evaluator that failed (its last factors stay exported).",
            registry=registry,
        )
        self._lock = threading.Lock()
        self._samples: list[tuple[list[str], float]] = []
        registry.register(self)

    def publish(self, factors: Mapping[Key, Sequence[Factor]]) -> None:
        """The factors of every breached (evaluator, service), in rank order (already cut to the top)."""
        samples = []
        seen: set[tuple[str, ...]] = set()
        for (evaluator, service), ranked in sorted(factors.items()):
            for dimension, value, lift in ranked:
                labels = [evaluator, service, clean_label_text(dimension), clean_label_text(value)]
                if tuple(labels) not in seen:  # two values alike once cleaned: the first (higher ranked) only
                    seen.add(tuple(labels))
                    samples.append((labels, math.inf if lift is None else float(lift)))
        with self._lock:
            self._samples = samples

    def failed(self) -> None:
        """One explanation failed."""
        self.failures.inc()

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("agent_eval_attribution", "", labels=LABELS)

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "agent_eval_attribution",
            "Lift of a dimension value among the failures of an evaluator whose pass-ratio threshold is breached "
            "(share among its failures / share among its passes; +Inf: only in the failures); its top factors.",
            labels=LABELS,
        )
        with self._lock:
            samples = list(self._samples)
        for labels, value in samples:
            family.add_metric(labels, value)
        yield family


__all__ = ["LABELS", "AttributionMetrics"]
