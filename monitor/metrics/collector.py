"""Scrape-time collector for the windowed gauges and the in-process alert state."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .alerts import AlertRule, AlertState
from .windows import QUANTILES, WindowStore, score_stats

WINDOW_LABELS = ["evaluator", "service", "window"]
THRESHOLD_LABELS = ["evaluator", "service"]
ALERT_LABELS = ["evaluator", "service", "alert"]


def _families() -> dict[str, GaugeMetricFamily]:
    return {
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
            "agent_eval_alert_active", "1 while the in-process pass-ratio threshold is breached.", labels=ALERT_LABELS
        ),
    }


class WindowCollector(Collector):
    """Computes the windowed aggregates and alert gauges exactly, at scrape time."""

    def __init__(
        self, store: WindowStore, windows: Sequence[tuple[str, float]], thresholds: Mapping[str, AlertRule]
    ) -> None:
        self.store = store
        self.windows = list(windows)
        self.thresholds = dict(thresholds)

    def describe(self) -> Iterator[Metric]:
        yield from _families().values()

    def collect(self) -> Iterator[Metric]:
        families = _families()
        for evaluator, service in sorted(self.store.keys()):
            for label, seconds in self.windows:
                window = self.store.snapshot(evaluator, service, seconds)
                labels = [evaluator, service, label]
                if window.pass_ratio is not None:
                    families["pass_ratio"].add_metric(labels, window.pass_ratio)
                stats = score_stats(window.scores, QUANTILES)
                if stats is None:
                    continue
                families["mean"].add_metric(labels, stats.mean)
                families["stddev"].add_metric(labels, stats.stddev)
                for q, value in stats.quantiles.items():
                    families["quantile"].add_metric([*labels, str(q)], value)
        for state in self.alert_states():
            rule = self.thresholds[state.evaluator]
            families["threshold"].add_metric([state.evaluator, state.service], rule.min_pass_ratio)
            families["alert"].add_metric([state.evaluator, state.service, state.alert], 1.0 if state.active else 0.0)
        yield from families.values()

    def alert_states(self) -> list[AlertState]:
        """One state per (evaluator with a rule, service seen for it)."""
        states = []
        for evaluator, service in sorted(self.store.keys()):
            rule = self.thresholds.get(evaluator)
            if rule is None:
                continue
            window = self.store.snapshot(evaluator, service, rule.window_seconds)
            states.append(
                AlertState(evaluator, service, rule.name, rule.breached(window), window.pass_ratio, window.verdicts)
            )
        return states
