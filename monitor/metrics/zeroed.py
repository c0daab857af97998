"""Counters whose known label values exist at 0 from the start: `increase()` and `rate()` only see a counter grow
after its first scrape, so a series born at 1 would hide its first event from the dashboards and the alerts."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter


def counter_at_zero(
    name: str, documentation: str, label: str, values: Iterable[str], registry: CollectorRegistry
) -> Counter:
    """A counter with one label, a series at 0 for each of `values`."""
    counter = Counter(name, documentation, [label], registry=registry)
    for value in values:
        counter.labels(value)
    return counter
