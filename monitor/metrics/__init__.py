"""Prometheus metrics: one registry, a metric group per component, exact windowed aggregates, label capping and
exposition."""

from monitor.metrics.exporter import MetricsExporter
from monitor.metrics.exposition import wants_openmetrics
from monitor.metrics.labels import OTHER, LabelCapper, sanitize_label_value
from monitor.metrics.results import ResultMetrics
from monitor.metrics.windows import QUANTILES, WindowStore, percentile, score_stats

__all__ = [
    "OTHER",
    "QUANTILES",
    "LabelCapper",
    "MetricsExporter",
    "ResultMetrics",
    "WindowStore",
    "percentile",
    "sanitize_label_value",
    "score_stats",
    "wants_openmetrics",
]
