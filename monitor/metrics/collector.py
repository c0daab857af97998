"""Scrape-time collector for the windowed gauges and the in-process alert state.

Once an (evaluator, service, variant) has recorded a result its window series stay: a window that empties reports
`agent_eval_window_samples` 0 and NaN ratio, mean, stddev and quantiles, so panels and alerts see "no data in
the window" instead of a vanished series.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.alerting.thresholds import AlertRule, AlertState, AlertTrack
from monitor.metrics.score_summary import QUANTILES, ascending_stats
from monitor.metrics.windows import WindowStore

WINDOW_LABELS = ["evaluator", "service", "variant", "window"]
THRESHOLD_LABELS = ["evaluator", "service"]
ALERT_LABELS = ["evaluator", "service", "alert"]


NAN = math.nan


def _families() -> dict[str, GaugeMetricFamily]:
    return {
        "samples": GaugeMetricFamily(
            "agent_eval_window_samples",
            "Results with a pass/fail verdict in the window (0 once the window empties).",
            labels=WINDOW_LABELS,
        ),
        "pass_ratio": GaugeMetricFamily(
            "agent_eval_pass_ratio", "Passing share of the results with a verdict in the window.", labels=WINDOW_LABELS
        ),
        "quantile": GaugeMetricFamily(
            "agent_eval_score_quantile",
            "Exact score percentile in the window (linear interpolation).",
            labels=[*WINDOW_LABELS, "quantile"],
        ),
        "mean": GaugeMetricFamily("agent_eval_score_mean", "Mean score in the window.", labels=WINDOW_LABELS),
        "stddev": GaugeMetricFamily(
            "agent_eval_score_stddev",
            "Population standard deviation of the scores in the window.",
            labels=WINDOW_LABELS,
        ),
        "threshold": GaugeMetricFamily(
            "agent_eval_threshold_ratio", "Configured minimum pass ratio.", labels=THRESHOLD_LABELS
        ),
        "alert": GaugeMetricFamily(
            "agent_eval_alert_active",
            "1 while the in-process pass-ratio threshold has been breached for `for`; kept while the window has "
            "under min_samples.",
            labels=ALERT_LABELS,
        ),
    }


class WindowCollector(Collector):
    """Computes the windowed aggregates and alert gauges exactly, at scrape time."""

    def __init__(
        self,
        store: WindowStore,
        windows: Sequence[tuple[str, float]],
        thresholds: Mapping[str, AlertRule],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.windows = list(windows)
        self.thresholds = dict(thresholds)
        self._clock = clock
        self._alerts: dict[tuple[str, str], AlertTrack] = {}
        self._alerts_lock = threading.Lock()

    def describe(self) -> Iterator[Metric]:
        yield from _families().values()

    def collect(self) -> Iterator[Metric]:
        families = _families()
        for evaluator, service, variant in sorted(self.store.keys()):
            for label, seconds in self.windows:
                window = self.store.snapshot(evaluator, service, seconds, variant, ordered=True)
                labels = [evaluator, service, variant, label]
                families["samples"].add_metric(labels, window.verdicts)
                ratio = window.pass_ratio
                families["pass_ratio"].add_metric(labels, NAN if ratio is None else ratio)
                stats = ascending_stats(window.scores, QUANTILES)  # ordered: one window, ascending
                families["mean"].add_metric(labels, NAN if stats is None else stats.mean)
                families["stddev"].add_metric(labels, NAN if stats is None else stats.stddev)
                for q in QUANTILES:
                    families["quantile"].add_metric([*labels, str(q)], NAN if stats is None else stats.quantiles[q])
        for state in self.alert_states():
            rule = self.thresholds[state.evaluator]
            families["threshold"].add_metric([state.evaluator, state.service], rule.min_pass_ratio)
            families["alert"].add_metric([state.evaluator, state.service, state.alert], 1.0 if state.active else 0.0)
        yield from families.values()

    def window_totals(self, evaluator: str) -> list[tuple[str, int, int]]:
        """(window label, passed, verdicts) of `evaluator` in each exported window, summed over its services and
        variants."""
        keys = [seen for seen in self.store.keys() if seen[0] == evaluator]  # noqa: SIM118 (a method, not a dict)
        totals = []
        for label, seconds in self.windows:
            window = self.store.merged(keys, seconds)
            totals.append((label, window.passed, window.verdicts))
        return totals

    def window_totals_by_variant(self, evaluator: str) -> dict[str, list[tuple[str, int, int]]]:
        """`window_totals` of each variant (the `variant` label) `evaluator` has results of; "" (none) left out."""
        by_variant: dict[str, list[tuple[str, str, str]]] = {}
        for seen in self.store.keys():  # noqa: SIM118 (a method, not a dict)
            if seen[0] == evaluator and seen[2]:
                by_variant.setdefault(seen[2], []).append(seen)
        totals: dict[str, list[tuple[str, int, int]]] = {}
        for variant, keys in sorted(by_variant.items()):
            windows = [(label, self.store.merged(keys, seconds)) for label, seconds in self.windows]
            totals[variant] = [(label, window.passed, window.verdicts) for label, window in windows]
        return totals

    def alert_states(self) -> list[AlertState]:
        """One state per (evaluator with a rule, service seen for it), over every variant.

        A window with fewer than `min_samples` verdicts (or none) does not decide: the alert keeps its last
        state (inactive at first), so it never resolves for lack of data. A breach fires once it has lasted
        the rule's `for`, measured between calls (scrapes), as Prometheus measures it between evaluations.
        """
        states = []
        now = self._clock()
        by_service: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        for seen in sorted(self.store.keys()):
            if seen[0] in self.thresholds:
                by_service.setdefault((seen[0], seen[1]), []).append(seen)
        for (evaluator, service), keys in by_service.items():
            rule = self.thresholds[evaluator]
            window = self.store.counts(keys, rule.window_seconds)
            key = (evaluator, service)
            with self._alerts_lock:
                track = self._alerts.setdefault(key, AlertTrack())
                track.update(rule, window, now)
                active, pending = track.active, track.pending
            states.append(
                AlertState(evaluator, service, rule.name, active, window.pass_ratio, window.verdicts, pending)
            )
        return states
