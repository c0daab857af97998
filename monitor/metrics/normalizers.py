"""The convention normalizers' metric, `agent_monitor_normalizer_errors_total{convention}`: normalizer calls that
raised (the SDK counts them per convention where traces are read, the tallies bring them here). Label values are
the conventions' names, a fixed set (no cap needed)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter

from evaluators.traces.conventions import CONVENTIONS
from monitor.metrics.labels import sanitize_label_value


class NormalizerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.errors = Counter(
            "agent_monitor_normalizer_errors",
            "Convention normalizer calls that raised (the span's facet was read from the next convention).",
            ["convention"],
            registry=registry,
        )
        for convention in CONVENTIONS:  # at 0 from the start, so that increase() sees the first error
            self.errors.labels(convention=convention.name)

    def add(self, errors: Mapping[str, int]) -> None:
        """Count a tally's normalizer errors, per convention name."""
        for convention, count in errors.items():
            if count > 0:
                self.errors.labels(convention=sanitize_label_value(convention)).inc(count)
