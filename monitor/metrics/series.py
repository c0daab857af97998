"""Counter and histogram families kept in plain dicts and exposed by a collector at scrape time.

The per-result metrics are updated ~25 times per trace. prometheus_client's children take a lock and
validate on every call (a few µs each); these take one lock per batch of updates and cost a dict lookup and an
add. Exposition is the same: `_total` counters and classic `_bucket`/`_count`/`_sum` histograms, with the
last exemplar per series (per bucket for histograms), as prometheus_client does. No `_created` series.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Exemplar

LabelValues = tuple[str, ...]


def _bucket_label(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(float(bound))


class CounterSeries:
    """A counter family: `inc(labels, amount, exemplar)` with label values in `labelnames` order."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.values: dict[LabelValues, float] = {}
        self.exemplars: dict[LabelValues, Exemplar] = {}

    def inc(self, labels: LabelValues, amount: float = 1.0, exemplar: dict[str, str] | None = None) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount
        if exemplar is not None:
            self.exemplars[labels] = Exemplar(exemplar, amount, time.time())

    def value(self, labels: LabelValues) -> float:
        return self.values.get(labels, 0.0)

    def family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, value in sorted(self.values.items()):
            family.add_metric(labels, value, exemplar=self.exemplars.get(labels))
        return family


class HistogramSeries:
    """A classic histogram family with fixed bucket bounds (+Inf added)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        bounds = sorted(float(b) for b in buckets)
        if not bounds or not math.isinf(bounds[-1]):
            bounds.append(math.inf)
        self.bounds = bounds
        self.labels_of_bounds = [_bucket_label(b) for b in bounds]
        self.counts: dict[LabelValues, list[float]] = {}  # per-bucket counts (not cumulative), then the sum
        self.exemplars: dict[tuple[LabelValues, int], Exemplar] = {}

    def observe(self, labels: LabelValues, value: float, exemplar: dict[str, str] | None = None) -> None:
        counts = self.counts.get(labels)
        if counts is None:
            counts = self.counts[labels] = [0.0] * (len(self.bounds) + 1)
        index = bisect.bisect_left(self.bounds, value)
        counts[index] += 1
        counts[-1] += value
        if exemplar is not None:
            self.exemplars[(labels, index)] = Exemplar(exemplar, value, time.time())

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, counts in sorted(self.counts.items()):
            buckets: list = []
            running = 0.0
            for index, label in enumerate(self.labels_of_bounds):
                running += counts[index]
                exemplar = self.exemplars.get((labels, index))
                buckets.append((label, running, exemplar) if exemplar is not None else (label, running))
            family.add_metric(labels, buckets, counts[-1])
        return family


class SeriesCollector(Collector):
    """Exposes series families; `lock` is held by writers for a whole batch of updates and by `collect`."""

    def __init__(self, *series: CounterSeries | HistogramSeries) -> None:
        self.series = series
        self.lock = threading.Lock()

    def describe(self) -> Iterator[Metric]:
        return iter(())  # registered without a description: families are built at collection

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            families = [s.family() for s in self.series]
        yield from families
