"""Prometheus metrics: the contract's metrics, exact windowed aggregates, label capping and exposition."""

from .alerts import AlertRule, AlertState
from .exporter import MetricsExporter
from .exposition import wants_openmetrics
from .labels import OTHER, LabelCapper, sanitize_label_value
from .windows import QUANTILES, WindowStore, percentile, score_stats

__all__ = [
    "OTHER",
    "QUANTILES",
    "AlertRule",
    "AlertState",
    "LabelCapper",
    "MetricsExporter",
    "WindowStore",
    "percentile",
    "sanitize_label_value",
    "score_stats",
    "wants_openmetrics",
]
