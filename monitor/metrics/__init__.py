"""Prometheus metrics: one registry, a metric group per component, exact windowed aggregates, label capping and
exposition.

The package re-exports the names `__all__` lists first; after them, `__all__` names the public modules other stages
import (the components' metric groups, the tally, labels, windows, the variant comparison). The others are internal
to the package.
"""

from monitor.metrics.exporter import MetricsExporter
from monitor.metrics.exposition import wants_openmetrics
from monitor.metrics.labels import OTHER, LabelCapper, sanitize_label_value
from monitor.metrics.results import ResultMetrics
from monitor.metrics.score_summary import QUANTILES, score_stats, sorted_quantile
from monitor.metrics.windows import WindowStore

__all__ = [
    "OTHER",
    "QUANTILES",
    "LabelCapper",
    "MetricsExporter",
    "ResultMetrics",
    "WindowStore",
    "sanitize_label_value",
    "score_stats",
    "sorted_quantile",
    "wants_openmetrics",
]
# the public modules; the others are internal to the package
__all__ += [
    "assembly", "attribution", "drift", "evaluation", "intake", "intake_log", "judges", "labels", "loop_lag",
    "pairwise", "poll", "rebuild", "recording", "results", "reviews", "score_summary", "sessions", "signatures",
    "store", "tally", "variant_compare", "windows",
]  # fmt: skip
